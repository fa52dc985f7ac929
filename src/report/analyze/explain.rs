//! `analyze --explain URI`: each shape's first request, kept while reading the capture, explained
//! on a server the user names, one at a time on one connection (to the primary of a replica set).
//! A server that cannot be reached, or an explain that fails, is each plan's error: the report is
//! written all the same.

use crate::plan::{self, PlanEntry};
use crate::replay::client::{Conn, Target, Topology};
use bson::RawDocumentBuf;
use std::time::Duration;
use thiserror::Error;

/// A connection string `--explain` cannot use.
#[derive(Debug, Error)]
#[error("--explain {uri}: {detail}")]
pub struct ExplainTargetError {
    pub uri: String,
    pub detail: String,
}

/// The server `analyze --explain` asks.
pub struct ExplainTarget {
    pub uri: String,
    /// How long one reply (or the connection) may take.
    pub timeout: Duration,
}

impl ExplainTarget {
    /// Checks the connection string (before the capture is read).
    pub fn new(uri: &str, timeout: Duration) -> Result<ExplainTarget, ExplainTargetError> {
        Target::parse_blocking(uri).map_err(|e| ExplainTargetError {
            uri: e.uri,
            detail: e.detail,
        })?;
        Ok(ExplainTarget {
            uri: uri.to_owned(),
            timeout,
        })
    }

    /// Explains each request; the entries with their plan or error, in the order given.
    pub fn run(&self, jobs: Vec<(PlanEntry, RawDocumentBuf)>) -> Vec<PlanEntry> {
        let rt = match runtime() {
            Ok(rt) => rt,
            Err(e) => return failed(jobs, &format!("cannot start the runtime: {e}")),
        };
        rt.block_on(async {
            let conn = match self.connect().await {
                Ok(c) => c,
                Err(e) => return failed(jobs, &e),
            };
            explain_each(conn, jobs).await
        })
    }

    async fn connect(&self) -> Result<Conn, String> {
        let target = Target::parse(&self.uri).await.map_err(|e| e.to_string())?;
        let servers = Topology::discover(&target, self.timeout)
            .await
            .map_err(|e| e.to_string())?;
        Conn::connect(&target, &servers.lane_host(), self.timeout)
            .await
            .map_err(|e| e.to_string())
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Every entry with the same error.
fn failed(jobs: Vec<(PlanEntry, RawDocumentBuf)>, error: &str) -> Vec<PlanEntry> {
    jobs.into_iter()
        .map(|(mut e, _)| {
            e.set(Err(error.to_owned()));
            e
        })
        .collect()
}

/// One explain after the other; after a connection error the rest fail with it.
async fn explain_each(mut conn: Conn, jobs: Vec<(PlanEntry, RawDocumentBuf)>) -> Vec<PlanEntry> {
    let mut out = Vec::with_capacity(jobs.len());
    let mut broken: Option<String> = None;
    for (mut entry, cmd) in jobs {
        let result = match &broken {
            Some(e) => Err(e.clone()),
            None => match conn.command(&cmd, "explaining a request").await {
                Ok(reply) => plan::summarize(reply.as_bytes()).map_err(|e| e.to_string()),
                Err(e) => {
                    broken = Some(e.to_string());
                    Err(e.to_string())
                }
            },
        };
        entry.set(result);
        out.push(entry);
    }
    out
}
