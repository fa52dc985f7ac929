// randstring (seed 003): random 26-letter strings, insert / find / delete one / delete all,
// without and then with an index on the field. Mirrors pymongo/randstring.py.

const SEED = 20110725;

function runPass(wl, suffix, n) {
  const users = wl.db.getCollection('users');
  const rng = new Lcg(SEED);
  let last = null;
  let t = wl.start('insert_' + suffix);
  for (let i = 0; i < n; i++) {
    last = rng.letters(26);
    users.insertOne({ _id: i, NewsId: last });
  }
  wl.emit('insert_' + suffix, n, wl.since(t), { count: wl.count('users') });

  t = wl.start('find_' + suffix);
  const docs = users.find({ NewsId: last }).toArray();
  wl.emit('find_' + suffix, 1, wl.since(t), docs);

  t = wl.start('delete_one_' + suffix);
  let r = users.deleteOne({ NewsId: last });
  wl.emit('delete_one_' + suffix, 1, wl.since(t), { deleted: r.deletedCount });

  t = wl.start('delete_all_' + suffix);
  r = users.deleteMany({});
  wl.emit('delete_all_' + suffix, 1, wl.since(t), { deleted: r.deletedCount });
}

runMain(function main() {
  const wl = new Workload('randstring');
  const n = wl.scaled(10000, 2);
  wl.dropDatabase();
  runPass(wl, 'noindex', n);

  const t = wl.start('create_index');
  const name = wl.db.getCollection('users').createIndex({ NewsId: 1 });
  wl.emit('create_index', 1, wl.since(t), name);
  runPass(wl, 'index', n);
  wl.end();
});
