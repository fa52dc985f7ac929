//! basic: a small mixed workload touching every common operation (~160 ops).
//! Mirrors pymongo/basic.py; --scale is ignored.

use crate::common::{all, plain, plain_docs, Workload};
use bson::{doc, Bson, Document};
use mongodb::IndexModel;
use serde_json::json;

fn item(i: i32, kind: &str) -> Document {
    doc! { "_id": i, "kind": kind, "group": i % 5, "name": format!("item-{i}"), "value": (i * 7) % 13 }
}

fn comment(k: i32) -> Document {
    doc! { "$push": { "comments": { "who": format!("user-{k}"), "comment": format!("comment {k}") } } }
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let items = wl.coll("items");
    let blogs = wl.coll("blogs");
    wl.drop_database().await?;

    // Acknowledged single inserts (retryable writes: lsid + txnNumber).
    let t = wl.start("insert_ack").await?;
    let mut n = 0;
    for i in 0..50 {
        items.insert_one(item(i, "ack")).await?;
        n += 1;
    }
    wl.emit("insert_ack", 50, t, json!({ "inserted": n }))?;

    // Unacknowledged inserts, then one acknowledged count as a barrier.
    let t = wl.start("insert_w0").await?;
    for i in 50..100 {
        wl.insert_w0("items", vec![item(i, "w0")]).await?;
    }
    let count = wl.count("items", doc! { "kind": "w0" }).await?;
    wl.emit("insert_w0", 51, t, json!({ "count": count }))?;

    let t = wl.start("push_ack").await?;
    blogs
        .insert_one(doc! { "_id": 1, "title": "No Free Lunch", "author": "Alex", "comments": [] })
        .await?;
    let (mut matched, mut modified) = (0, 0);
    for k in 0..20 {
        let r = blogs.update_one(doc! { "_id": 1 }, comment(k)).await?;
        matched += r.matched_count;
        modified += r.modified_count;
    }
    wl.emit(
        "push_ack",
        21,
        t,
        json!({ "matched": matched, "modified": modified }),
    )?;

    let t = wl.start("push_w0").await?;
    for k in 20..40 {
        wl.update_w0("blogs", doc! { "_id": 1 }, comment(k), false)
            .await?;
    }
    let blog = blogs
        .find_one(doc! { "_id": 1 })
        .await?
        .ok_or_else(|| anyhow::anyhow!("blog 1 not found"))?;
    let comments = blog.get_array("comments")?;
    let last = plain(comments.last().unwrap_or(&Bson::Null))?;
    wl.emit(
        "push_w0",
        21,
        t,
        json!({ "comments": comments.len(), "last": last }),
    )?;

    // Find by a non-indexed field, index it, find again.
    let t = wl.start("find_noindex").await?;
    let docs = all(items.find(doc! { "name": "item-42" }).await?).await?;
    wl.emit("find_noindex", 1, t, plain_docs(&docs)?)?;

    let t = wl.start("create_index").await?;
    let name = items
        .create_index(IndexModel::builder().keys(doc! { "name": 1 }).build())
        .await?
        .index_name;
    wl.emit("create_index", 1, t, json!(name))?;

    let t = wl.start("find_index").await?;
    let docs = all(items.find(doc! { "name": "item-42" }).await?).await?;
    wl.emit("find_index", 1, t, plain_docs(&docs)?)?;

    // A cursor over 100 documents in batches of 10 (find + getMore).
    let t = wl.start("find_batches").await?;
    let cursor = items
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .batch_size(10)
        .await?;
    let ids: Vec<_> = all(cursor)
        .await?
        .iter()
        .map(|d| plain(d.get("_id").unwrap_or(&Bson::Null)))
        .collect::<Result<_, _>>()?;
    wl.emit("find_batches", 1, t, json!({ "ids": ids }))?;

    let t = wl.start("update_many").await?;
    let r = items
        .update_many(doc! { "group": 3 }, doc! { "$set": { "flag": true } })
        .await?;
    wl.emit(
        "update_many",
        1,
        t,
        json!({ "matched": r.matched_count, "modified": r.modified_count }),
    )?;

    let t = wl.start("delete_one").await?;
    let r = items.delete_one(doc! { "_id": 7 }).await?;
    wl.emit("delete_one", 1, t, json!({ "deleted": r.deleted_count }))?;

    let t = wl.start("delete_many").await?;
    let r = items.delete_many(doc! { "kind": "w0", "group": 1 }).await?;
    wl.emit("delete_many", 1, t, json!({ "deleted": r.deleted_count }))?;

    let t = wl.start("counts").await?;
    let mut names = wl.db.list_collection_names().await?;
    names.sort();
    let mut counts = serde_json::Map::new();
    for c in &names {
        counts.insert(c.clone(), json!(wl.count(c, doc! {}).await?));
    }
    wl.emit("counts", 1 + names.len() as u64, t, counts.into())
}
