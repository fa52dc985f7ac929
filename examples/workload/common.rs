//! Shared helpers of the Rust driver workloads; behaviourally identical to pymongo/common.py,
//! mongosh/common.js, php/common.php and node/common.js (scaling, pseudo-random numbers, step
//! markers, output format).

use anyhow::Context;
use bson::{doc, Bson, Document};
use mongodb::options::{Acknowledgment, WriteConcern};
use mongodb::{Client, Collection, Cursor, Database};
use serde_json::{json, Value};
use std::future::IntoFuture;
use std::time::Instant;

/// A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
const MARKER_PREFIX: &str = "mongotape:step:";

#[derive(clap::Parser, Debug)]
#[command(about = "The seed workloads with the official Rust driver (tools/workloads/README.md)")]
pub struct Args {
    /// basic, docsize, embedded, inserts, lookup, randstring, repeatable or writeconcern
    pub workload: String,
    /// MongoDB URI, passed to the driver unchanged
    #[arg(long)]
    pub uri: String,
    /// Database (dropped first!)
    #[arg(long, default_value = "bench")]
    pub db: String,
    /// Size factor
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}

/// `{w: 1}`, as the other clients send it explicitly.
pub fn w1() -> WriteConcern {
    WriteConcern::nodes(1)
}

/// `{w: 1, j: true}`.
pub fn j1() -> WriteConcern {
    WriteConcern::builder()
        .w(Acknowledgment::Nodes(1))
        .journal(true)
        .build()
}

/// round(base * scale) with halves rounded up, at least `minimum`.
pub fn scaled(base: u32, scale: f64, minimum: u32) -> u32 {
    minimum.max((f64::from(base) * scale + 0.5).floor() as u32)
}

/// Park-Miller "minimal standard" generator (multiplier 48271, modulus 2^31-1).
pub struct Lcg {
    state: u64,
}

impl Lcg {
    const MOD: u64 = 2_147_483_647;

    pub fn new(seed: u64) -> Self {
        let state = seed % Self::MOD;
        Lcg {
            state: if state == 0 { 1 } else { state },
        }
    }

    pub fn next(&mut self) -> u64 {
        self.state = self.state * 48271 % Self::MOD;
        self.state
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn letters(&mut self, count: usize) -> String {
        (0..count)
            .map(|_| char::from(b'a' + self.below(26) as u8))
            .collect()
    }
}

/// A BSON value as the plain JSON the other clients print; ObjectIds, dates and other
/// non-deterministic types are refused.
pub fn plain(value: &Bson) -> anyhow::Result<Value> {
    Ok(match value {
        Bson::Null => Value::Null,
        Bson::Boolean(b) => json!(b),
        Bson::Int32(n) => json!(n),
        Bson::Int64(n) => json!(n),
        Bson::Double(f) => json!(f),
        Bson::String(s) => json!(s),
        Bson::Array(items) => Value::Array(items.iter().map(plain).collect::<Result<_, _>>()?),
        Bson::Document(doc) => plain_doc(doc)?,
        other => anyhow::bail!("non-deterministic BSON type in result: {other:?}"),
    })
}

pub fn plain_doc(doc: &Document) -> anyhow::Result<Value> {
    let mut out = serde_json::Map::new();
    for (key, value) in doc {
        out.insert(key.clone(), plain(value)?);
    }
    Ok(Value::Object(out))
}

pub fn plain_docs(docs: &[Document]) -> anyhow::Result<Value> {
    Ok(Value::Array(
        docs.iter().map(plain_doc).collect::<Result<_, _>>()?,
    ))
}

/// A number field of a reply (`n`, a `$sum`) whatever its BSON number type.
pub fn number(doc: &Document, key: &str) -> anyhow::Result<i64> {
    match doc.get(key) {
        Some(Bson::Int32(n)) => Ok(i64::from(*n)),
        Some(Bson::Int64(n)) => Ok(*n),
        Some(Bson::Double(f)) if f.fract() == 0.0 => Ok(*f as i64),
        other => anyhow::bail!("{key} is not a count in {doc}: {other:?}"),
    }
}

/// Every document of a cursor (the find and its getMores).
pub async fn all(mut cursor: Cursor<Document>) -> anyhow::Result<Vec<Document>> {
    let mut docs = Vec::new();
    while cursor.advance().await? {
        docs.push(cursor.deserialize_current()?);
    }
    Ok(docs)
}

/// A step line's JSON with non-ASCII characters `\uXXXX`-escaped, like Python's json.dumps and
/// PHP's json_encode.
fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Operations counted under `MONGOTAPE_WORKLOAD_TALLY=1` ([`Workload::attempt`]).
#[derive(Debug, Default, serde::Serialize)]
pub struct Tally {
    ok: u64,
    failed: u64,
    /// Runs again of failed operations (`MONGOTAPE_WORKLOAD_APP_RETRY`).
    app_retried: u64,
}

pub struct Workload {
    pub client: Client,
    pub db: Database,
    pub scale: f64,
    marked: Option<String>,
    /// `Some` under `MONGOTAPE_WORKLOAD_TALLY=1` (tools/compare-drivers --experiment faults).
    tally: Option<Tally>,
    /// `MONGOTAPE_WORKLOAD_APP_RETRY`: how many times [`Workload::attempt`] runs a failed
    /// operation again, at once, as an application does.
    app_retries: u32,
}

impl Workload {
    pub async fn connect(args: &Args) -> anyhow::Result<Self> {
        anyhow::ensure!(args.scale > 0.0, "--scale must be > 0");
        let client = Client::with_uri_str(&args.uri)
            .await
            .with_context(|| format!("--uri {}", args.uri))?;
        Ok(Workload {
            db: client.database(&args.db),
            client,
            scale: args.scale,
            marked: None,
            tally: (std::env::var("MONGOTAPE_WORKLOAD_TALLY").as_deref() == Ok("1"))
                .then(Tally::default),
            app_retries: match std::env::var("MONGOTAPE_WORKLOAD_APP_RETRY") {
                Ok(n) => n
                    .parse()
                    .with_context(|| format!("MONGOTAPE_WORKLOAD_APP_RETRY={n}"))?,
                Err(_) => 0,
            },
        })
    }

