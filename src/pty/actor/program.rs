//! Whose program a terminal runs: our own child, or one handed over by a previous server.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use portable_pty::Child;

use crate::sys;

/// The program behind a terminal: our child, or one a previous server started and
/// handed to us (we cannot wait for it, but its pidfd tells when it ends).
pub enum Program {
    Spawned(Box<dyn Child + Send + Sync>),
    Imported {
        pid: i32,
        pidfd: OwnedFd,
    },
    /// Nothing to watch (tests).
    None,
}

impl Program {
    pub(super) fn pid(&self) -> Option<i32> {
        match self {
            Program::Spawned(c) => c.process_id().map(|p| p as i32),
            Program::Imported { pid, .. } => Some(*pid),
            Program::None => None,
        }
    }

    /// Whether it has ended, with its exit code when it was ours to reap.
    pub(super) fn try_wait(&mut self) -> Option<Option<i32>> {
        match self {
            Program::Spawned(c) => match c.try_wait() {
                Ok(Some(status)) => Some(exit_code(&status)),
                Ok(None) => None,
                Err(_) => Some(None),
            },
            Program::Imported { pidfd, .. } => {
                if sys::fdpass::pidfd_alive(pidfd.as_fd()) {
                    None
                } else {
                    Some(None)
                }
            }
            Program::None => Some(None),
        }
    }

    /// Waits for it to end (after SIGKILL: briefly).
    pub(super) fn wait(&mut self) -> Option<i32> {
        match self {
            Program::Spawned(c) => c.wait().ok().and_then(|s| exit_code(&s)),
            _ => {
                let deadline = Instant::now() + Duration::from_millis(500);
                while self.try_wait().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                None
            }
        }
    }
}

/// The program's exit code; None when a signal ended it (there is no code then).
fn exit_code(status: &portable_pty::ExitStatus) -> Option<i32> {
    match status.signal() {
        Some(_) => None,
        None => Some(status.exit_code() as i32),
    }
}
