//! Reads that say when their bytes arrived: the kernel's receive timestamp of a plain TCP socket
//! (`SO_TIMESTAMPNS`), beside the moment the read returned. The difference is how late the
//! reader was to read what had arrived: a thread kept off the CPU (the shadow's mirror runs at
//! the lowest priority) would otherwise time its own waiting as the server's latency.

use bytes::BytesMut;
use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use std::io::{self, IoSliceMut};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The least room a stamped read offers (the frame splitter usually reserves more).
const MIN_READ: usize = 16 * 1024;

/// One read: when it returned, and how long after its last bytes arrived (`None` when the
/// kernel gave no timestamp, as for what arrives in the moments after stamping was first
/// switched on).
#[derive(Debug, Clone, Copy)]
pub struct ReadStamp {
    pub at: Instant,
    pub late: Option<Duration>,
}

/// Asks the kernel to stamp what arrives on `tcp`.
pub fn enable(tcp: &TcpStream) -> io::Result<()> {
    setsockopt(tcp, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)
}

/// Reads what has arrived on `tcp` into `buf` (appended); 0 bytes means the peer closed.
/// Cancel-safe: nothing is taken from the socket unless the read returns.
pub async fn read(tcp: &TcpStream, buf: &mut BytesMut) -> io::Result<(usize, ReadStamp)> {
    loop {
        tcp.readable().await?;
        let start = buf.len();
        let room = (buf.capacity() - start).max(MIN_READ);
        buf.resize(start + room, 0);
        let read = tcp.try_io(Interest::READABLE, || {
            let mut iov = [IoSliceMut::new(&mut buf[start..])];
            let mut space = nix::cmsg_space!(TimeSpec);
            let fd = tcp.as_raw_fd();
            let msg = recvmsg::<()>(fd, &mut iov, Some(&mut space), MsgFlags::MSG_DONTWAIT)
                .map_err(io::Error::from)?;
            let arrived = msg.cmsgs().ok().and_then(|mut all| {
                all.find_map(|c| match c {
                    ControlMessageOwned::ScmTimestampns(t) => Some(t),
                    _ => None,
                })
            });
            Ok((msg.bytes, arrived))
        });
        match read {
            Ok((n, arrived)) => {
                buf.truncate(start + n);
                let stamp = ReadStamp {
                    at: Instant::now(),
                    late: arrived.and_then(since),
                };
                return Ok((n, stamp));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => buf.truncate(start),
            Err(e) => {
                buf.truncate(start);
                return Err(e);
            }
        }
    }
}

/// How long ago the kernel's (wall-clock) stamp `t` was; `None` if the clock went back.
fn since(t: TimeSpec) -> Option<Duration> {
    let secs = u64::try_from(t.tv_sec()).ok()?;
    let nanos = u32::try_from(t.tv_nsec()).ok()?;
    let arrived = UNIX_EPOCH + Duration::new(secs, nanos);
    SystemTime::now().duration_since(arrived).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// Bytes that arrived while the reader was away are read late by about as long as it was
    /// away; bytes read as they come are read at once.
    #[tokio::test]
    async fn a_late_read_says_how_late() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        enable(&client).unwrap();
        // The kernel turns stamping on (a static key, switched by deferred work) moments after the
        // first socket asks: what arrives before that is unstamped (`late: None`).
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut buf = BytesMut::with_capacity(64);
        server.write_all(b"early").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (n, stamp) = read(&client, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"early");
        let late = stamp.late.expect("the kernel stamps a TCP read");
        assert!(late >= Duration::from_millis(45), "read {late:?} late");
        let reader = tokio::spawn(async move {
            let mut buf = BytesMut::with_capacity(64);
            let (n, stamp) = read(&client, &mut buf).await.unwrap();
            (buf[..n].to_vec(), stamp, client)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.write_all(b"prompt").await.unwrap();
        let (got, stamp, client) = reader.await.unwrap();
        assert_eq!(got, b"prompt");
        assert!(stamp.late.unwrap() < Duration::from_millis(20), "{stamp:?}");
        drop(server);
        let (n, _) = read(&client, &mut BytesMut::new()).await.unwrap();
        assert_eq!(n, 0, "a closed peer reads as 0 bytes");
    }
}