    /// `op()`, counted under `MONGOTAPE_WORKLOAD_TALLY=1`: a failure (the driver's error, after
    /// whatever retry it made) is run again up to `MONGOTAPE_WORKLOAD_APP_RETRY` times, then
    /// counted and gives `None` instead of ending the workload; without the tally, an error ends
    /// the workload as before.
    pub async fn attempt<T, F>(&mut self, mut op: impl FnMut() -> F) -> anyhow::Result<Option<T>>
    where
        F: IntoFuture<Output = mongodb::error::Result<T>>,
    {
        let Some(tally) = self.tally.as_mut() else {
            return Ok(Some(op().await?));
        };
        for run in 0..=self.app_retries {
            if run > 0 {
                tally.app_retried += 1;
            }
            if let Ok(value) = op().await {
                tally.ok += 1;
                return Ok(Some(value));
            }
        }
        tally.failed += 1;
        Ok(None)
    }

    /// Whether operations are counted (`MONGOTAPE_WORKLOAD_TALLY=1`).
    pub fn tallying(&self) -> bool {
        self.tally.is_some()
    }

    pub fn scaled(&self, base: u32, minimum: u32) -> u32 {
        scaled(base, self.scale, minimum)
    }

    pub fn coll(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    /// Sends the step marker on the workload's connection (outside any step's clock).
    async fn mark(&mut self, step: &str) -> anyhow::Result<()> {
        self.client
            .database("admin")
            .run_command(doc! { "ping": 1, "comment": format!("{MARKER_PREFIX}{step}") })
            .await
            .with_context(|| format!("step marker {step}"))?;
        self.marked = Some(step.to_string());
        Ok(())
    }

    /// Marks the beginning of `step`, then starts its clock.
    pub async fn start(&mut self, step: &str) -> anyhow::Result<Instant> {
        self.mark(step).await?;
        Ok(Instant::now())
    }

    /// Prints one step line; `started` comes from start() and the clock stops here unless the
    /// caller took `seconds` earlier (see [`Workload::emit_seconds`]).
    pub fn emit(
        &self,
        step: &str,
        ops: u64,
        started: Instant,
        result: Value,
    ) -> anyhow::Result<()> {
        self.emit_seconds(step, ops, started.elapsed().as_secs_f64(), result)
    }

    pub fn emit_seconds(
        &self,
        step: &str,
        ops: u64,
        seconds: f64,
        result: Value,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.marked.as_deref() == Some(step),
            "step {step} was not started with start() (last marker {:?})",
            self.marked
        );
        let line = json!({
            "step": step,
            "ops": ops,
            "seconds": (seconds * 1e6).round() / 1e6,
            "result": result,
        });
        println!("{}", ascii_json(&line));
        Ok(())
    }

    pub async fn drop_database(&mut self) -> anyhow::Result<()> {
        let t = self.start("drop_database").await?;
        self.db.drop().await?;
        self.emit("drop_database", 1, t, Value::Null)
    }

    /// Acknowledged `count` command (also the barrier after w:0 writes).
    pub async fn count(&self, collection: &str, query: Document) -> anyhow::Result<i64> {
        let reply = self
            .db
            .run_command(doc! { "count": collection, "query": query })
            .await?;
        number(&reply, "n")
    }

    /// A w:0 write. The Rust driver refuses unacknowledged write concerns on its CRUD methods
    /// ("Unacknowledged write concerns are not supported"), so the same `insert`/`update` command
    /// with `writeConcern: {w: 0}` goes through run_command: the server applies it without
    /// acknowledging it, but the driver still waits for the reply (no moreToCome).
    pub async fn unacknowledged(&self, mut command: Document) -> anyhow::Result<()> {
        command.insert("writeConcern", doc! { "w": 0 });
        self.db.run_command(command).await?;
        Ok(())
    }

    pub async fn insert_w0(
        &self,
        collection: &str,
        documents: Vec<Document>,
    ) -> anyhow::Result<()> {
        self.unacknowledged(doc! { "insert": collection, "documents": documents })
            .await
    }

    pub async fn update_w0(
        &self,
        collection: &str,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> anyhow::Result<()> {
        self.unacknowledged(doc! {
            "update": collection,
            "updates": [{ "q": filter, "u": update, "upsert": upsert }],
        })
        .await
    }

    /// After the last step: the end marker, then the client's shutdown (endSessions); under
    /// `MONGOTAPE_WORKLOAD_TALLY=1`, one more line: `{"tally":{"ok":N,"failed":M,"app_retried":R}}`.
    pub async fn end(mut self) -> anyhow::Result<()> {
        self.mark("end").await?;
        self.client.shutdown().await;
        if let Some(tally) = &self.tally {
            println!("{}", json!({ "tally": tally }));
        }
        Ok(())
    }
}
