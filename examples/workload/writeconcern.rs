//! writeconcern (seed 002): inserts with w:0, w:1 and {w:1, j:true}, then with three secondary
//! indexes. Mirrors pymongo/writeconcern.py.

use crate::common::{j1, plain, w1, Workload};
use bson::{doc, Bson, DateTime, Document};
use mongodb::options::WriteConcern;
use mongodb::IndexModel;
use serde_json::json;

/// 2017-03-28T09:35:05.779Z
const TIME_MS: i64 = 1_490_693_705_779;

fn activity(i: i32) -> Document {
    doc! {
        "_id": i,
        "Aid": "56aacfd4d4307006200d0bac",
        "Cid": 111,
        "At": "56aacfd4d4307006200d0bac",
        "Time": DateTime::from_millis(TIME_MS),
        "EvtN": null,
        "Evt": null,
        "As": 0,
        "Mis": {
            "Mid": "e3196ec3-b624-4b11-a5e7-df7c4400ba75",
            "Mt": "asdf",
            "Ms": 1,
            "Filter": [{ "Fs": true, "Exp": "Evt.Amount>0", "Pro": "GetInfo" }],
            "Rew": [{ "Rid": "123", "Ra": "", "Rs": 0 }],
        },
    }
}

/// `wc` None means w:0.
async fn inserts(
    wl: &mut Workload,
    step: &str,
    collection: &str,
    wc: Option<WriteConcern>,
    n: i32,
) -> anyhow::Result<()> {
    let coll = wl.coll(collection);
    let t = wl.start(step).await?;
    for i in 0..n {
        match &wc {
            Some(wc) => {
                coll.insert_one(activity(i))
                    .write_concern(wc.clone())
                    .await?;
            }
            None => wl.insert_w0(collection, vec![activity(i)]).await?,
        }
    }
    let mut ops = n as u64;
    if wc.is_none() {
        wl.count(collection, doc! {}).await?; // barrier: all w:0 inserts have been applied
        ops += 1;
    }
    let seconds = t.elapsed().as_secs_f64();
    let last = coll
        .find_one(doc! { "_id": n - 1 })
        .projection(doc! { "Time": 0 })
        .await?
        .map(Bson::Document)
        .unwrap_or(Bson::Null);
    let count = wl.count(collection, doc! {}).await?;
    wl.emit_seconds(
        step,
        ops,
        seconds,
        json!({ "count": count, "last": plain(&last)? }),
    )
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(5000, 1) as i32;
    wl.drop_database().await?;
    inserts(wl, "insert_w0", "wc_w0", None, n).await?;
    inserts(wl, "insert_w1", "wc_w1", Some(w1()), n).await?;
    inserts(wl, "insert_j", "wc_j", Some(j1()), n).await?;

    let t = wl.start("create_indexes").await?;
    let coll = wl.coll("wc_indexed");
    let mut names = Vec::new();
    for key in ["Aid", "Cid", "Mis.Mid"] {
        let model = IndexModel::builder().keys(doc! { key: 1 }).build();
        names.push(coll.create_index(model).await?.index_name);
    }
    names.sort();
    wl.emit("create_indexes", 3, t, json!(names))?;
    inserts(wl, "insert_w1_indexed", "wc_indexed", Some(w1()), n).await
}
