//! API connections: the reader thread that turns request lines into events, and the
//! writer thread that drains a connection's queue of reply and event lines.
//!
//! Invariant: what is queued is bounded per connection (lines and bytes) and across all
//! connections (bytes), and every queued byte is given back to both counts when its line
//! is written or dropped, so a peer that never reads holds a bounded share and loses it
//! when it is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::{Event, EventTx};
use super::ClientId;

/// Longest API request line; a longer one is answered with an error and the connection
/// closed, so a peer cannot make the server buffer without limit.
pub const MAX_API_LINE: usize = 1024 * 1024;
/// Reply and event lines queued per API connection; a peer that stops reading is
/// disconnected when its queue is full.
const API_QUEUE_LINES: usize = 4096;
/// Reply/event bytes queued per API connection before it counts as not reading.
const API_QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// Reply/event bytes queued across all API connections: 20 peers that asked for big
/// replies and never read them held 1.1 GB before there was a bound in all. With it, the
/// queues hold at most this much plus [`API_QUEUE_OWN_BYTES`] per connection.
pub const API_QUEUE_TOTAL_BYTES: usize = 64 * 1024 * 1024;
/// The first bytes queued on a connection are not refused for the budget in all, so a
/// small reply (a ping, an error) always gets through: every connection may queue this
/// much beyond the budget.
const API_QUEUE_OWN_BYTES: usize = 64 * 1024;
/// Longest reply or event line: the same as a connection's queue, so any line that is
/// not refused as too large fits an empty queue.
pub const MAX_API_REPLY: usize = API_QUEUE_BYTES;
/// A connection with bytes queued whose writer has written nothing for this long is
/// stalled: when the budget in all runs out, stalled connections are dropped first. (A
/// reading peer takes a socket buffer's worth in microseconds.)
const API_STALL: Duration = Duration::from_secs(1);
/// Writes are made in pieces of this size, so progress is seen within a big line too.
const API_WRITE_PIECE: usize = 64 * 1024;

/// Bytes queued on every API connection together.
static API_QUEUED_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// Whether the budget of queued reply bytes in all is spent.
pub fn api_budget_spent() -> bool {
    API_QUEUED_TOTAL.load(Ordering::Acquire) >= API_QUEUE_TOTAL_BYTES
}

/// Why a line was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// This connection's own queue is full: its peer is not reading.
    Behind,
    /// The budget of all connections together is spent (the line is given back).
    Budget(String),
}

/// What a connection has queued, shared by the server thread and its writer thread.
struct ApiQueue {
    state: Mutex<QueueState>,
}

struct QueueState {
    bytes: usize,
    /// Its bytes still count in [`API_QUEUED_TOTAL`] (not after the connection is closed).
    counted: bool,
    /// When the writer last made progress, or the queue last went from empty to not.
    moved: Instant,
}

