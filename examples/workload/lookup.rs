//! lookup (seed 004): string _ids, random lookups by author (no index, then indexed), remove all.
//! Mirrors pymongo/lookup.py; under MONGOTAPE_WORKLOAD_TALLY=1 a failed insert, lookup or
//! counter update is counted, not fatal (Workload::attempt), and the `views` step runs.

use crate::common::{plain, Lcg, Workload};
use bson::{doc, Bson, DateTime};
use mongodb::IndexModel;
use serde_json::json;

/// 2013-01-01T00:00:00Z
const EPOCH_MS: i64 = 1_356_998_400_000;
const SEED: u64 = 5000000;

async fn lookups(wl: &mut Workload, step: &str, n: u32, m: u32) -> anyhow::Result<()> {
    let posts = wl.coll("userinfo");
    let mut rng = Lcg::new(SEED);
    let (mut found, mut last) = (0, Bson::Null);
    let t = wl.start(step).await?;
    for _ in 0..m {
        let x = 1 + rng.below(u64::from(n));
        let find = || {
            posts
                .find_one(doc! { "author": format!("{x}Mike") })
                .projection(doc! { "date": 0 })
        };
        if let Some(doc) = wl.attempt(find).await?.flatten() {
            found += 1;
            last = Bson::Document(doc);
        }
    }
    wl.emit(
        step,
        u64::from(m),
        t,
        json!({ "lookups": m, "found": found, "last": plain(&last)? }),
    )
}

pub async fn run(wl: &mut Workload) -> anyhow::Result<()> {
    let n = wl.scaled(10000, 2);
    let m = wl.scaled(2000, 10);
    wl.drop_database().await?;
    let posts = wl.coll("userinfo");

    let t = wl.start("insert").await?;
    for x in 0..n {
        let post = doc! { "_id": x.to_string(), "author": format!("{x}Mike"),
        "text": "My first blog post!", "tags": ["mongodb", "python", "pymongo"],
        "date": DateTime::from_millis(EPOCH_MS + i64::from(x) * 1000) };
        wl.attempt(|| posts.insert_one(&post)).await?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let count = wl.count("userinfo", doc! {}).await?;
    wl.emit_seconds("insert", u64::from(n), seconds, json!({ "count": count }))?;

    lookups(wl, "lookup_noindex", n, m / 10).await?;

    let t = wl.start("create_index").await?;
    let model = IndexModel::builder().keys(doc! { "author": 1 }).build();
    let name = posts.create_index(model).await?.index_name;
    wl.emit("create_index", 1, t, json!(name))?;

    lookups(wl, "lookup_index", n, m).await?;

    if wl.tallying() {
        let v = wl.scaled(1000, 10);
        let counters = wl.coll("counters");
        let t = wl.start("views").await?;
        for _ in 0..v {
            let bump = || {
                counters
                    .update_one(doc! { "_id": "views" }, doc! { "$inc": { "n": 1 } })
                    .upsert(true)
            };
            wl.attempt(bump).await?;
        }
        let seconds = t.elapsed().as_secs_f64();
        let counter = counters.find_one(doc! { "_id": "views" }).await?;
        let n = counter.map_or(Ok(0), |c| c.get_i32("n").map(i64::from))?;
        wl.emit_seconds("views", u64::from(v), seconds, json!({ "n": n }))?;
    }

    let t = wl.start("remove_all").await?;
    let before = wl.count("userinfo", doc! {}).await?;
    let r = posts.delete_many(doc! {}).await?;
    let after = wl.count("userinfo", doc! {}).await?;
    wl.emit(
        "remove_all",
        3,
        t,
        json!({ "before": before, "deleted": r.deleted_count, "after": after }),
    )
}
