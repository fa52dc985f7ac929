// inserts: the replay benchmark's workload (tools/bench-replay). Mirrors pymongo/inserts.py:
// N = 20000 * scale acknowledged insertOne of {_id: i, name: 'item-<i>', value: (i * 7) % 13, pad: 94 x 'x'}.

runMain(function main() {
  const wl = new Workload('inserts');
  const n = wl.scaled(20000);
  const items = wl.db.getCollection('items');
  const pad = 'x'.repeat(94);
  wl.dropDatabase();
  const t = wl.start('insert');
  for (let i = 0; i < n; i++) items.insertOne({ _id: i, name: 'item-' + i, value: (i * 7) % 13, pad });
  const seconds = wl.since(t);
  wl.emit('insert', n, seconds, { count: wl.count('items') });
  wl.end();
});
