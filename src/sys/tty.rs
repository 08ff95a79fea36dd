//! The user's terminal, as seen by the client: raw mode with guaranteed restore.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

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

/// A file description of its own (non-blocking, close-on-exec, never the controlling
/// terminal) on the terminal that stdin and stdout are both on; None when they are not
/// one terminal. Being its own, its non-blocking mode leaves stdin and stdout as they are.
pub fn reopen_stdio_terminal() -> Option<std::os::fd::OwnedFd> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::{fstat, Mode};
    let (stdin, stdout) = (io::stdin(), io::stdout());
    let (i, o) = (stdin.as_fd(), stdout.as_fd());
    if !is_tty(i) || !is_tty(o) {
        return None;
    }
    let (si, so) = (fstat(i).ok()?, fstat(o).ok()?);
    if si.st_rdev != so.st_rdev {
        return None;
    }
    let path = nix::unistd::ttyname(i).ok()?;
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::open(&path, flags, Mode::empty()).ok()?;
    // The same terminal, not whatever now has that name.
    let same = fstat(fd.as_fd()).is_ok_and(|s| s.st_rdev == si.st_rdev);
    same.then_some(fd)
}
