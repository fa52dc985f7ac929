// basic: a small mixed workload touching every common operation (~400 ops).
// Mirrors pymongo/basic.py; --scale is ignored.

function item(i, kind) {
  return { _id: i, kind, group: i % 5, name: 'item-' + i, value: (i * 7) % 13 };
}

runMain(function main() {
  const wl = new Workload('basic');
  const items = wl.db.getCollection('items');
  const blogs = wl.db.getCollection('blogs');
  wl.dropDatabase();

  let t = wl.start('insert_ack');
  let n = 0;
  for (let i = 0; i < 50; i++) {
    if (items.insertOne(item(i, 'ack')).acknowledged) n++;
  }
  wl.emit('insert_ack', 50, wl.since(t), { inserted: n });

  t = wl.start('insert_w0');
  for (let i = 50; i < 100; i++) items.insertOne(item(i, 'w0'), { writeConcern: W0 });
  const count = wl.count('items', { kind: 'w0' });
  wl.emit('insert_w0', 51, wl.since(t), { count });

  t = wl.start('push_ack');
  blogs.insertOne({ _id: 1, title: 'No Free Lunch', author: 'Alex', comments: [] });
  let matched = 0;
  let modified = 0;
  for (let k = 0; k < 20; k++) {
    const r = blogs.updateOne({ _id: 1 }, { $push: { comments: { who: 'user-' + k, comment: 'comment ' + k } } });
    matched += r.matchedCount;
    modified += r.modifiedCount;
  }
  wl.emit('push_ack', 21, wl.since(t), { matched, modified });

  t = wl.start('push_w0');
  for (let k = 20; k < 40; k++) {
    blogs.updateOne({ _id: 1 }, { $push: { comments: { who: 'user-' + k, comment: 'comment ' + k } } },
      { writeConcern: W0 });
  }
  const blog = blogs.findOne({ _id: 1 });
  wl.emit('push_w0', 21, wl.since(t), { comments: blog.comments.length, last: blog.comments[blog.comments.length - 1] });

  t = wl.start('find_noindex');
  let docs = items.find({ name: 'item-42' }).toArray();
  wl.emit('find_noindex', 1, wl.since(t), docs);

  t = wl.start('create_index');
  const name = items.createIndex({ name: 1 });
  wl.emit('create_index', 1, wl.since(t), name);

  t = wl.start('find_index');
  docs = items.find({ name: 'item-42' }).toArray();
  wl.emit('find_index', 1, wl.since(t), docs);

  t = wl.start('find_batches');
  const ids = items.find({}).sort({ _id: 1 }).batchSize(10).toArray().map((d) => d._id);
  wl.emit('find_batches', 1, wl.since(t), { ids });

  t = wl.start('update_many');
  let r = items.updateMany({ group: 3 }, { $set: { flag: true } });
  wl.emit('update_many', 1, wl.since(t), { matched: r.matchedCount, modified: r.modifiedCount });

  t = wl.start('delete_one');
  r = items.deleteOne({ _id: 7 });
  wl.emit('delete_one', 1, wl.since(t), { deleted: r.deletedCount });

  t = wl.start('delete_many');
  r = items.deleteMany({ kind: 'w0', group: 1 });
  wl.emit('delete_many', 1, wl.since(t), { deleted: r.deletedCount });

  t = wl.start('counts');
  const names = wl.db.getCollectionNames().slice().sort();
  const counts = {};
  for (const c of names) counts[c] = wl.count(c);
  wl.emit('counts', 1 + names.length, wl.since(t), counts);
  wl.end();
});
