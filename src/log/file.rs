//! The log file, rotated by size: once `server.log` has passed its bound it becomes
//! `server.log.1` (the older ones move up, the oldest kept is overwritten), a new
//! `server.log` is created 0600, and the descriptor the log is written to (standard error)
//! is pointed at it, so that whatever else is written there (a panic's message) lands in
//! the current file too.
//!
//! Other processes may write the same file through a descriptor of their own (during a
//! live handoff the old and the new server both do; a server that gives way to one
//! already running says so there). Whichever passes the bound first rotates, holding a
//! lock on the file it rotates; one that finds the file behind its descriptor already
//! renamed only follows to the new `server.log`.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where records go: this process's standard error, or (for tests) a descriptor of its
/// own.
enum Out {
    Stderr(std::io::Stderr),
    Fd(OwnedFd),
}

impl Out {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Out::Stderr(s) => s.as_fd(),
            Out::Fd(fd) => fd.as_fd(),
        }
    }

    fn point_at(&mut self, file: BorrowedFd<'_>) -> io::Result<()> {
        match self {
            Out::Stderr(_) => crate::sys::redirect_stderr(file),
            Out::Fd(fd) => crate::sys::redirect(file, fd),
        }
    }
}

/// A log written through one descriptor and, when that is the file at `path`, rotated.
pub struct Rotating {
    out: Out,
    path: PathBuf,
    /// Whether `out` is `path`'s file (else it is a terminal, a pipe or another file,
    /// written as it is).
    rotates: bool,
    /// Whether `out` is a regular file (writes to anything else first make sure they would
    /// not block).
    regular: bool,
    bound: u64,
    keep: usize,
    /// After a rotation failed, the size at which it is tried again.
    retry_at: u64,
}

impl Rotating {
    /// This process's standard error, rotated when it is the file at `path`.
    pub fn stderr(path: &Path, bound: u64, keep: usize) -> Rotating {
        Rotating::new(Out::Stderr(std::io::stderr()), path, bound, keep)
    }

    /// `fd`, rotated when it is the file at `path`: the file is then reopened onto the
    /// same descriptor number, as standard error is.
    pub fn fd(fd: OwnedFd, path: &Path, bound: u64, keep: usize) -> Rotating {
        Rotating::new(Out::Fd(fd), path, bound, keep)
    }

    fn new(out: Out, path: &Path, bound: u64, keep: usize) -> Rotating {
        let st = nix::sys::stat::fstat(out.fd()).ok();
        let regular = st.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
        let rotates = st.is_some_and(|st| same_file(path, &st));
        Rotating {
            out,
            path: path.to_path_buf(),
            rotates,
            regular,
            bound,
            keep,
            retry_at: 0,
        }
    }

    /// The file now lives at `path` (moved with its folder).
    pub fn moved(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }

    /// Writes one line in one write, then rotates if the file has passed its bound. An
    /// error is returned for the caller to count, never retried.
    pub fn write(&mut self, line: &[u8]) -> io::Result<()> {
        let fd = self.out.fd();
        if !self.regular && !crate::sys::poll_writable(fd, Duration::ZERO)? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = nix::unistd::write(fd, line).map_err(io::Error::from)?;
        let rotated = if self.rotates {
            self.rotate_if_due()
        } else {
            Ok(())
        };
        if n < line.len() {
            return Err(io::ErrorKind::WriteZero.into());
        }
        rotated
    }

    fn rotate_if_due(&mut self) -> io::Result<()> {
        let st = nix::sys::stat::fstat(self.out.fd()).map_err(io::Error::from)?;
        let size = st.st_size.max(0) as u64;
        if size < self.bound.max(self.retry_at) {
            return Ok(());
        }
        match self.rotate(&st) {
            Ok(()) => {
                self.retry_at = 0;
                Ok(())
            }
            Err(e) => {
                // Not again at every line: once it has grown by another bound.
                self.retry_at = size.saturating_add(self.bound);
                Err(e)
            }
        }
    }

    fn rotate(&mut self, ours: &nix::sys::stat::FileStat) -> io::Result<()> {
        // Locked through a descriptor of our own: another process's (even one sharing our
        // open file) is then excluded. The lock goes with `lock` at the end.
        let lock = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            // Renamed by another process that is creating the new one: the next line
            // looks again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if crate::sys::flock_exclusive_nb(lock.as_fd()).is_err() {
            return Ok(()); // another process is rotating it
        }
        if same_file(&self.path, ours) {
            for i in (1..self.keep).rev() {
                match std::fs::rename(numbered(&self.path, i), numbered(&self.path, i + 1)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            std::fs::rename(&self.path, numbered(&self.path, 1))?;
        }
        // Ours, or the one another process created when it rotated.
        let new = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&self.path)?;
        self.out.point_at(new.as_fd())
    }
}

/// Whether `path` is the file `st` describes.
fn same_file(path: &Path, st: &nix::sys::stat::FileStat) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.dev() == st.st_dev && m.ino() == st.st_ino)
}

/// `server.log.<n>`.
pub fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".{n}"));
    PathBuf::from(name)
}
