// embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own collection.
// Mirrors pymongo/embedded.py (see there for the prefill rule: only the last min(P, 100) comments of a
// blog are written one by one).
'use strict';

const { W0, W1, Workload, runMain } = require('./common');

const PER_BLOG = [1, 10, 100, 1000, 10000];
const PUSH_CAP = 100;
const COMMENT = 'a'.repeat(1000);

async function writeEmbedded(coll, wc, blogs, perBlog, pushed) {
  let ops = 0;
  for (let c = 0; c < blogs; c++) {
    const blog = { _id: c, title: 'Mongodb Benchmark' };
    if (perBlog > pushed) {
      blog.comments = [];
      for (let i = 0; i < perBlog - pushed; i++) blog.comments.push({ comment: COMMENT });
    }
    await coll.insertOne(blog, { writeConcern: wc });
    for (let i = 0; i < pushed; i++) {
      await coll.updateOne({ _id: c }, { $push: { comments: { comment: COMMENT } } }, { writeConcern: wc });
    }
    ops += 1 + pushed;
  }
  return ops;
}

async function writeSeparate(coll, wc, blogs, perBlog, pushed) {
  let ops = 0;
  for (let c = 0; c < blogs; c++) {
    const first = perBlog - pushed;
    if (first > 0) {
      const docs = [];
      for (let i = 0; i < first; i++) docs.push({ _id: c * perBlog + i, blog: c, comment: COMMENT });
      await coll.insertMany(docs, { writeConcern: wc });
      ops += 1;
    }
    for (let i = first; i < perBlog; i++) {
      await coll.insertOne({ _id: c * perBlog + i, blog: c, comment: COMMENT }, { writeConcern: wc });
    }
    ops += pushed;
  }
  return ops;
}

const EMBEDDED_TOTALS = [{ $group: { _id: null, blogs: { $sum: 1 },
  comments: { $sum: { $size: { $ifNull: ['$comments', []] } } } } }];
const SEPARATE_TOTALS = [{ $group: { _id: '$blog', n: { $sum: 1 } } },
  { $group: { _id: null, blogs: { $sum: 1 }, comments: { $sum: '$n' } } }];

runMain(async () => {
  const wl = new Workload('embedded');
  const total = wl.scaled(10000);
  await wl.dropDatabase();
  for (const [ack, wc] of [['w0', W0], ['w1', W1]]) {
    for (const layout of ['embedded', 'separate']) {
      const name = layout === 'embedded' ? 'blog' : 'comments';
      for (const perBlog of PER_BLOG) {
        if (perBlog > total) continue;
        const blogs = Math.floor(total / perBlog);
        const pushed = Math.min(perBlog, PUSH_CAP);
        const coll = wl.db.collection(name);
        await coll.drop().catch((err) => {
          if (err.codeName !== 'NamespaceNotFound') throw err;
        });
        const t = await wl.start(`${layout}_${perBlog}_${ack}`);
        let ops = layout === 'embedded'
          ? await writeEmbedded(coll, wc, blogs, perBlog, pushed)
          : await writeSeparate(coll, wc, blogs, perBlog, pushed);
        if (ack === 'w0') {
          await wl.count(name); // barrier: all w:0 writes have been applied
          ops += 1;
        }
        const seconds = wl.since(t);
        const res = await coll.aggregate(layout === 'embedded' ? EMBEDDED_TOTALS : SEPARATE_TOTALS).toArray();
        wl.emit(`${layout}_${perBlog}_${ack}`, ops, seconds, { blogs: res[0].blogs, comments: res[0].comments });
      }
    }
  }
  await wl.end();
});
