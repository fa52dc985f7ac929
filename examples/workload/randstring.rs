//! randstring (seed 003): random 26-letter strings, insert / find / delete one / delete all,
//! without and then with an index on the field. Mirrors pymongo/randstring.py.

use crate::common::{all, plain_docs, Lcg, Workload};
use bson::doc;
use mongodb::IndexModel;
use serde_json::json;

const SEED: u64 = 20110725;

async fn run_pass(wl: &mut Workload, suffix: &str, n: i32) -> anyhow::Result<()> {
    let users = wl.coll("users");
    let mut rng = Lcg::new(SEED);
    let mut last = String::new();
    let step = format!("insert_{suffix}");
    let t = wl.start(&step).await?;
    for i in 0..n {
        last = rng.letters(26);
        users.insert_one(doc! { "_id": i, "NewsId": &last }).await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let count = wl.count("users", doc! {}).await?;
    wl.emit_seconds(&step, n as u64, seconds, json!({ "count": count }))?;

    let step = format!("find_{suffix}");
    let t = wl.start(&step).await?;
    let docs = all(users.find(doc! { "NewsId": &last }).await?).await?;
    wl.emit(&step, 1, t, plain_docs(&docs)?)?;

    let step = format!("delete_one_{suffix}");
    let t = wl.start(&step).await?;
    let r = users.delete_one(doc! { "NewsId": &last }).await?;
    wl.emit(&step, 1, t, json!({ "deleted": r.deleted_count }))?;

    let step = format!("delete_all_{suffix}");
    let t = wl.start(&step).await?;
    let r = users.delete_many(doc! {}).await?;
    wl.emit(&step, 1, t, json!({ "deleted": r.deleted_count }))
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(10000, 2) as i32;
    wl.drop_database().await?;
    run_pass(wl, "noindex", n).await?;

    let t = wl.start("create_index").await?;
    let model = IndexModel::builder().keys(doc! { "NewsId": 1 }).build();
    let name = wl.coll("users").create_index(model).await?.index_name;
    wl.emit("create_index", 1, t, json!(name))?;
    run_pass(wl, "index", n).await
}
