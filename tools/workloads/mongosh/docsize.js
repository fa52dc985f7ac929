// docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one.
// Mirrors pymongo/docsize.py.

const LOREM = require('fs').readFileSync(WL_DIR + '/../data/lorem.txt', 'utf8').trim();

function member(i, large) {
  const doc = { _id: i, uname: 'chuchuchu_' + i, name: '\u891a\u891a\u891a',
    password: 'e10adc3949ba59abbe56e057f20f883e', email: '[e-mail]' };
  if (large) doc.description = LOREM;
  return doc;
}

function sizes(wl, collection) {
  const res = wl.db.getCollection(collection).aggregate([
    { $group: { _id: null, count: { $sum: 1 }, bytes: { $sum: { $bsonSize: '$$ROOT' } },
                max: { $max: { $bsonSize: '$$ROOT' } } } }]).toArray();
  return { count: res[0].count, bytes: res[0].bytes, max_bytes: res[0].max };
}

runMain(function main() {
  const wl = new Workload('docsize');
  const n = wl.scaled(10000);
  wl.dropDatabase();
  for (const [step, collection, large] of [['insert_small', 'members', false], ['insert_large', 'members_large', true]]) {
    const coll = wl.db.getCollection(collection);
    const t = wl.start(step);
    for (let i = 0; i < n; i++) coll.insertOne(member(i, large));
    const seconds = wl.since(t);
    wl.emit(step, n, seconds, sizes(wl, collection));
  }
  wl.end();
});
