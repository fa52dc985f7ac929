//! Query plans (`plan`): an `explain` reply read into a plan summary, and the `explain` command
//! built from a request.

use super::{mode, op_msg_of};
use mongotape::plan::{explain_request, summarize, summary::MAX_LINE};

/// The first byte picks what the rest is: even, an `explain` reply (any bytes); odd, the body of
/// an OP_MSG request to build an `explain` from. Asserts: a summary's plan line stays within
/// `MAX_LINE` (plus the cut's `…`); a built command is a valid document of three elements,
/// `explain` (a document), `verbosity: "executionStats"` and `$db`, whose explained command
/// holds none of the fields left out.
pub fn plan(data: &[u8]) {
    let (m, rest) = mode(data);
    if m % 2 == 0 {
        if let Ok(s) = summarize(rest) {
            let len = s.plan.map_or(0, |p| p.len());
            assert!(len <= MAX_LINE + '…'.len_utf8(), "{len}");
        }
        return;
    }
    let Ok(cmd) = explain_request(&op_msg_of(0, rest)) else {
        return;
    };
    let keys: Vec<String> = cmd
        .iter()
        .map(|e| e.expect("a built command walks").0.as_str().to_owned())
        .collect();
    assert_eq!(keys, ["explain", "verbosity", "$db"]);
    let inner = cmd.get_document("explain").expect("explain is a document");
    for left_out in ["$db", "lsid", "txnNumber", "$clusterTime", "writeConcern"] {
        assert!(
            inner.get(left_out).ok().flatten().is_none(),
            "{left_out} kept"
        );
    }
}
