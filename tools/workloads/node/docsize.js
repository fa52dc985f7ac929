// docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one.
// Mirrors pymongo/docsize.py.
'use strict';

const fs = require('fs');
const { WL_DIR, Workload, runMain } = require('./common');

const LOREM = fs.readFileSync(WL_DIR + '/../data/lorem.txt', 'utf8').trim();

function member(i, large) {
  const doc = { _id: i, uname: 'chuchuchu_' + i, name: '\u891a\u891a\u891a',
    password: 'e10adc3949ba59abbe56e057f20f883e', email: '[e-mail]' };
  if (large) doc.description = LOREM;
  return doc;
}

async function sizes(wl, collection) {
  const res = await wl.db.collection(collection).aggregate([
    { $group: { _id: null, count: { $sum: 1 }, bytes: { $sum: { $bsonSize: '$$ROOT' } },
                max: { $max: { $bsonSize: '$$ROOT' } } } }]).toArray();
  return { count: res[0].count, bytes: res[0].bytes, max_bytes: res[0].max };
}

runMain(async () => {
  const wl = new Workload('docsize');
  const n = wl.scaled(10000);
  await wl.dropDatabase();
  for (const [step, collection, large] of [['insert_small', 'members', false], ['insert_large', 'members_large', true]]) {
    const coll = wl.db.collection(collection);
    const t = await wl.start(step);
    for (let i = 0; i < n; i++) await coll.insertOne(member(i, large));
    const seconds = wl.since(t);
    wl.emit(step, n, seconds, await sizes(wl, collection));
  }
  await wl.end();
});
