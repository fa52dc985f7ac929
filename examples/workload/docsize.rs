//! docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one.
//! Mirrors pymongo/docsize.py.

use crate::common::{all, number, Workload};
use bson::{doc, Document};
use serde_json::{json, Value};

const LOREM: &str = include_str!("../../tools/workloads/data/lorem.txt");

fn member(i: i32, large: bool) -> Document {
    let mut doc = doc! { "_id": i, "uname": format!("chuchuchu_{i}"), "name": "\u{891a}\u{891a}\u{891a}",
    "password": "e10adc3949ba59abbe56e057f20f883e", "email": "[e-mail]" };
    if large {
        doc.insert("description", LOREM.trim());
    }
    doc
}

async fn sizes(wl: &Workload, collection: &str) -> anyhow::Result<Value> {
    let pipeline = vec![doc! { "$group": { "_id": null, "count": { "$sum": 1 },
    "bytes": { "$sum": { "$bsonSize": "$$ROOT" } }, "max": { "$max": { "$bsonSize": "$$ROOT" } } } }];
    let res = all(wl.coll(collection).aggregate(pipeline).await?).await?;
    let r = res
        .first()
        .ok_or_else(|| anyhow::anyhow!("{collection}: no sizes"))?;
    Ok(
        json!({ "count": number(r, "count")?, "bytes": number(r, "bytes")?, "max_bytes": number(r, "max")? }),
    )
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(10000, 1) as i32;
    wl.drop_database().await?;
    for (step, collection, large) in [
        ("insert_small", "members", false),
        ("insert_large", "members_large", true),
    ] {
        let coll = wl.coll(collection);
        let t = wl.start(step).await?;
        for i in 0..n {
            coll.insert_one(member(i, large)).await?;
        }
        let seconds = t.elapsed().as_secs_f64();
        wl.emit_seconds(step, n as u64, seconds, sizes(wl, collection).await?)?;
    }
    Ok(())
}
