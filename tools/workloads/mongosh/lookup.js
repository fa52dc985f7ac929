// lookup (seed 004): string _ids, random lookups by author (no index, then indexed), remove all.
// Mirrors pymongo/lookup.py (with its `views` step under MONGOTAPE_WORKLOAD_TALLY=1).

const EPOCH_MS = Date.UTC(2013, 0, 1);
const SEED = 5000000;

function lookups(wl, step, n, m) {
  const posts = wl.db.getCollection('userinfo');
  const rng = new Lcg(SEED);
  let found = 0;
  let last = null;
  const t = wl.start(step);
  for (let k = 0; k < m; k++) {
    const x = 1 + rng.below(n);
    const doc = wl.attempt(() => posts.findOne({ author: x + 'Mike' }, { date: 0 }));
    if (doc !== null) {
      found++;
      last = doc;
    }
  }
  wl.emit(step, m, wl.since(t), { lookups: m, found, last });
}

runMain(function main() {
  const wl = new Workload('lookup');
  const n = wl.scaled(10000, 2);
  const m = wl.scaled(2000, 10);
  wl.dropDatabase();
  const posts = wl.db.getCollection('userinfo');

  let t = wl.start('insert');
  for (let x = 0; x < n; x++) {
    const doc = { _id: String(x), author: x + 'Mike', text: 'My first blog post!',
      tags: ['mongodb', 'python', 'pymongo'], date: new Date(EPOCH_MS + x * 1000) };
    wl.attempt(() => posts.insertOne(doc));
  }
  wl.emit('insert', n, wl.since(t), { count: wl.count('userinfo') });

  lookups(wl, 'lookup_noindex', n, Math.floor(m / 10));

  t = wl.start('create_index');
  const name = posts.createIndex({ author: 1 });
  wl.emit('create_index', 1, wl.since(t), name);

  lookups(wl, 'lookup_index', n, m);

  if (wl.tally !== null) {
    const v = wl.scaled(1000, 10);
    const counters = wl.db.getCollection('counters');
    t = wl.start('views');
    for (let k = 0; k < v; k++) {
      wl.attempt(() => counters.updateOne({ _id: 'views' }, { $inc: { n: 1 } }, { upsert: true }));
    }
    const seconds = wl.since(t);
    const counter = counters.findOne({ _id: 'views' });
    wl.emit('views', v, seconds, { n: counter === null ? 0 : counter.n });
  }

  t = wl.start('remove_all');
  const before = wl.count('userinfo');
  const r = posts.deleteMany({});
  const after = wl.count('userinfo');
  wl.emit('remove_all', 3, wl.since(t), { before, deleted: r.deletedCount, after });
  wl.end();
});
