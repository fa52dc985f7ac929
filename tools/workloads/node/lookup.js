// lookup (seed 004): string _ids, random lookups by author (no index, then indexed), remove all.
// Mirrors pymongo/lookup.py (with its `views` step under MONGOTAPE_WORKLOAD_TALLY=1).
'use strict';

const { Lcg, Workload, runMain } = require('./common');

const EPOCH_MS = Date.UTC(2013, 0, 1);
const SEED = 5000000;

async function lookups(wl, step, n, m) {
  const posts = wl.db.collection('userinfo');
  const rng = new Lcg(SEED);
  let found = 0;
  let last = null;
  const t = await wl.start(step);
  for (let k = 0; k < m; k++) {
    const x = 1 + rng.below(n);
    const doc = await wl.attempt(() => posts.findOne({ author: x + 'Mike' }, { projection: { date: 0 } }));
    if (doc !== null) {
      found++;
      last = doc;
    }
  }
  wl.emit(step, m, wl.since(t), { lookups: m, found, last });
}

runMain(async () => {
  const wl = new Workload('lookup');
  const n = wl.scaled(10000, 2);
  const m = wl.scaled(2000, 10);
  await wl.dropDatabase();
  const posts = wl.db.collection('userinfo');

  let t = await wl.start('insert');
  for (let x = 0; x < n; x++) {
    const doc = { _id: String(x), author: x + 'Mike', text: 'My first blog post!',
      tags: ['mongodb', 'python', 'pymongo'], date: new Date(EPOCH_MS + x * 1000) };
    await wl.attempt(() => posts.insertOne(doc));
  }
  wl.emit('insert', n, wl.since(t), { count: await wl.count('userinfo') });

  await lookups(wl, 'lookup_noindex', n, Math.floor(m / 10));

  t = await wl.start('create_index');
  const name = await posts.createIndex({ author: 1 });
  wl.emit('create_index', 1, wl.since(t), name);

  await lookups(wl, 'lookup_index', n, m);

  if (wl.tally !== null) {
    const v = wl.scaled(1000, 10);
    const counters = wl.db.collection('counters');
    t = await wl.start('views');
    for (let k = 0; k < v; k++) {
      await wl.attempt(() => counters.updateOne({ _id: 'views' }, { $inc: { n: 1 } }, { upsert: true }));
    }
    const seconds = wl.since(t);
    const counter = await counters.findOne({ _id: 'views' });
    wl.emit('views', v, seconds, { n: counter === null ? 0 : counter.n });
  }

  t = await wl.start('remove_all');
  const before = await wl.count('userinfo');
  const r = await posts.deleteMany({});
  const after = await wl.count('userinfo');
  wl.emit('remove_all', 3, wl.since(t), { before, deleted: r.deletedCount, after });
  await wl.end();
});
