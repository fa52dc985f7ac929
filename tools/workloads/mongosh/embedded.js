// embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own collection.
// Mirrors pymongo/embedded.py (see there for the prefill rule: only the last min(P, 100) comments of a
// blog are written one by one).

const PER_BLOG = [1, 10, 100, 1000, 10000];
const PUSH_CAP = 100;
const COMMENT = 'a'.repeat(1000);

function writeEmbedded(coll, wc, blogs, perBlog, pushed) {
  let ops = 0;
  for (let c = 0; c < blogs; c++) {
    const blog = { _id: c, title: 'Mongodb Benchmark' };
    if (perBlog > pushed) {
      blog.comments = [];
      for (let i = 0; i < perBlog - pushed; i++) blog.comments.push({ comment: COMMENT });
    }
    coll.insertOne(blog, { writeConcern: wc });
    for (let i = 0; i < pushed; i++) {
      coll.updateOne({ _id: c }, { $push: { comments: { comment: COMMENT } } }, { writeConcern: wc });
    }
    ops += 1 + pushed;
  }
  return ops;
}

function writeSeparate(coll, wc, blogs, perBlog, pushed) {
  let ops = 0;
  for (let c = 0; c < blogs; c++) {
    const first = perBlog - pushed;
    if (first > 0) {
      const docs = [];
      for (let i = 0; i < first; i++) docs.push({ _id: c * perBlog + i, blog: c, comment: COMMENT });
      coll.insertMany(docs, { writeConcern: wc });
      ops += 1;
    }
    for (let i = first; i < perBlog; i++) {
      coll.insertOne({ _id: c * perBlog + i, blog: c, comment: COMMENT }, { writeConcern: wc });
    }
    ops += pushed;
  }
  return ops;
}

const EMBEDDED_TOTALS = [{ $group: { _id: null, blogs: { $sum: 1 },
  comments: { $sum: { $size: { $ifNull: ['$comments', []] } } } } }];
const SEPARATE_TOTALS = [{ $group: { _id: '$blog', n: { $sum: 1 } } },
  { $group: { _id: null, blogs: { $sum: 1 }, comments: { $sum: '$n' } } }];

runMain(function main() {
  const wl = new Workload('embedded');
  const total = wl.scaled(10000);
  wl.dropDatabase();
  for (const [ack, wc] of [['w0', W0], ['w1', W1]]) {
    for (const layout of ['embedded', 'separate']) {
      const name = layout === 'embedded' ? 'blog' : 'comments';
      for (const perBlog of PER_BLOG) {
        if (perBlog > total) continue;
        const blogs = Math.floor(total / perBlog);
        const pushed = Math.min(perBlog, PUSH_CAP);
        const coll = wl.db.getCollection(name);
        coll.drop();
        const t = wl.start(`${layout}_${perBlog}_${ack}`);
        let ops = layout === 'embedded'
          ? writeEmbedded(coll, wc, blogs, perBlog, pushed)
          : writeSeparate(coll, wc, blogs, perBlog, pushed);
        if (ack === 'w0') {
          wl.count(name); // barrier: all w:0 writes have been applied
          ops += 1;
        }
        const seconds = wl.since(t);
        const res = coll.aggregate(layout === 'embedded' ? EMBEDDED_TOTALS : SEPARATE_TOTALS).toArray();
        wl.emit(`${layout}_${perBlog}_${ack}`, ops, seconds, { blogs: res[0].blogs, comments: res[0].comments });
      }
    }
  }
  wl.end();
});
