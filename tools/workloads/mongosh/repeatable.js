// repeatable: writes that `mongotape replay --repeat` applies again (tests/replay_repeat.rs).
// Mirrors pymongo/repeatable.py: inserts without an explicit _id (acknowledged, w:0, one insertMany),
// $push through an upsert (acknowledged, w:0), $inc of an upserted counter, updateMany, deleteMany.

runMain(function main() {
  const wl = new Workload('repeatable');
  const n = wl.scaled(100, 4);
  const m = wl.scaled(50);
  const k = wl.scaled(20);
  const docs = wl.db.getCollection('docs');
  const blogs = wl.db.getCollection('blogs');
  const comments = () => blogs.findOne({ _id: 'blog' }).comments.length;
  wl.dropDatabase();

  let t = wl.start('insert_ack');
  for (let i = 0; i < n; i++) docs.insertOne({ kind: 'ack', i });
  wl.emit('insert_ack', n, wl.since(t), { count: wl.count('docs', { kind: 'ack' }) });

  t = wl.start('insert_w0');
  for (let i = 0; i < n; i++) docs.insertOne({ kind: 'w0', i }, { writeConcern: W0 });
  const count = wl.count('docs', { kind: 'w0' });
  wl.emit('insert_w0', n + 1, wl.since(t), { count });

  t = wl.start('insert_many');
  const many = [];
  for (let i = 0; i < m; i++) many.push({ kind: 'many', i });
  docs.insertMany(many);
  wl.emit('insert_many', 1, wl.since(t), { count: wl.count('docs', { kind: 'many' }) });

  t = wl.start('push_ack');
  for (let j = 0; j < k; j++) {
    blogs.updateOne({ _id: 'blog' }, { $push: { comments: { who: 'user-' + j } } }, { upsert: true });
  }
  let seconds = wl.since(t);
  wl.emit('push_ack', k, seconds, { comments: comments() });

  t = wl.start('push_w0');
  for (let j = 0; j < k; j++) {
    blogs.updateOne({ _id: 'blog' }, { $push: { comments: { who: 'user-' + j } } }, { upsert: true, writeConcern: W0 });
  }
  const pushed = comments();
  wl.emit('push_w0', k + 1, wl.since(t), { comments: pushed });

  t = wl.start('inc');
  for (let j = 0; j < k; j++) blogs.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { upsert: true });
  seconds = wl.since(t);
  wl.emit('inc', k, seconds, { n: blogs.findOne({ _id: 'counter' }).n });

  t = wl.start('update_many');
  let r = docs.updateMany({ kind: 'ack' }, { $inc: { touched: 1 } });
  wl.emit('update_many', 1, wl.since(t), { matched: r.matchedCount, modified: r.modifiedCount });

  t = wl.start('delete_many');
  r = docs.deleteMany({ kind: 'w0', i: { $lt: Math.floor(n / 4) } });
  wl.emit('delete_many', 1, wl.since(t), { deleted: r.deletedCount });
  wl.end();
});
