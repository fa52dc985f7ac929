//! inserts: the replay benchmark's workload (tools/bench-replay). Mirrors pymongo/inserts.py:
//! N = 20000 * scale acknowledged insert_one of {_id: i, name: "item-<i>", value: (i * 7) % 13,
//! pad: 94 x "x"}.

use crate::common::Workload;
use bson::doc;
use serde_json::json;

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(20000, 1) as i32;
    let items = wl.coll("items");
    let pad = "x".repeat(94);
    wl.drop_database().await?;
    let t = wl.start("insert").await?;
    for i in 0..n {
        items
            .insert_one(
                doc! { "_id": i, "name": format!("item-{i}"), "value": (i * 7) % 13, "pad": &pad },
            )
            .await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let count = wl.count("items", doc! {}).await?;
    wl.emit_seconds("insert", n as u64, seconds, json!({ "count": count }))
}
