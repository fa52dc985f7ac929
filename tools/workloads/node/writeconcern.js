// writeconcern (seed 002): inserts with w:0, w:1 and {w:1, j:true}, then with three secondary indexes.
// Mirrors pymongo/writeconcern.py.
'use strict';

const { W0, W1, J1, Workload, runMain } = require('./common');

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

async function inserts(wl, step, collection, wc, n) {
  const coll = wl.db.collection(collection, { writeConcern: wc });
  const t = await wl.start(step);
  for (let i = 0; i < n; i++) await coll.insertOne(activity(i));
  let ops = n;
  if (wc === W0) {
    await wl.count(collection); // barrier: all w:0 inserts have been applied
    ops += 1;
  }
  const seconds = wl.since(t);
  const last = await wl.db.collection(collection).findOne({ _id: n - 1 }, { projection: { Time: 0 } });
  wl.emit(step, ops, seconds, { count: await wl.count(collection), last });
}

runMain(async () => {
  const wl = new Workload('writeconcern');
  const n = wl.scaled(5000);
  await wl.dropDatabase();
  await inserts(wl, 'insert_w0', 'wc_w0', W0, n);
  await inserts(wl, 'insert_w1', 'wc_w1', W1, n);
  await inserts(wl, 'insert_j', 'wc_j', J1, n);

  const t = await wl.start('create_indexes');
  const coll = wl.db.collection('wc_indexed');
  const names = [];
  for (const key of ['Aid', 'Cid', 'Mis.Mid']) names.push(await coll.createIndex({ [key]: 1 }));
  wl.emit('create_indexes', 3, wl.since(t), names.sort());
  await inserts(wl, 'insert_w1_indexed', 'wc_indexed', W1, n);
  await wl.end();
});
