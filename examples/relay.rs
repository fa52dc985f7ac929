//! The floor a proxy is measured against: a minimal byte relay with one thread per direction and
//! no parsing at all. `benches/proxy.rs` starts it in process (`start_relay`); `tools/bench-sink`
//! runs it as a program so that its CPU is its own.
//!
//! ```text
//! cargo build --release --example relay
//! target/release/examples/relay UPSTREAM [LISTEN]   # prints `relay listening on 127.0.0.1:PORT`
//! ```

use std::io::Write;
use std::net::{TcpListener, TcpStream};

/// Listens on `listen` and relays every client to `upstream`; returns the address it listens on.
/// A client whose upstream cannot be reached is closed (and the reason printed on stderr).
pub fn start_relay_on(upstream: String, listen: &str) -> std::io::Result<String> {
    let listener = TcpListener::bind(listen)?;
    let addr = listener.local_addr()?.to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if let Err(e) = relay(client, &upstream) {
                eprintln!("relay: upstream {upstream}: {e}");
            }
        }
    });
    Ok(addr)
}

/// `start_relay_on` on an ephemeral port of 127.0.0.1.
pub fn start_relay(upstream: String) -> String {
    start_relay_on(upstream, "127.0.0.1:0").expect("relay listens on 127.0.0.1")
}

fn relay(client: TcpStream, upstream: &str) -> std::io::Result<()> {
    let server = TcpStream::connect(upstream)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut c1, mut s1) = (client.try_clone()?, server.try_clone()?);
    let (mut c2, mut s2) = (client, server);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut c1, &mut s1);
        let _ = s1.shutdown(std::net::Shutdown::Write);
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut s2, &mut c2);
        let _ = c2.shutdown(std::net::Shutdown::Write);
    });
    Ok(())
}

#[allow(dead_code)]
fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(upstream) = args.next() else {
        eprintln!("usage: relay UPSTREAM [LISTEN]");
        std::process::exit(2);
    };
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let addr = start_relay_on(upstream, &listen)?;
    println!("relay listening on {addr}");
    std::io::stdout().flush()?;
    loop {
        std::thread::park();
    }
}
