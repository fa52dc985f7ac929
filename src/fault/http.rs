//! `GET /faults` and `PUT /faults` on the metrics listener: the rules with their fire counts, and
//! their replacement by a JSON body in the syntax of [`super::json`].

use super::json::parse_rules;
use super::set::FaultControl;
use crate::metrics::http::{Control, Controlled};
use std::sync::Arc;

/// The rules of a running proxy behind its metrics listener.
pub struct FaultEndpoint(pub Arc<FaultControl>);

impl FaultEndpoint {
    /// The endpoint for the metrics listener, open off loopback to `token`.
    pub fn controlled(faults: Arc<FaultControl>, token: Option<String>) -> Controlled {
        Controlled {
            control: Arc::new(FaultEndpoint(faults)),
            token,
        }
    }
}

impl Control for FaultEndpoint {
    fn path(&self) -> &'static str {
        "/faults"
    }

    fn get(&self) -> Vec<u8> {
        let body = serde_json::json!({ "rules": self.0.status() });
        serde_json::to_vec_pretty(&body).unwrap_or_default()
    }

    fn put(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
        let rules = parse_rules(text).map_err(|e| e.to_string())?;
        tracing::warn!("faults ON: {} rules (replaced by PUT /faults)", rules.len());
        self.0.replace(rules);
        Ok(self.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::parse::parse_rule;
    use crate::metrics::MetricsServer;
    use prometheus_client::registry::Registry;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn ask(port: u16, request: String) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    fn serve(bind: &str, control: &Arc<FaultControl>) -> (u16, tokio::task::JoinHandle<()>) {
        let server = MetricsServer::bind(bind).unwrap();
        let port = server.local_addr().port();
        let controlled = FaultEndpoint::controlled(control.clone(), Some("s3cret".into()));
        let task = server
            .serve_with(Registry::default(), Some(controlled))
            .unwrap();
        (port, task)
    }

    #[tokio::test]
    async fn refused_off_loopback_without_the_token() {
        let control = FaultControl::new(vec![parse_rule("-> stall").unwrap()], 0);
        let (port, task) = serve("0.0.0.0:0", &control);
        let get = "GET /faults HTTP/1.1\r\n\r\n".to_string();
        assert!(ask(port, get).await.starts_with("HTTP/1.1 403"));
        let wrong = "GET /faults HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n".to_string();
        assert!(ask(port, wrong).await.starts_with("HTTP/1.1 403"));
        let body = r#"["command=find -> delay_reply ms=5", "-> close_before"]"#;
        let put = format!(
            "PUT /faults HTTP/1.1\r\nauthorization: Bearer s3cret\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let answer = ask(port, put).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("\"action\": \"close_before\""), "{answer}");
        assert_eq!(control.len(), 2);
        task.abort();
        // On loopback no token is needed; a bad body changes nothing.
        let (port, task) = serve("127.0.0.1:0", &control);
        let bad = "PUT /faults HTTP/1.1\r\nContent-Length: 7\r\n\r\n[\"-> \"]".to_string();
        let answer = ask(port, bad).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("at character"), "{answer}");
        assert_eq!(control.len(), 2);
        let listed = ask(port, "GET /faults HTTP/1.1\r\n\r\n".to_string()).await;
        assert!(
            listed.starts_with("HTTP/1.1 200") && listed.contains("delay_reply"),
            "{listed}"
        );
        task.abort();
    }
}
