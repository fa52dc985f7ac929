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

/// A stamped read's room: `recvmsg` needs initialized memory, so reads go into a zeroed scratch
/// of this size, kept for the connection, and what was read is copied out. Zeroing the reader's
/// whole spare room instead (64 KiB in the frame splitter) would cost more on every read than
/// copying a reply of a few hundred bytes; a larger reply takes more reads.
const SCRATCH: usize = 16 * 1024;

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

/// Stamped reads of one connection, with their scratch.
pub struct Stamper {
    scratch: Box<[u8]>,
}

impl Default for Stamper {
    fn default() -> Stamper {
        Stamper {
            scratch: vec![0; SCRATCH].into_boxed_slice(),
        }
    }
}

impl Stamper {
    /// Reads what has arrived on `tcp` (up to the scratch's size) and appends it to `buf`; 0
    /// bytes means the peer closed. Cancel-safe: nothing is taken from the socket unless the
    /// read returns.
    pub async fn read(
        &mut self,
        tcp: &TcpStream,
        buf: &mut BytesMut,
    ) -> io::Result<(usize, ReadStamp)> {
        loop {
            tcp.readable().await?;
            let scratch = &mut self.scratch;
            let read = tcp.try_io(Interest::READABLE, || {
                let mut iov = [IoSliceMut::new(&mut scratch[..])];
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
                    buf.extend_from_slice(&self.scratch[..n]);
                    let stamp = ReadStamp {
                        at: Instant::now(),
                        late: arrived.and_then(since),
                    };
                    return Ok((n, stamp));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
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
        let mut stamper = Stamper::default();
        server.write_all(b"early").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (n, stamp) = stamper.read(&client, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"early");
        let late = stamp.late.expect("the kernel stamps a TCP read");
        assert!(late >= Duration::from_millis(45), "read {late:?} late");
        let reader = tokio::spawn(async move {
            let mut buf = BytesMut::from(&b"kept:"[..]);
            let (n, stamp) = stamper.read(&client, &mut buf).await.unwrap();
            assert_eq!(n, 6);
            (buf.to_vec(), stamp, client, stamper)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.write_all(b"prompt").await.unwrap();
        let (got, stamp, client, mut stamper) = reader.await.unwrap();
        assert_eq!(got, b"kept:prompt", "a read appends");
        assert!(stamp.late.unwrap() < Duration::from_millis(20), "{stamp:?}");
        // More than the scratch holds comes over several reads, whole and in order.
        let big: Vec<u8> = (0..3 * SCRATCH + 17).map(|i| (i % 251) as u8).collect();
        server.write_all(&big).await.unwrap();
        let mut got = BytesMut::new();
        while got.len() < big.len() {
            let (n, _) = stamper.read(&client, &mut got).await.unwrap();
            assert!(n > 0 && n <= SCRATCH);
        }
        assert_eq!(&got[..], &big[..]);
        drop(server);
        let (n, _) = stamper.read(&client, &mut BytesMut::new()).await.unwrap();
        assert_eq!(n, 0, "a closed peer reads as 0 bytes");
    }
}
