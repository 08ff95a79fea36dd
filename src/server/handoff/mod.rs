//! Live handoff: the running server gives its session — PTY masters, emulator state,
//! layout — to a new server process (usually a new binary), and no program notices.
//!
//! The contract between the two processes is this module: a private socket, a token, a
//! versioned [`Manifest`], the descriptors, and five words in order — `validated`,
//! `restored`, `ready`, `committed`, `owned`. Until `committed` the old server can take
//! everything back (see `export.rs`); from then on the new one owns the session. The new
//! side is in `import.rs`. docs/handoff.md has the sequence and the failure table.

mod error;
pub mod export;
pub mod import;

pub use error::{HandoffError, ImportError, Refusal};

/// A live handoff asked for, waiting for clients' input to reach the panes first.
pub(crate) struct Deferred {
    pub conn: crate::server::ClientId,
    pub id: serde_json::Value,
    pub req: export::Request,
    pub deadline: std::time::Instant,
}

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::persist::snapshot::SessionSnapshot;

/// Version of this contract; both sides must speak the same one.
pub const HANDOFF_VERSION: u32 = 1;
/// Carries the token to the new process (never on its command line, which others can read).
pub const TOKEN_ENV: &str = "HERDR_HANDOFF_TOKEN";
/// Largest control message on the handoff socket (the manifest); images are per pane.
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// Everything the new server needs besides the descriptors and emulator images.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub handoff: u32,
    pub source_version: String,
    pub source_protocol: u32,
    /// What the caller expects the new binary to be; checked by both sides when given.
    pub expected_version: Option<String>,
    pub expected_protocol: Option<u32>,
    pub session: String,
    pub snapshot: SessionSnapshot,
    /// The session size (the active client's), so no pane is resized by the move.
    pub size: (u16, u16),
    pub sidebar: bool,
    /// The saver's state: its generation, and why it must not write (if so).
    pub persist_generation: u64,
    pub persist_read_only: Option<String>,
    /// One per terminal, in the order of the descriptors and images that follow.
    pub panes: Vec<PaneRuntime>,
}

/// Runtime facts of one pane that the snapshot does not hold.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PaneRuntime {
    /// The public pane number (as in the snapshot).
    pub pane: u32,
    /// The program leading the terminal's session.
    pub pid: i32,
    pub rows: u16,
    pub cols: u16,
    pub agent_state: Option<String>,
    pub agent_pid: Option<i32>,
    pub report_seq: std::collections::BTreeMap<String, u64>,
    #[serde(default)]
    pub hooked: bool,
    #[serde(default)]
    pub agent_argv: Vec<String>,
    #[serde(default)]
    pub agent_error: Option<String>,
    /// When the agent's state last changed, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub agent_since_ms: Option<u64>,
    /// False while a finished agent's pane waits to be looked at ("done").
    #[serde(default = "seen_default")]
    pub seen: bool,
    /// Set for a pane whose program ended and that stays to show its result: it has a
    /// screen but no descriptor (and `pid` means nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

/// How a finished pane's program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    /// Its exit status; none when a signal ended it.
    pub status: Option<i32>,
}

fn seen_default() -> bool {
    true
}

/// One length-prefixed message.
pub fn send(sock: &mut UnixStream, bytes: &[u8]) -> std::io::Result<()> {
    sock.write_all(&(bytes.len() as u32).to_be_bytes())?;
    sock.write_all(bytes)
}

pub fn recv(sock: &mut UnixStream, timeout: Duration) -> std::io::Result<Vec<u8>> {
    sock.set_read_timeout(Some(timeout))?;
    let mut len = [0u8; 4];
    sock.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a handoff message of {len} bytes is over the limit"),
        ));
    }
    let mut buf = vec![0u8; len];
    sock.read_exact(&mut buf)?;
    Ok(buf)
}

/// Why a step message did not come: the other side was silent, went away, or the socket
/// failed.
#[derive(Debug, thiserror::Error)]
pub enum RecvError {
    #[error("no answer within {} s", .0.as_secs_f32())]
    Silent(Duration),
    #[error("the other side closed the connection")]
    Closed,
    #[error("{0}")]
    Io(std::io::Error),
}

/// Receives a one-word (or one-line) step message.
pub fn recv_word(sock: &mut UnixStream, timeout: Duration) -> Result<String, RecvError> {
    match recv(sock, timeout) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(RecvError::Silent(timeout))
        }
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(RecvError::Closed),
        Err(e) => Err(RecvError::Io(e)),
    }
}

/// `f` over `items` on every core, results in order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                s.spawn(move || part.iter().map(f).collect::<Vec<R>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// A fresh random token, hex.
pub fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first difference.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_oversized_ones_are_refused() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        send(&mut a, b"validated").unwrap();
        assert_eq!(
            recv_word(&mut b, Duration::from_secs(5)).unwrap(),
            "validated"
        );
        a.write_all(&u32::MAX.to_be_bytes()).unwrap();
        assert!(recv(&mut b, Duration::from_secs(5)).is_err());
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let _ = &mut a;
        let err = recv_word(&mut b, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, RecvError::Silent(_)), "{err}");
        assert!(err.to_string().contains("no answer"), "{err}");
    }

    #[test]
    fn tokens_are_long_random_and_compared_exactly() {
        let (t1, t2) = (token().unwrap(), token().unwrap());
        assert_eq!(t1.len(), 64);
        assert_ne!(t1, t2);
        assert!(same_token(&t1, &t1.clone()));
        assert!(!same_token(&t1, &t2));
        assert!(!same_token(&t1, &t1[..63]));
    }
}
