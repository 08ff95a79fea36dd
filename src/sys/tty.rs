//! The user's terminal, as seen by the client: raw mode with guaranteed restore.

use std::io;
use std::os::fd::BorrowedFd;

use nix::sys::termios::{self, SetArg, Termios};

/// Puts a terminal in raw mode; the original settings come back on drop (also on panic
/// unwinding), so the user's shell is never left in raw mode.
pub struct RawModeGuard<'a> {
    fd: BorrowedFd<'a>,
    original: Termios,
}

impl<'a> RawModeGuard<'a> {
    pub fn enter(fd: BorrowedFd<'a>) -> io::Result<RawModeGuard<'a>> {
        let original = termios::tcgetattr(fd).map_err(io::Error::from)?;
        let mut raw = original.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(fd, SetArg::TCSANOW, &raw).map_err(io::Error::from)?;
        Ok(RawModeGuard { fd, original })
    }
}

impl Drop for RawModeGuard<'_> {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(self.fd, SetArg::TCSANOW, &self.original);
    }
}

pub fn is_tty(fd: BorrowedFd<'_>) -> bool {
    termios::tcgetattr(fd).is_ok()
}
