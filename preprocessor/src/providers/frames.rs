//! Bounded frames: a provider's stdout read line by line on a thread of its own, each line at
//! most `max_line_bytes` long. A longer line is never held whole: reading stops at the limit and
//! the host is told, so a provider that floods its stdout costs about one limit of memory.
//! Lines are handed over one at a time (a rendezvous channel), so a provider that writes many
//! lines nobody asked for blocks on its own pipe instead of filling the host's memory.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Instant;

/// How much of the stream is read at once.
const READ_CHUNK: usize = 64 << 10;

/// What the reader found on the provider's stdout.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// One line (without its newline), valid UTF-8 or not.
    Line(Vec<u8>),
    /// A line grew past the limit (in bytes); nothing more is read.
    Oversized(usize),
    /// The stream ended (the provider closed its stdout or exited).
    End,
}

/// The receiving end of a provider's stdout.
#[derive(Debug)]
pub struct Frames {
    receiver: Receiver<Frame>,
    /// The reader saw the end (or the limit): later waits report [`Frame::End`] at once.
    ended: bool,
}

impl Frames {
    /// Starts reading `stdout` on a thread, lines of at most `max_line_bytes`.
    pub fn read(stdout: impl Read + Send + 'static, max_line_bytes: usize) -> Frames {
        let (sender, receiver) = sync_channel(0);
        std::thread::spawn(move || {
            let reader = BufReader::with_capacity(READ_CHUNK, stdout);
            read_frames(reader, max_line_bytes, &sender);
        });
        Frames {
            receiver,
            ended: false,
        }
    }

    /// The next frame, or `None` when `deadline` comes first.
    pub fn next(&mut self, deadline: Instant) -> Option<Frame> {
        if self.ended {
            return Some(Frame::End);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.receiver.recv_timeout(left) {
            Ok(Frame::Line(line)) => Some(Frame::Line(line)),
            Ok(last) => {
                self.ended = true;
                Some(last)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Some(Frame::End)
            }
        }
    }
}

/// The reader thread: sends each non-blank line, then how the stream ended.
fn read_frames(mut reader: impl BufRead, limit: usize, sender: &SyncSender<Frame>) {
    loop {
        let frame = match next_line(&mut reader, limit) {
            Ok(Some(line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Some(line)) => Frame::Line(line),
            Ok(None) => Frame::End,
            Err(limit) => Frame::Oversized(limit),
        };
        let last = !matches!(frame, Frame::Line(_));
        if sender.send(frame).is_err() || last {
            return;
        }
    }
}

/// The next line without its newline; `Ok(None)` at the end of the stream (a last line without
/// a newline is still a line); `Err(limit)` once the line is longer than `limit` bytes.
fn next_line(reader: &mut impl BufRead, limit: usize) -> Result<Option<Vec<u8>>, usize> {
    let mut line = Vec::new();
    loop {
        let Ok(available) = reader.fill_buf() else {
            return Ok(None);
        };
        if available.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (taken, done) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (end, true),
            None => (available.len(), false),
        };
        let needed = line.len() + taken;
        if needed > limit {
            return Err(limit);
        }
        if needed > line.capacity() {
            // Short lines grow by doubling; a long one gets the limit at once (touched only as
            // far as it is written), so no chain of reallocations outlives it.
            let grown = if needed <= READ_CHUNK {
                needed.max(line.capacity() * 2)
            } else {
                limit
            };
            line.reserve_exact(grown.min(limit) - line.len());
        }
        line.extend_from_slice(&available[..taken]);
        reader.consume(if done { taken + 1 } else { taken });
        if done {
            return Ok(Some(line));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn lines_come_one_by_one_and_blank_ones_are_skipped() {
        let mut frames = Frames::read(&b"{\"a\":1}\n\n  \n{\"b\":2}\nlast"[..], 64);
        assert_eq!(
            frames.next(soon()),
            Some(Frame::Line(b"{\"a\":1}".to_vec()))
        );
        assert_eq!(
            frames.next(soon()),
            Some(Frame::Line(b"{\"b\":2}".to_vec()))
        );
        assert_eq!(frames.next(soon()), Some(Frame::Line(b"last".to_vec())));
        assert_eq!(frames.next(soon()), Some(Frame::End));
        assert_eq!(frames.next(soon()), Some(Frame::End));
    }

    #[test]
    fn a_line_past_the_limit_stops_the_reading() {
        let mut flood = b"ok\n".to_vec();
        flood.extend(std::iter::repeat_n(b'x', 10_000));
        flood.extend_from_slice(b"\nnever read\n");
        let mut frames = Frames::read(std::io::Cursor::new(flood), 100);
        assert_eq!(frames.next(soon()), Some(Frame::Line(b"ok".to_vec())));
        assert_eq!(frames.next(soon()), Some(Frame::Oversized(100)));
        assert_eq!(frames.next(soon()), Some(Frame::End));
        // Exactly at the limit is fine.
        let mut frames = Frames::read(&b"0123456789\n"[..], 10);
        assert_eq!(
            frames.next(soon()),
            Some(Frame::Line(b"0123456789".to_vec()))
        );
    }

    #[test]
    fn a_silent_stream_times_out() {
        let (reader, _keep) = std::io::pipe().unwrap();
        let mut frames = Frames::read(reader, 64);
        assert_eq!(
            frames.next(Instant::now() + Duration::from_millis(30)),
            None
        );
    }
}
