//! embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own
//! collection. Mirrors pymongo/embedded.py (see there for the prefill rule: only the last
//! min(P, 100) comments of a blog are written one by one).

use crate::common::{all, number, w1, Workload};
use bson::{doc, Document};
use serde_json::json;

const PER_BLOG: [i32; 5] = [1, 10, 100, 1000, 10000];
const PUSH_CAP: i32 = 100;

/// One blog's or one comment's writes, acknowledged ({w: 1}) or not.
struct Writer<'a> {
    wl: &'a Workload,
    name: &'a str,
    ack: bool,
    comment: String,
}

impl Writer<'_> {
    async fn insert(&self, docs: Vec<Document>) -> anyhow::Result<()> {
        if !self.ack {
            return self.wl.insert_w0(self.name, docs).await;
        }
        let coll = self.wl.coll(self.name);
        if docs.len() == 1 {
            coll.insert_one(&docs[0]).write_concern(w1()).await?;
        } else {
            coll.insert_many(docs).write_concern(w1()).await?;
        }
        Ok(())
    }

    async fn push(&self, blog: i32) -> anyhow::Result<()> {
        let (filter, update) = (
            doc! { "_id": blog },
            doc! { "$push": { "comments": { "comment": &self.comment } } },
        );
        if !self.ack {
            return self.wl.update_w0(self.name, filter, update, false).await;
        }
        self.wl
            .coll(self.name)
            .update_one(filter, update)
            .write_concern(w1())
            .await?;
        Ok(())
    }

    async fn embedded(&self, blogs: i32, per_blog: i32, pushed: i32) -> anyhow::Result<u64> {
        let mut ops = 0;
        for c in 0..blogs {
            let mut blog = doc! { "_id": c, "title": "Mongodb Benchmark" };
            if per_blog > pushed {
                let comments: Vec<_> = (0..per_blog - pushed)
                    .map(|_| doc! { "comment": &self.comment })
                    .collect();
                blog.insert("comments", comments);
            }
            self.insert(vec![blog]).await?;
            for _ in 0..pushed {
                self.push(c).await?;
            }
            ops += 1 + pushed as u64;
        }
        Ok(ops)
    }

    async fn separate(&self, blogs: i32, per_blog: i32, pushed: i32) -> anyhow::Result<u64> {
        let mut ops = 0;
        let comment =
            |c: i32, i: i32| doc! { "_id": c * per_blog + i, "blog": c, "comment": &self.comment };
        for c in 0..blogs {
            let first = per_blog - pushed;
            if first > 0 {
                self.insert((0..first).map(|i| comment(c, i)).collect())
                    .await?;
                ops += 1;
            }
            for i in first..per_blog {
                self.insert(vec![comment(c, i)]).await?;
            }
            ops += pushed as u64;
        }
        Ok(ops)
    }
}

fn totals(embedded: bool) -> Vec<Document> {
    if embedded {
        vec![doc! { "$group": { "_id": null, "blogs": { "$sum": 1 },
        "comments": { "$sum": { "$size": { "$ifNull": ["$comments", []] } } } } }]
    } else {
        vec![
            doc! { "$group": { "_id": "$blog", "n": { "$sum": 1 } } },
            doc! { "$group": { "_id": null, "blogs": { "$sum": 1 }, "comments": { "$sum": "$n" } } },
        ]
    }
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let total = wl.scaled(10000, 1) as i32;
    wl.drop_database().await?;
    for (ack, acknowledged) in [("w0", false), ("w1", true)] {
        for layout in ["embedded", "separate"] {
            let name = if layout == "embedded" {
                "blog"
            } else {
                "comments"
            };
            for per_blog in PER_BLOG {
                if per_blog > total {
                    continue;
                }
                let (blogs, pushed) = (total / per_blog, per_blog.min(PUSH_CAP));
                wl.coll(name).drop().await?;
                let step = format!("{layout}_{per_blog}_{ack}");
                let t = wl.start(&step).await?;
                let writer = Writer {
                    wl,
                    name,
                    ack: acknowledged,
                    comment: "a".repeat(1000),
                };
                let mut ops = if layout == "embedded" {
                    writer.embedded(blogs, per_blog, pushed).await?
                } else {
                    writer.separate(blogs, per_blog, pushed).await?
                };
                if !acknowledged {
                    wl.count(name, doc! {}).await?; // barrier: all w:0 writes have been applied
                    ops += 1;
                }
                let seconds = t.elapsed().as_secs_f64();
                let res = all(wl
                    .coll(name)
                    .aggregate(totals(layout == "embedded"))
                    .await?)
                .await?;
                let first = res
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("{step}: empty totals"))?;
                wl.emit_seconds(
                    &step,
                    ops,
                    seconds,
                    json!({ "blogs": number(first, "blogs")?, "comments": number(first, "comments")? }),
                )?;
            }
        }
    }
    Ok(())
}
