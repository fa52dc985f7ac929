//! What a rule is matched on: a request's command, namespace and shape, and the client's
//! application and driver names from its connection's handshake.

use crate::shape::Shaper;
use crate::wire::info::client_metadata;
use crate::wire::{Body, Message, OpCode, RequestInfo};

/// One request, as the rules see it.
#[derive(Debug, Clone, Default)]
pub struct RequestFacts {
    pub request_id: i32,
    /// The opcode the client used (inside OP_COMPRESSED when compressed): the made-up reply's.
    pub op_code: Option<OpCode>,
    pub command: String,
    pub namespace: String,
    pub expects_reply: bool,
    /// The query shape's hash; only worked out when a rule matches on shapes.
    pub shape: Option<String>,
    /// A retryable write's or a transaction's `lsid` (its bytes in hex) and `txnNumber`: what a
    /// driver's retry sends again unchanged.
    pub session: Option<(String, i64)>,
}

/// The `lsid` and `txnNumber` of a request, as [`RequestFacts::session`] says them.
pub fn session_of(info: &RequestInfo) -> Option<(String, i64)> {
    let lsid = info.lsid.as_ref()?;
    let hex: String = lsid.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
    Some((hex, info.txn_number?))
}

/// What the connection's handshake said.
#[derive(Debug, Clone, Default)]
pub struct ClientFacts {
    pub app: Option<String>,
    pub driver: Option<String>,
}

impl RequestFacts {
    /// Reads `frame`; `None` when it is no message mongotape can decode (it is then forwarded
    /// untouched). Learns the client's names into `client` from a handshake.
    pub fn of(frame: &[u8], want_shape: bool, client: &mut ClientFacts) -> Option<RequestFacts> {
        let msg = Message::parse(frame).ok()?;
        let info = RequestInfo::of(&msg);
        if let Some(meta) = client_metadata(&msg) {
            let name = |part: &str| {
                meta.get_document(part)
                    .ok()
                    .and_then(|d| d.get_str("name").ok())
                    .map(str::to_owned)
            };
            client.app = name("application");
            client.driver = name("driver");
        }
        let shape = if want_shape {
            Shaper::new()
                .request_with(&msg, &info)
                .map(|s| crate::shape::hash(s.view().text))
        } else {
            None
        };
        Some(RequestFacts {
            session: session_of(&info),
            request_id: msg.header.request_id,
            op_code: Some(match msg.body {
                Body::Query(_) => OpCode::Query,
                Body::Msg(_) => OpCode::Msg,
                _ => msg.op_code(),
            }),
            namespace: info.namespace(),
            command: info.command,
            expects_reply: info.expects_reply,
            shape,
        })
    }
}
