//! Why a live handoff did not happen: [`HandoffError`] on the old server's side,
//! [`ImportError`] (with the [`Refusal`] it sends back) on the new one's. Every error
//! leaves the old server serving as before (the handoff rolls back); its text is what the
//! requester is told, so each says what went wrong and, where there is one, what to do.

use std::path::PathBuf;

use super::{RecvError, HANDOFF_VERSION};
use crate::pty::actor::PauseError;

#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    // Found before anything changed.
    #[error("cannot hand off to {}: {cause}; give an installed herdr binary with --binary", .path.display())]
    NoBinary {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot hand off to {}: not an executable file", .0.display())]
    NotExecutable(PathBuf),
    #[error("cannot read the open-file limit: {0}")]
    NoLimit(nix::Error),
    #[error(
        "a handoff of {panes} panes needs about {needed} open files, over this server's limit \
         of {soft} (RLIMIT_NOFILE, raised at start to the hard limit); close some panes, \
         or raise the hard limit (LimitNOFILE= in a systemd unit, nofile in \
         /etc/security/limits.conf, or `ulimit -Hn` as root) and restart the server"
    )]
    TooManyFiles {
        panes: usize,
        needed: usize,
        soft: u64,
    },
    #[error("this server holds no session lock")]
    NoLock,

    // Making ready: the private socket, the terminals, what is sent.
    /// An operation of ours failed: what it was, and the system's reason.
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },
    #[error("terminal {terminal}: {cause}")]
    Pause { terminal: u64, cause: PauseError },
    #[error(
        "only {described} of {all} terminals could be described (a pane without a program or \
         outside the layout)"
    )]
    Undescribed { described: usize, all: usize },
    #[error("cannot encode the manifest: {0}")]
    Manifest(serde_json::Error),

    // The new server.
    #[error("the new server exited before it connected ({0})")]
    ExitedEarly(std::process::ExitStatus),
    #[error("the new server did not connect within {0} s")]
    NoConnection(u64),
    #[error("new server: {0}")]
    NoHello(RecvError),
    #[error("the new server said {0:?}, not a handoff hello")]
    NotAHello(String),
    #[error("the new server did not present the handoff token")]
    WrongToken,
    #[error(
        "the new binary speaks handoff version {0}, this server {HANDOFF_VERSION}; restart the \
         server instead (programs in panes will stop)"
    )]
    HandoffVersion(String),
    #[error("the new server sent a bad protocol number {0:?}")]
    BadProtocol(String),
    #[error("the new binary reports version {got}, expected {want}")]
    Version { got: String, want: String },
    #[error("the new binary reports protocol {got}, expected {want}")]
    Protocol { got: u32, want: u32 },
    #[error("waiting for {word}: {cause}")]
    NoAnswer {
        word: &'static str,
        cause: RecvError,
    },
    /// A step answered with something else: a refusal, with the new server's reason.
    #[error("the new server answered {got:?} instead of {word}")]
    Refused { got: String, word: &'static str },

    #[error("an internal error stopped the handoff (see the server log)")]
    Internal,
}

impl HandoffError {
    /// An operation of ours that failed, and why.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HandoffError {
        let what = what.into();
        move |cause| HandoffError::Io { what, cause }
    }
}

/// Why the new server refuses what the old one sent (sent back as `refused: …`).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("no manifest: {0}")]
    NoManifest(std::io::Error),
    #[error("unreadable manifest: {0}")]
    Unreadable(serde_json::Error),
    #[error("handoff version {0} offered, this binary speaks {HANDOFF_VERSION}")]
    HandoffVersion(u32),
    #[error("the manifest is for session {got}, not {want}")]
    Session { got: String, want: String },
    #[error("this binary is version {ours}, {want} was expected")]
    Version { ours: String, want: String },
    #[error("this binary speaks protocol {ours}, {want} was expected")]
    Protocol { ours: u32, want: u32 },
    #[error("the session snapshot is not usable: {0}")]
    Snapshot(crate::persist::snapshot::LoadError),
    #[error("pane p{pane}: {cause}")]
    PaneData { pane: u32, cause: std::io::Error },
    #[error("pane p{pane}: {cause}")]
    PaneImage {
        pane: u32,
        cause: crate::term::ImageError,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("receiving descriptors: {0}")]
    Descriptors(std::io::Error),
    #[error("no session lock received")]
    NoLock,
    #[error("{0}")]
    Lock(crate::server::start::NotOurLock),
    #[error("rebuilt {imported} of {expected} terminals ({notes})")]
    Rebuilt {
        imported: usize,
        expected: usize,
        notes: String,
    },
}

/// Why `herdr server import` (the new server of a live handoff) did not take over.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "herdr server import is started by a running server during a live handoff, not by \
         hand: {0}"
    )]
    NotByHand(std::env::VarError),
    #[error("cannot reach the old server at {}: {cause}", .path.display())]
    NoOldServer {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("handoff refused: {0}")]
    Refused(Refusal),
    #[error("waiting for the socket: {0}")]
    NoRelease(RecvError),
    #[error("the old server said {0:?} instead of releasing the socket")]
    NotReleased(String),
    #[error("the old server still answers on {} after {secs} s", .socket.display())]
    StillAnswers { socket: PathBuf, secs: u64 },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Start(#[from] crate::server::StartError),
}
