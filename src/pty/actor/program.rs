//! Whose program a terminal runs: our own child, or one handed over by a previous server.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::sys;
use crate::sys::pty::Child;

/// The program behind a terminal: our child, or one a previous server started and
/// handed to us (we cannot wait for it, but its pidfd tells when it ends).
pub enum Program {
    Spawned(Child),
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
            Program::Spawned(c) => Some(c.pid()),
            Program::Imported { pid, .. } => Some(*pid),
            Program::None => None,
        }
    }

    /// Whether it has ended, with its exit code when it was ours to reap.
    pub(super) fn try_wait(&mut self) -> Option<Option<i32>> {
        match self {
            Program::Spawned(c) => match c.try_wait() {
                Ok(Some(status)) => Some(status.code()),
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
            Program::Spawned(c) => c.wait().ok().and_then(|s| s.code()),
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
