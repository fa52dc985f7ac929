//! Splits a byte stream into whole wire messages, in the manner of tokio-util's length-delimited codec:
//! the length is checked before anything is reserved, and frames are handed out without a copy.

use super::error::WireError;
use super::header::MsgHeader;
use bytes::{Bytes, BytesMut};

/// How much room to make before each socket read.
const READ_RESERVE: usize = 64 * 1024;

#[derive(Debug, Default)]
pub struct FrameSplitter {
    buf: BytesMut,
}

impl FrameSplitter {
    pub fn new() -> FrameSplitter {
        FrameSplitter {
            buf: BytesMut::with_capacity(READ_RESERVE),
        }
    }

    /// The buffer to read into: it holds at most one partial frame plus whatever was just read.
    ///
    /// A frame longer than [`READ_RESERVE`] grows its room by up to five times what has arrived
    /// at each step, up to the rest of the frame: a 45 MB message is copied 5 times on its way in
    /// instead of 10 by doubling (with an allocator that does not grow a block in place, each
    /// copy holds the old block beside the new one a while), and a peer that declares a large
    /// frame and sends little is given little room, never the whole declared length.
    pub fn read_buf(&mut self) -> &mut BytesMut {
        let buffered = self.buf.len();
        let spare = self.buf.capacity() - buffered;
        let frame = MsgHeader::peek_length(&self.buf)
            .ok()
            .flatten()
            .unwrap_or(0);
        let rest = frame.saturating_sub(buffered);
        let large = frame > READ_RESERVE && rest > 0;
        if large && spare >= rest {
            // The rest of the frame fits: no copy of it for the last few bytes.
        } else if spare < READ_RESERVE / 4 {
            let step = if large {
                rest.min(buffered.saturating_mul(4)).max(READ_RESERVE)
            } else {
                READ_RESERVE
            };
            self.buf.reserve(step);
        }
        &mut self.buf
    }

    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Checks every length prefix that is already in the buffer, without consuming anything, so a
    /// caller can refuse a bad stream before passing its bytes on.
    pub fn validate(&self) -> Result<(), WireError> {
        let mut at = 0;
        while let Some(len) = MsgHeader::peek_length(&self.buf[at..])? {
            at += len;
            if at >= self.buf.len() {
                break;
            }
        }
        Ok(())
    }

    /// `Ok(Some(frame))` for a whole message, `Ok(None)` when more bytes are needed, `Err` for a
    /// length outside the protocol's bounds (the stream cannot be resynchronised after that).
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, WireError> {
        let Some(len) = MsgHeader::peek_length(&self.buf)? else {
            return Ok(None);
        };
        if self.buf.len() < len {
            return Ok(None);
        }
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// Bytes of a frame that has begun but not ended.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn stream() -> (Vec<u8>, Vec<Vec<u8>>) {
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|i| {
                OpMsg::with_body(rawdoc! { "ping": i, "$db": "admin" }, MsgFlags::empty())
                    .encode(i, 0)
            })
            .collect();
        (frames.concat(), frames)
    }

    #[test]
    fn every_split_yields_the_same_frames() {
        let (bytes, frames) = stream();
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let mut s = FrameSplitter::new();
                let mut out = Vec::new();
                for part in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                    s.extend_from_slice(part);
                    s.validate().unwrap();
                    while let Some(f) = s.next_frame().unwrap() {
                        out.push(f.to_vec());
                    }
                }
                assert_eq!(out, frames, "split at {a},{b}");
                assert_eq!(s.pending(), 0);
            }
        }
    }

    /// A frame declaring `len` bytes, all of them present.
    fn large_frame(len: usize) -> Vec<u8> {
        let mut frame = vec![0u8; len];
        frame[..4].copy_from_slice(&(len as i32).to_le_bytes());
        frame[12..16].copy_from_slice(&2013i32.to_le_bytes());
        frame
    }

    #[test]
    fn a_large_frame_grows_its_room_in_few_steps_up_to_its_end() {
        let len = 5 * 1024 * 1024;
        let frame = large_frame(len);
        let mut s = FrameSplitter::new();
        let mut cap = s.read_buf().capacity();
        let mut growths = 0;
        for chunk in frame.chunks(16 * 1024 + 7) {
            let buf = s.read_buf();
            if buf.capacity() != cap {
                growths += 1;
                cap = buf.capacity();
            }
            assert!(buf.capacity() - buf.len() >= chunk.len());
            // Never more room than five times what has arrived (plus a read's reserve).
            assert!(buf.capacity() <= 5 * buf.len() + READ_RESERVE);
            buf.extend_from_slice(chunk);
        }
        // 64 KiB, 240 KiB, 1.2 MiB, the whole frame; doubling took 7 steps.
        assert_eq!(growths, 3);
        assert!(
            cap < len + READ_RESERVE,
            "capacity {cap} for a {len}-byte frame"
        );
        assert_eq!(s.next_frame().unwrap().unwrap().len(), len);
        // Small frames are read as before: room for a whole read ahead.
        assert!(s.read_buf().capacity() >= READ_RESERVE / 4);
    }

    #[test]
    fn a_frame_that_declares_much_and_sends_little_gets_little_room() {
        let frame = large_frame(40 * 1024 * 1024);
        let mut s = FrameSplitter::new();
        for chunk in frame[..200 * 1024].chunks(16 * 1024) {
            s.read_buf().extend_from_slice(chunk);
        }
        let cap = s.read_buf().capacity();
        assert!(cap <= 5 * 200 * 1024 + READ_RESERVE, "capacity {cap}");
        assert_eq!(s.next_frame().unwrap(), None);
    }

    #[test]
    fn oversized_length_is_refused_before_buffering() {
        let mut s = FrameSplitter::new();
        s.extend_from_slice(&(64 * 1024 * 1024i32).to_le_bytes());
        assert!(s.validate().is_err());
        assert!(s.next_frame().is_err());
    }

    #[test]
    fn a_bad_length_behind_a_good_frame_is_caught_by_validate() {
        let (bytes, _) = stream();
        let mut s = FrameSplitter::new();
        s.extend_from_slice(&bytes[..bytes.len() / 3 + 20]);
        s.extend_from_slice(&[1, 0, 0, 0]);
        // The first frame is whole; validate walks past it only when its end is inside the buffer.
        let _ = s.validate();
        let mut s = FrameSplitter::new();
        let first_len = i32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        s.extend_from_slice(&bytes[..first_len]);
        s.extend_from_slice(&[3, 0, 0, 0]);
        assert!(matches!(
            s.validate(),
            Err(WireError::LengthTooSmall { length: 3 })
        ));
    }
}
