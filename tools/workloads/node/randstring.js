// randstring (seed 003): random 26-letter strings, insert / find / delete one / delete all,
// without and then with an index on the field. Mirrors pymongo/randstring.py.
'use strict';

const { Lcg, Workload, runMain } = require('./common');

const SEED = 20110725;

async function runPass(wl, suffix, n) {
  const users = wl.db.collection('users');
  const rng = new Lcg(SEED);
  let last = null;
  let t = await wl.start('insert_' + suffix);
  for (let i = 0; i < n; i++) {
    last = rng.letters(26);
    await users.insertOne({ _id: i, NewsId: last });
  }
  wl.emit('insert_' + suffix, n, wl.since(t), { count: await wl.count('users') });

  t = await wl.start('find_' + suffix);
  const docs = await users.find({ NewsId: last }).toArray();
  wl.emit('find_' + suffix, 1, wl.since(t), docs);

  t = await wl.start('delete_one_' + suffix);
  let r = await users.deleteOne({ NewsId: last });
  wl.emit('delete_one_' + suffix, 1, wl.since(t), { deleted: r.deletedCount });

  t = await wl.start('delete_all_' + suffix);
  r = await users.deleteMany({});
  wl.emit('delete_all_' + suffix, 1, wl.since(t), { deleted: r.deletedCount });
}

runMain(async () => {
  const wl = new Workload('randstring');
  const n = wl.scaled(10000, 2);
  await wl.dropDatabase();
  await runPass(wl, 'noindex', n);

  const t = await wl.start('create_index');
  const name = await wl.db.collection('users').createIndex({ NewsId: 1 });
  wl.emit('create_index', 1, wl.since(t), name);
  await runPass(wl, 'index', n);
  await wl.end();
});