impl ApiQueue {
    fn state(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A queued line (newline included); its bytes are given back when it is dropped, written
/// or not.
struct Line {
    bytes: Vec<u8>,
    queue: Arc<ApiQueue>,
}

impl Drop for Line {
    fn drop(&mut self) {
        let mut st = self.queue.state();
        st.bytes -= self.bytes.len();
        if st.counted {
            API_QUEUED_TOTAL.fetch_sub(self.bytes.len(), Ordering::AcqRel);
        }
    }
}

/// The server's handle on one API connection's outgoing lines.
pub struct ApiWriter {
    /// (A queue that holds only what waits: a `sync_channel` of `API_QUEUE_LINES` was
    /// 160 KiB for every connection, a subscriber's all its life.)
    tx: crate::queue::Tx<Line>,
    pub(in crate::server) stream: UnixStream,
    /// Bytes queued and not yet written: replies can be large (`pane.read`), so the queue
    /// is bounded in bytes as well as in lines, here and across connections.
    queue: Arc<ApiQueue>,
}

impl ApiWriter {
    /// Queues one line (without its newline).
    pub fn try_send(&self, line: String) -> Result<(), Refused> {
        self.queue_line(line, true)
    }

    /// Queues a short error line even when the budget in all is spent (only this
    /// connection's own bound applies), so a refused request always hears why.
    pub fn try_send_error(&self, line: String) -> Result<(), Refused> {
        self.queue_line(line, false)
    }

    fn queue_line(&self, line: String, budgeted: bool) -> Result<(), Refused> {
        let len = line.len() + 1;
        {
            let mut st = self.queue.state();
            // (Not counted any more: the connection was closed.)
            if st.bytes + len > API_QUEUE_BYTES || !st.counted {
                return Err(Refused::Behind);
            }
            let total = API_QUEUED_TOTAL.fetch_add(len, Ordering::AcqRel) + len;
            let own = st.bytes + len <= API_QUEUE_OWN_BYTES;
            if budgeted && !own && total > API_QUEUE_TOTAL_BYTES {
                API_QUEUED_TOTAL.fetch_sub(len, Ordering::AcqRel);
                return Err(Refused::Budget(line));
            }
            if st.bytes == 0 {
                st.moved = Instant::now();
            }
            st.bytes += len;
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let line = Line {
            bytes,
            queue: self.queue.clone(),
        };
        // A line that cannot be queued gives its bytes back as it is dropped.
        self.tx
            .send_within(line, API_QUEUE_LINES)
            .map_err(|_| Refused::Behind)
    }

    /// Whether its peer has left bytes unread for [`API_STALL`] or longer.
    pub fn stalled(&self) -> bool {
        let st = self.queue.state();
        st.bytes > 0 && st.moved.elapsed() >= API_STALL
    }

    /// Bytes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.queue.state().bytes
    }

    /// Ends the connection; what it had queued no longer counts in the budget of all
    /// (its writer thread frees it as it stops).
    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        let mut st = self.queue.state();
        if st.counted {
            st.counted = false;
            API_QUEUED_TOTAL.fetch_sub(st.bytes, Ordering::AcqRel);
        }
    }

    /// Whether the peer is gone entirely (it cannot read a reply any more).
    pub fn peer_gone(&self) -> bool {
        crate::sys::hung_up(self.stream.as_fd())
    }

    /// Waits until everything queued is written (for a last reply before the process
    /// exits); false if that took longer than `timeout`.
    pub fn flush_wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.queued() > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

impl ApiWriter {
    /// The writer of a connection, with its thread.
    fn spawn(
        id: ClientId,
        stream: UnixStream,
        mut write_half: UnixStream,
    ) -> std::io::Result<ApiWriter> {
        let (tx, rx) = crate::queue::queue::<Line>();
        let queue = Arc::new(ApiQueue {
            state: Mutex::new(QueueState {
                bytes: 0,
                counted: true,
                moved: Instant::now(),
            }),
        });
        std::thread::Builder::new()
            .name(format!("herdr-api-write-{id}"))
            .spawn(move || {
                while let Ok(line) = rx.recv() {
                    if !write_line_noting(&mut write_half, &line) {
                        break;
                    }
                }
                let _ = write_half.shutdown(std::net::Shutdown::Both);
                // Dropping `rx` here frees (and gives back) whatever was still queued.
            })?;
        Ok(ApiWriter { tx, stream, queue })
    }
}

/// Writes a line in pieces, noting progress after each.
fn write_line_noting(stream: &mut UnixStream, line: &Line) -> bool {
    for piece in line.bytes.chunks(API_WRITE_PIECE) {
        if stream.write_all(piece).is_err() {
            return false;
        }
        line.queue.state().moved = Instant::now();
    }
    true
}

/// `halves`: the connection for the server thread, and for the writer thread.
pub(super) fn api_loop(
    id: ClientId,
    [stream, write_half]: [UnixStream; 2],
    mut reader: BufReader<UnixStream>,
    events: EventTx,
) {
    let Ok(writer) = ApiWriter::spawn(id, stream, write_half) else {
        return;
    };
    let peer_pid = crate::sys::peer_pid(std::os::fd::AsFd::as_fd(&writer.stream)).unwrap_or(0);
    if events
        .send(Event::ApiOpen {
            id,
            writer,
            peer_pid,
        })
        .is_err()
    {
        return;
    }
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_API_LINE as u64 + 1;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            if line.len() > MAX_API_LINE {
                let _ = events.send(Event::ApiTooLong(id));
            }
            // Otherwise: end of stream in the middle of a line, nothing to answer.
            break;
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        if events.send(Event::ApiRequest { id, line: text }).is_err() {
            break;
        }
    }
    let _ = events.send(Event::ApiClosed(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total() -> usize {
        API_QUEUED_TOTAL.load(Ordering::Acquire)
    }

    #[test]
    fn the_budget_in_all_refuses_big_lines_and_comes_back_when_a_connection_closes() {
        // Two peers that never read.
        let (a, _peer_a) = UnixStream::pair().unwrap();
        let (b, _peer_b) = UnixStream::pair().unwrap();
        let (a, b) = (
            ApiWriter::spawn(1, a.try_clone().unwrap(), a).unwrap(),
            ApiWriter::spawn(2, b.try_clone().unwrap(), b).unwrap(),
        );
        let mib = "x".repeat((1 << 20) - 1);
        // A's own queue takes up to the whole budget in all.
        let mut sent = 0;
        while a.try_send(mib.clone()).is_ok() {
            sent += 1;
            assert!(sent <= 64, "the budget did not hold");
        }
        assert!(sent >= 60, "{sent}");
        // B's big line is refused (and given back); its small ones still pass.
        assert_eq!(b.try_send(mib.clone()), Err(Refused::Budget(mib.clone())));
        assert!(b.try_send("{\"id\":1,\"result\":{}}".into()).is_ok());
        assert!(b.try_send_error("x".repeat(100 * 1024)).is_ok());
        // Closing A gives its share back at once, before its thread has freed anything.
        let before = total();
        a.close();
        assert!(
            total() + 60 * (1 << 20) <= before,
            "{} → {}",
            before,
            total()
        );
        assert!(b.try_send(mib.clone()).is_ok());
        // Once B is closed and its thread has dropped its lines, nothing is counted.
        b.close();
        let deadline = Instant::now() + Duration::from_secs(20);
        while b.queued() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(b.queued(), 0);
        assert!(
            a.try_send("late".into()).is_err(),
            "a closed connection takes no more"
        );
    }
}
