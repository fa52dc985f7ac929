// repeatable: writes that `mongotape replay --repeat` applies again (tests/replay_repeat.rs).
// Mirrors pymongo/repeatable.py: inserts without an explicit _id (acknowledged, w:0, one insertMany),
// $push through an upsert (acknowledged, w:0), $inc of an upserted counter, updateMany, deleteMany.
'use strict';

const { W0, Workload, runMain } = require('./common');

runMain(async () => {
  const wl = new Workload('repeatable');
  const n = wl.scaled(100, 4);
  const m = wl.scaled(50);
  const k = wl.scaled(20);
  const docs = wl.db.collection('docs');
  const blogs = wl.db.collection('blogs');
  const comments = async () => (await blogs.findOne({ _id: 'blog' })).comments.length;
  await wl.dropDatabase();

  // The driver adds an ObjectId _id to each document; the loops pass fresh objects each time.
  let t = await wl.start('insert_ack');
  for (let i = 0; i < n; i++) await docs.insertOne({ kind: 'ack', i });
  wl.emit('insert_ack', n, wl.since(t), { count: await wl.count('docs', { kind: 'ack' }) });

  t = await wl.start('insert_w0');
  for (let i = 0; i < n; i++) await docs.insertOne({ kind: 'w0', i }, { writeConcern: W0 });
  const count = await wl.count('docs', { kind: 'w0' });
  wl.emit('insert_w0', n + 1, wl.since(t), { count });

  t = await wl.start('insert_many');
  const many = [];
  for (let i = 0; i < m; i++) many.push({ kind: 'many', i });
  await docs.insertMany(many);
  wl.emit('insert_many', 1, wl.since(t), { count: await wl.count('docs', { kind: 'many' }) });

  t = await wl.start('push_ack');
  for (let j = 0; j < k; j++) {
    await blogs.updateOne({ _id: 'blog' }, { $push: { comments: { who: 'user-' + j } } }, { upsert: true });
  }
  let seconds = wl.since(t);
  wl.emit('push_ack', k, seconds, { comments: await comments() });

  t = await wl.start('push_w0');
  for (let j = 0; j < k; j++) {
    await blogs.updateOne({ _id: 'blog' }, { $push: { comments: { who: 'user-' + j } } }, { upsert: true, writeConcern: W0 });
  }
  const pushed = await comments();
  wl.emit('push_w0', k + 1, wl.since(t), { comments: pushed });

  t = await wl.start('inc');
  for (let j = 0; j < k; j++) await blogs.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { upsert: true });
  seconds = wl.since(t);
  wl.emit('inc', k, seconds, { n: (await blogs.findOne({ _id: 'counter' })).n });

  t = await wl.start('update_many');
  let r = await docs.updateMany({ kind: 'ack' }, { $inc: { touched: 1 } });
  wl.emit('update_many', 1, wl.since(t), { matched: r.matchedCount, modified: r.modifiedCount });

  t = await wl.start('delete_many');
  r = await docs.deleteMany({ kind: 'w0', i: { $lt: Math.floor(n / 4) } });
  wl.emit('delete_many', 1, wl.since(t), { deleted: r.deletedCount });
  await wl.end();
});
