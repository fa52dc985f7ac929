//! repeatable: writes that `mongotape replay --repeat` applies again (tests/replay_repeat.rs).
//! Mirrors pymongo/repeatable.py: inserts without an explicit _id (acknowledged, w:0, one
//! insert_many), $push through an upsert (acknowledged, w:0), $inc of an upserted counter,
//! update_many, delete_many.

use crate::common::Workload;
use bson::{doc, oid::ObjectId, Document};
use serde_json::json;

async fn comments(wl: &Workload) -> anyhow::Result<usize> {
    let blog = wl
        .coll("blogs")
        .find_one(doc! { "_id": "blog" })
        .await?
        .ok_or_else(|| anyhow::anyhow!("no blog"))?;
    Ok(blog.get_array("comments")?.len())
}

fn push(j: u32) -> Document {
    doc! { "$push": { "comments": { "who": format!("user-{j}") } } }
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(100, 4);
    let m = wl.scaled(50, 1);
    let k = wl.scaled(20, 1);
    let (docs, blogs) = (wl.coll("docs"), wl.coll("blogs"));
    wl.drop_database().await?;

    // The driver gives each document an ObjectId _id; the w:0 inserts, sent as commands, get theirs here.
    let t = wl.start("insert_ack").await?;
    for i in 0..n {
        docs.insert_one(doc! { "kind": "ack", "i": i as i32 })
            .await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let count = wl.count("docs", doc! { "kind": "ack" }).await?;
    wl.emit_seconds(
        "insert_ack",
        u64::from(n),
        seconds,
        json!({ "count": count }),
    )?;

    let t = wl.start("insert_w0").await?;
    for i in 0..n {
        let doc = doc! { "_id": ObjectId::new(), "kind": "w0", "i": i as i32 };
        wl.insert_w0("docs", vec![doc]).await?;
    }
    let count = wl.count("docs", doc! { "kind": "w0" }).await?;
    wl.emit("insert_w0", u64::from(n) + 1, t, json!({ "count": count }))?;

    let t = wl.start("insert_many").await?;
    docs.insert_many((0..m).map(|i| doc! { "kind": "many", "i": i as i32 }))
        .await?;
    let seconds = t.elapsed().as_secs_f64();
    let count = wl.count("docs", doc! { "kind": "many" }).await?;
    wl.emit_seconds("insert_many", 1, seconds, json!({ "count": count }))?;

    let t = wl.start("push_ack").await?;
    for j in 0..k {
        blogs
            .update_one(doc! { "_id": "blog" }, push(j))
            .upsert(true)
            .await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let pushed = comments(wl).await?;
    wl.emit_seconds(
        "push_ack",
        u64::from(k),
        seconds,
        json!({ "comments": pushed }),
    )?;

    let t = wl.start("push_w0").await?;
    for j in 0..k {
        wl.update_w0("blogs", doc! { "_id": "blog" }, push(j), true)
            .await?;
    }
    let pushed = comments(wl).await?;
    wl.emit(
        "push_w0",
        u64::from(k) + 1,
        t,
        json!({ "comments": pushed }),
    )?;

    let t = wl.start("inc").await?;
    for _ in 0..k {
        blogs
            .update_one(doc! { "_id": "counter" }, doc! { "$inc": { "n": 1 } })
            .upsert(true)
            .await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let counter = blogs
        .find_one(doc! { "_id": "counter" })
        .await?
        .ok_or_else(|| anyhow::anyhow!("no counter"))?;
    let n_value = crate::common::number(&counter, "n")?;
    wl.emit_seconds("inc", u64::from(k), seconds, json!({ "n": n_value }))?;

    let t = wl.start("update_many").await?;
    let r = docs
        .update_many(doc! { "kind": "ack" }, doc! { "$inc": { "touched": 1 } })
        .await?;
    wl.emit(
        "update_many",
        1,
        t,
        json!({ "matched": r.matched_count, "modified": r.modified_count }),
    )?;

    let t = wl.start("delete_many").await?;
    let r = docs
        .delete_many(doc! { "kind": "w0", "i": { "$lt": (n / 4) as i32 } })
        .await?;
    wl.emit("delete_many", 1, t, json!({ "deleted": r.deleted_count }))
}
