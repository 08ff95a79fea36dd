//! Why a client could not reach, start or stay attached to its server. Each message is
//! the one users see; an I/O or parse failure underneath is the error's `source()`, which
//! the binary prints after it — never when the message already says it.

use std::path::PathBuf;

use crate::paths::SessionName;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The socket's folder is not private (or cannot be made so).
    #[error("refusing to connect")]
    Unsafe(#[source] std::io::Error),
    #[error("cannot connect to {}", .socket.display())]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the socket is served by uid {peer}, not by you (uid {me}); refusing to connect")]
    NotOurs { peer: u32, me: u32 },
    #[error("the server closed the connection before the hello ({0})")]
    ClosedBeforeHello(std::io::Error),
    #[error("{who} did not answer the hello")]
    NoAnswer { who: String, source: std::io::Error },
    #[error("{who} answered something that is not a herdr hello: {answer:?}")]
    NotAHello {
        who: String,
        answer: String,
        source: serde_json::Error,
    },
    /// The server's own words (protocol mismatch, too many clients…).
    #[error("{0}")]
    Refused(String),
    #[error("the herdr server for session {session} failed to start ({status}):\n{log_tail}")]
    StartFailed {
        session: SessionName,
        status: std::process::ExitStatus,
        log_tail: String,
    },
    #[error("the herdr server for session {session} did not start listening within {secs}s; see {}", .log.display())]
    StartTimeout {
        session: SessionName,
        secs: u64,
        log: PathBuf,
    },
    /// A server being replaced has not bound its socket yet.
    #[error("not listening yet")]
    NotListening,
    #[error("herdr needs a terminal to attach to; run it in a terminal (or use `herdr server start` to start a session in the background)")]
    NoTerminal,
    #[error(
        "you are inside a pane of session {0}; attaching to it from here would show it inside itself. \
         Use another session (--session NAME), or detach first"
    )]
    InsidePane(SessionName),
    #[error(
        "session {from} was renamed to {to} while it ran (only programs started before reach it by the old name); use `--session {to}` (`herdr attach {to}`)"
    )]
    Renamed { from: SessionName, to: SessionName },
    /// What the client was doing when the system said no.
    #[error("{doing}")]
    Io {
        doing: String,
        source: std::io::Error,
    },
    /// A failure the system reported without more to say (cloning a socket, a timeout
    /// setting): shown as it is.
    #[error(transparent)]
    Os(#[from] std::io::Error),
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    /// Whatever the transport (remote's bridge) could not do, in its own words.
    #[error(transparent)]
    Transport(Box<dyn std::error::Error + Send + Sync>),
}

/// The message and its causes, as the binary prints an error (`message: cause: …`), for
/// the places that show one themselves (the reconnecting note).
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Names what was being done when an I/O call failed.
pub(crate) trait Doing<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> Doing<T> for std::io::Result<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Io {
            doing: what(),
            source,
        })
    }
}
