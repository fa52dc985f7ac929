//! The metrics endpoint of a running `record` or `replay --metrics`: its address as the process
//! printed it, and one scrape.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `GET /metrics` at `addr`; the body, after checking the status and the content type.
pub fn scrape(addr: &str) -> String {
    let mut stream =
        TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to metrics at {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    body.to_owned()
}

/// `http://ADDR/metrics` as a process printed it.
pub fn metrics_addr(stderr: &str) -> Option<String> {
    let at = stderr.find("metrics on http://")? + "metrics on http://".len();
    let rest = &stderr[at..];
    Some(rest[..rest.find("/metrics")?].to_owned())
}
