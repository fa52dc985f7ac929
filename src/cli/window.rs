//! `--since`, `--until` and `--app`, shared by `slice`, `cat`, `analyze` and `replay`: the part of
//! a capture they read (`mongotape::slice`, docs/slice.md).

use super::exit::usage;
use clap::Args;
use mongotape::slice::filter::check_window;
use mongotape::slice::{Bound, SliceOptions};

#[derive(Args, Debug, Clone, Default)]
pub struct WindowArgs {
    /// Only from this time: an offset from the capture's first record (`90s`, `5m`, `1h30m`,
    /// as cat's `t` counts) or an RFC 3339 time (`2026-12-01T10:00:00Z`). Connections opened
    /// before it keep their handshake; a getMore whose cursor was opened before it is left out.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only up to this time (same forms as --since); a reply after it to a request before it is
    /// kept, a transaction not committed or aborted by then is left out whole.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only connections whose handshake names this application (`client.application.name`; a
    /// prefix ending in `*`; repeatable).
    #[arg(long = "app", value_name = "NAME")]
    pub apps: Vec<String>,
}

impl WindowArgs {
    pub fn is_empty(&self) -> bool {
        self.since.is_none() && self.until.is_none() && self.apps.is_empty()
    }

    /// The slice these options ask for (a bad time is a usage error).
    pub fn options(&self) -> anyhow::Result<SliceOptions> {
        fn parse<'a>(
            option: &'static str,
            text: Option<&'a str>,
        ) -> anyhow::Result<Option<(Bound, &'a str)>> {
            text.map(|t| Bound::parse(option, t).map(|b| (b, t)))
                .transpose()
                .map_err(|e| usage(e.to_string()))
        }
        let since = parse("--since", self.since.as_deref())?;
        let until = parse("--until", self.until.as_deref())?;
        check_window(since, until).map_err(|e| usage(e.to_string()))?;
        let mut options = SliceOptions {
            since: since.map(|(b, _)| b),
            until: until.map(|(b, _)| b),
            ..SliceOptions::default()
        };
        options.conns.apps = self.apps.clone();
        Ok(options)
    }

    /// `since=90s`, `until=...`, `app=NAME`: for a report's list of filters.
    pub fn labels(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.since.iter().map(|s| format!("since={s}")));
        out.extend(self.until.iter().map(|s| format!("until={s}")));
        out.extend(self.apps.iter().map(|s| format!("app={s}")));
        out
    }
}

/// Says on stderr that filters kept nothing; the caller exits 5.
pub fn nothing_matched(what: &str, summary: Option<&mongotape::slice::SliceSummary>) {
    let detail = summary.map_or(String::new(), |s| {
        format!(
            " (of {} requests read, {} left out)",
            s.read.requests,
            s.dropped_requests_total()
        )
    });
    super::output::note!("mongotape: nothing matched the filters{detail}: {what}");
}
