// writeconcern (seed 002): inserts with w:0, w:1 and {w:1, j:true}, then with three secondary indexes.
// Mirrors pymongo/writeconcern.py.

const TIME = new Date('2017-03-28T09:35:05.779Z');

function activity(i) {
  return {
    _id: i,
    Aid: '56aacfd4d4307006200d0bac',
    Cid: 111,
    At: '56aacfd4d4307006200d0bac',
    Time: TIME,
    EvtN: null,
    Evt: null,
    As: 0,
    Mis: {
      Mid: 'e3196ec3-b624-4b11-a5e7-df7c4400ba75',
      Mt: 'asdf',
      Ms: 1,
      Filter: [{ Fs: true, Exp: 'Evt.Amount>0', Pro: 'GetInfo' }],
      Rew: [{ Rid: '123', Ra: '', Rs: 0 }],
    },
  };
}

function inserts(wl, step, collection, wc, n) {
  const coll = wl.db.getCollection(collection);
  const t = wl.start(step);
  for (let i = 0; i < n; i++) coll.insertOne(activity(i), { writeConcern: wc });
  let ops = n;
  if (wc === W0) {
    wl.count(collection); // barrier: all w:0 inserts have been applied
    ops += 1;
  }
  const seconds = wl.since(t);
  const last = coll.findOne({ _id: n - 1 }, { Time: 0 });
  wl.emit(step, ops, seconds, { count: wl.count(collection), last });
}

runMain(function main() {
  const wl = new Workload('writeconcern');
  const n = wl.scaled(5000);
  wl.dropDatabase();
  inserts(wl, 'insert_w0', 'wc_w0', W0, n);
  inserts(wl, 'insert_w1', 'wc_w1', W1, n);
  inserts(wl, 'insert_j', 'wc_j', J1, n);

  const t = wl.start('create_indexes');
  const coll = wl.db.getCollection('wc_indexed');
  const names = [];
  for (const key of ['Aid', 'Cid', 'Mis.Mid']) names.push(coll.createIndex({ [key]: 1 }));
  wl.emit('create_indexes', 3, wl.since(t), names.sort());
  inserts(wl, 'insert_w1_indexed', 'wc_indexed', W1, n);
  wl.end();
});
