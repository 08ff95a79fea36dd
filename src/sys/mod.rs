//! The only module allowed to use `unsafe` or raw libc calls. Everything here is a small,
//! safe function over `OwnedFd`/`BorrowedFd`; callers never see a raw fd they must close.
//!
//! Invariants: every fd created here is CLOEXEC; EINTR is retried (poll recomputes its
//! deadline); POLLNVAL/POLLERR are reported as errors, never spun on.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

pub mod clock;
pub mod epoll;
pub mod fdpass;
pub mod netwatch;
pub mod nofile;
pub mod pty;
pub mod stack;
pub mod startup;
pub mod tty;

/// Tests that count this process's fds must not overlap with tests that open some.
#[cfg(test)]
static TEST_FD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds [`TEST_FD_LOCK`] for the rest of the calling test (a test that panicked while
/// holding it leaves nothing half done that the next one must see).
#[cfg(test)]
pub(crate) fn test_fd_lock() -> std::sync::MutexGuard<'static, ()> {
    TEST_FD_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The system's page size (4 KiB on x86-64; 16 or 64 KiB on some ARM systems, where a
/// range given to `madvise` must be made of whole pages of that size: it rounds a
/// range's end up).
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; no memory is involved.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    // (Unknown: the largest page in use, whose multiples are whole pages of any size.)
    usize::try_from(page)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(65536)
}

fn errno_to_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// Duplicates `fd` into a new descriptor with `FD_CLOEXEC` set, so it never leaks into
/// children we spawn later.
pub fn dup_cloexec(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let raw = fcntl(fd, FcntlArg::F_DUPFD_CLOEXEC(0)).map_err(errno_to_io)?;
    // SAFETY: F_DUPFD_CLOEXEC returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(errno_to_io)?;
    let flags = OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK;
    fcntl(fd, FcntlArg::F_SETFL(flags)).map_err(errno_to_io)?;
    Ok(())
}

/// A non-blocking self-pipe: any thread can `wake()` an actor sleeping in `poll`.
#[derive(Debug)]
pub struct WakePipe {
    read: OwnedFd,
    write: std::sync::Arc<OwnedFd>,
}

/// The write end of a [`WakePipe`], cheap to clone and share.
#[derive(Debug, Clone)]
pub struct Waker {
    write: std::sync::Arc<OwnedFd>,
}

impl WakePipe {
    pub fn new() -> io::Result<WakePipe> {
        let (r, w) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).map_err(errno_to_io)?;
        Ok(WakePipe {
            read: r,
            write: std::sync::Arc::new(w),
        })
    }

    pub fn waker(&self) -> Waker {
        Waker {
            write: self.write.clone(),
        }
    }

    /// Empties the pipe so the next poll sleeps again.
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        loop {
            match nix::unistd::read(&self.read, &mut buf) {
                Ok(n) if n == buf.len() => continue,
                _ => break,
            }
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

impl Waker {
    /// Never blocks: a full pipe already guarantees a wake-up.
    pub fn wake(&self) {
        let _ = nix::unistd::write(&*self.write, &[1u8]);
    }
}

/// What `poll_pty_and_wake` found ready.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    pub readable: bool,
    pub writable: bool,
    /// The other side hung up (child gone). Still read until EOF/EIO to get the last bytes.
    pub hangup: bool,
    pub woken: bool,
}

/// Sleeps until `fd` is readable (or writable, when `want_write`), the wake pipe fires, or
/// `timeout` passes (`None` = forever). EINTR restarts with the remaining time.
pub fn poll_pty_and_wake(
    fd: BorrowedFd<'_>,
    wake: &WakePipe,
    want_read: bool,
    want_write: bool,
    timeout: Option<Duration>,
) -> io::Result<Readiness> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let mut flags = PollFlags::empty();
        if want_read {
            flags |= PollFlags::POLLIN;
        }
        if want_write {
            flags |= PollFlags::POLLOUT;
        }
        let mut fds = [
            PollFd::new(fd, flags),
            PollFd::new(wake.fd(), PollFlags::POLLIN),
        ];
        let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match poll(&mut fds, poll_timeout(remaining)) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(errno_to_io(e)),
            Ok(_) => {
                let pty = fds[0].revents().unwrap_or(PollFlags::empty());
                let wk = fds[1].revents().unwrap_or(PollFlags::empty());
                if pty.contains(PollFlags::POLLNVAL) || wk.contains(PollFlags::POLLNVAL) {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "poll: fd not open",
                    ));
                }
                return Ok(Readiness {
                    readable: pty.contains(PollFlags::POLLIN),
                    writable: pty.contains(PollFlags::POLLOUT),
                    hangup: pty.intersects(PollFlags::POLLHUP | PollFlags::POLLERR),
                    woken: wk.contains(PollFlags::POLLIN),
                });
            }
        }
    }
}

/// Non-blocking read; `Ok(None)` means "would block". EIO (Linux, slave closed) is EOF.
pub fn read_nb(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match nix::unistd::read(fd, buf) {
            Ok(n) => return Ok(Some(n)),
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(Errno::EIO) => return Ok(Some(0)),
            Err(e) => return Err(errno_to_io(e)),
        }
    }
}

/// Sleeps until the wake pipe fires or `timeout` passes (no terminal to watch).
pub fn poll_wake(wake: &WakePipe, timeout: Option<Duration>) -> io::Result<Readiness> {
    let woken = poll_readable(&[wake.fd()], timeout)?[0];
    Ok(Readiness {
        readable: false,
        writable: false,
        hangup: false,
        woken,
    })
}

/// Waits up to `timeout` for `fd` to take a write (or to fail: an error or hangup also
/// counts, so the write that follows reports it).
pub fn poll_writable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut pfds = [PollFd::new(fd, PollFlags::POLLOUT)];
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    match poll(
        &mut pfds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    ) {
        Ok(_) => Ok(pfds[0].revents().is_some_and(|r| !r.is_empty())),
        Err(Errno::EINTR) => Ok(false),
        Err(e) => Err(errno_to_io(e)),
    }
}

/// Whether whoever read `fd` (a pipe or socket we write to) has gone: a write to it fails
/// with EPIPE. Tells "our output's reader left" from a broken connection elsewhere.
pub fn reader_gone(fd: BorrowedFd<'_>) -> bool {
    let mut pfds = [PollFd::new(fd, PollFlags::POLLOUT)];
    match poll(&mut pfds, PollTimeout::ZERO) {
        Ok(_) => pfds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)),
        Err(_) => false,
    }
}

/// Whether the other end of a socket is gone entirely (a hangup, not just the end of what
/// it sends: a peer that only shut down its writing still reads).
pub fn hung_up(fd: BorrowedFd<'_>) -> bool {
    let mut pfds = [PollFd::new(fd, PollFlags::empty())];
    matches!(poll(&mut pfds, PollTimeout::ZERO), Ok(n) if n > 0)
        && pfds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// Non-blocking write; `Ok(None)` means "would block".
pub fn write_nb(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<Option<usize>> {
    loop {
        match nix::unistd::write(fd, buf) {
            Ok(n) => return Ok(Some(n)),
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(errno_to_io(e)),
        }
    }
}

nix::ioctl_write_ptr_bad!(tiocswinsz, libc::TIOCSWINSZ, libc::winsize);
nix::ioctl_read_bad!(tiocgwinsz, libc::TIOCGWINSZ, libc::winsize);

/// Sets a terminal's size (the kernel sends SIGWINCH to its foreground group).
pub fn set_winsize(
    fd: BorrowedFd<'_>,
    rows: u16,
    cols: u16,
    px_w: u16,
    px_h: u16,
) -> io::Result<()> {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: px_w,
        ws_ypixel: px_h,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which lives for the call.
    unsafe { tiocswinsz(fd.as_raw_fd(), &ws) }.map_err(errno_to_io)?;
    Ok(())
}

/// Returns (rows, cols) of a terminal.
pub fn get_winsize(fd: BorrowedFd<'_>) -> io::Result<(u16, u16)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the pointer, which lives for the call.
    unsafe { tiocgwinsz(fd.as_raw_fd(), &mut ws) }.map_err(errno_to_io)?;
    Ok((ws.ws_row, ws.ws_col))
}

/// The foreground process group of a terminal (the program "in front" in a pane).
pub fn foreground_pgrp(fd: BorrowedFd<'_>) -> Option<i32> {
    nix::unistd::tcgetpgrp(fd).ok().map(|p| p.as_raw())
}

/// The uid of the process at the other end of a unix socket (SO_PEERCRED).
pub fn peer_uid(sock: BorrowedFd<'_>) -> io::Result<u32> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let cred = getsockopt(&sock, PeerCredentials).map_err(errno_to_io)?;
    Ok(cred.uid())
}

/// The pid of the process at the other end of a unix socket (SO_PEERCRED).
pub fn peer_pid(sock: BorrowedFd<'_>) -> io::Result<i32> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let cred = getsockopt(&sock, PeerCredentials).map_err(errno_to_io)?;
    Ok(cred.pid())
}

/// Lists the open descriptors of this process with what they point at (for leak tests
/// and diagnostics).
pub fn open_fds() -> Vec<(RawFd, String)> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for entry in dir.flatten() {
            if let Some(n) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<RawFd>().ok())
            {
                let target = std::fs::read_link(entry.path())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                out.push((n, target));
            }
        }
    }
    out
}

/// `timeout` (`None`: for ever) as `poll` and `epoll_wait` take it, rounded up to whole
/// milliseconds, so a deadline is never woken up for a moment early and spun on.
fn poll_timeout(timeout: Option<Duration>) -> PollTimeout {
    match timeout {
        Some(d) => {
            let ms = d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
        }
        None => PollTimeout::NONE,
    }
}

/// Waits until one of `fds` is readable (or hung up, or in error), or `timeout` passes
/// (`None` = forever); which ones are. EINTR returns early with none ready.
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<PollFd> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    match poll(&mut pfds, poll_timeout(timeout)) {
        Ok(_) => Ok(pfds
            .iter()
            .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
            .collect()),
        Err(Errno::EINTR) => Ok(vec![false; fds.len()]),
        Err(e) => Err(errno_to_io(e)),
    }
}

/// Reads what a socket has without blocking (MSG_DONTWAIT: the socket itself stays in
/// blocking mode for the other descriptors sharing it). `None`: nothing to read now.
pub fn recv_nb(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    use nix::sys::socket::{recv, MsgFlags};
    loop {
        match recv(sock.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT) {
            Ok(n) => return Ok(Some(n)),
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(errno_to_io(e)),
        }
    }
}

/// Takes an exclusive `flock` on `fd` without waiting. There is deliberately no unlock:
/// the lock belongs to the open file, and it ends when its last descriptor closes — in
/// whichever process that is (a handed-over lock must outlive the process that took it).
pub fn flock_exclusive_nb(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: flock on a descriptor we borrow; no memory is involved.
    let r = unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pipe, both ends CLOEXEC: for a child to say something once through the write end,
/// which [`pass_fd`] gives to that child alone.
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(errno_to_io)
}

/// Makes the program `cmd` starts get `fd` as its descriptor `target`: duplicated in the
/// child between fork and exec, so no other process we start meanwhile can inherit it.
/// `fd` must stay open until `cmd` is spawned.
pub fn pass_fd(cmd: &mut std::process::Command, fd: BorrowedFd<'_>, target: RawFd) {
    use std::os::unix::process::CommandExt;
    let raw = fd.as_raw_fd();
    let hook = move || {
        // SAFETY: dup2 and fcntl are async-signal-safe and touch no memory; they run in
        // the forked child, on descriptor numbers only.
        unsafe {
            if raw == target {
                // dup2 onto itself would keep CLOEXEC: clear it instead.
                if libc::fcntl(raw, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, target) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook only makes the async-signal-safe calls above (no allocation, no
    // locks), as code between fork and exec must.
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Takes ownership of a descriptor this process inherited under a number given on its
/// command line (see [`pass_fd`]), and makes it CLOEXEC so no child of ours
/// inherits it in turn. Refuses the standard streams and numbers that are not open.
pub fn take_inherited(raw: RawFd) -> io::Result<OwnedFd> {
    if raw <= 2 {
        return Err(io::Error::other(format!(
            "descriptor {raw} is a standard stream, not an inherited one"
        )));
    }
    // SAFETY: fcntl(F_GETFD) on any integer is memory-safe: a closed one yields EBADF.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor is open, and it was inherited for us: nothing else in this
    // process knows its number (callers take it before opening anything of their own).
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    fcntl(
        fd.as_fd(),
        FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map_err(errno_to_io)?;
    Ok(fd)
}

/// Sends `sig` to the process group `pgid` (a pane's session leader leads its group) and,
/// in case it changed group, to the process itself.
pub fn signal_group(pgid: i32, sig: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(pgid);
    let _ = nix::sys::signal::killpg(pid, sig);
    let _ = nix::sys::signal::kill(pid, sig);
}

/// Sends `sig` to the process `pid` (gone already: nothing happens).
pub fn signal_pid(pid: i32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
}

/// A moment as the C library's idea of the time zone has it (`TZ`, /etc/localtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i32,
    /// 1 to 12.
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// Seconds east of UTC (`+0100` is 3600).
    pub utc_offset: i64,
}

/// `unix` seconds in local time (`None` if the C library cannot say).
pub fn local_time(unix: i64) -> Option<LocalTime> {
    let t: libc::time_t = unix as libc::time_t;
    // SAFETY: `tm` is plain data that `localtime_r` fills in; both pointers are valid for
    // the call, and `localtime_r` (unlike `localtime`) keeps no shared state.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    ok.then(|| LocalTime {
        year: tm.tm_year + 1900,
        month: (tm.tm_mon + 1) as u32,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        minute: tm.tm_min as u32,
        second: tm.tm_sec as u32,
        utc_offset: tm.tm_gmtoff as i64,
    })
}

/// The local time of day of `unix` seconds as `HH:MM` (the status line's clock).
pub fn local_hhmm(unix: i64) -> String {
    local_time(unix)
        .map(|t| format!("{:02}:{:02}", t.hour, t.minute))
        .unwrap_or_default()
}

/// Points this process's standard error (fd 2) at `file`: whatever is written there from
/// now on (a panic's message, a library's warning) goes to it. The descriptor is
/// inherited by children, as standard error is.
pub fn redirect_stderr(file: BorrowedFd<'_>) -> io::Result<()> {
    nix::unistd::dup2_stderr(file).map_err(errno_to_io)
}

/// Points the descriptor `onto` at `file`, keeping its number (and `FD_CLOEXEC`).
pub fn redirect(file: BorrowedFd<'_>, onto: &mut OwnedFd) -> io::Result<()> {
    nix::unistd::dup3(file, onto, OFlag::O_CLOEXEC).map_err(errno_to_io)
}

/// This machine's host name, as the kernel has it (empty if it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn wake_interrupts_an_endless_poll_and_drain_rearms_it() {
        let (a, _b) = UnixStream::pair().unwrap();
        let pipe = WakePipe::new().unwrap();
        let waker = pipe.waker();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            waker.wake();
        });
        let r = poll_pty_and_wake(a.as_fd(), &pipe, true, false, None).unwrap();
        assert!(r.woken && !r.readable);
        t.join().unwrap();
        pipe.drain();
        let r = poll_pty_and_wake(
            a.as_fd(),
            &pipe,
            true,
            false,
            Some(Duration::from_millis(20)),
        )
        .unwrap();
        assert_eq!(r, Readiness::default(), "timed out with nothing ready");
    }

    #[test]
    fn many_wakes_never_block_the_waker() {
        let pipe = WakePipe::new().unwrap();
        let waker = pipe.waker();
        for _ in 0..100_000 {
            waker.wake(); // the pipe fills; wake must return at once
        }
        pipe.drain();
    }

    #[test]
    fn readiness_reports_readable_and_hangup() {
        let (a, b) = UnixStream::pair().unwrap();
        set_nonblocking(a.as_fd()).unwrap();
        let pipe = WakePipe::new().unwrap();
        std::io::Write::write_all(&mut &b, b"x").unwrap();
        let r = poll_pty_and_wake(a.as_fd(), &pipe, true, true, None).unwrap();
        assert!(r.readable && r.writable);
        let mut buf = [0u8; 8];
        assert_eq!(read_nb(a.as_fd(), &mut buf).unwrap(), Some(1));
        assert_eq!(read_nb(a.as_fd(), &mut buf).unwrap(), None, "would block");
        drop(b);
        let r = poll_pty_and_wake(a.as_fd(), &pipe, true, false, None).unwrap();
        assert!(r.readable || r.hangup);
        assert_eq!(
            read_nb(a.as_fd(), &mut buf).unwrap(),
            Some(0),
            "end of stream"
        );
    }

    #[test]
    fn dup_is_cloexec_and_winsize_round_trips_on_a_real_pty() {
        let _guard = crate::sys::test_fd_lock();
        let pair = pty::open_pair(24, 80).unwrap();
        let master = dup_cloexec(pair.master.as_fd()).unwrap();
        let flags = fcntl(master.as_fd(), FcntlArg::F_GETFD).unwrap();
        assert!(
            nix::fcntl::FdFlag::from_bits_retain(flags).contains(nix::fcntl::FdFlag::FD_CLOEXEC)
        );
        set_winsize(master.as_fd(), 33, 101, 0, 0).unwrap();
        assert_eq!(get_winsize(master.as_fd()).unwrap(), (33, 101));
    }

    #[test]
    fn a_passed_pipe_reaches_that_child_only_and_is_taken_over_cloexec() {
        use std::os::fd::IntoRawFd;
        let cloexec = |fd: BorrowedFd<'_>| {
            let flags = fcntl(fd, FcntlArg::F_GETFD).unwrap();
            nix::fcntl::FdFlag::from_bits_retain(flags).contains(nix::fcntl::FdFlag::FD_CLOEXEC)
        };
        let (read, write) = pipe_cloexec().unwrap();
        assert!(cloexec(read.as_fd()) && cloexec(write.as_fd()));
        // The child writes through the number it was given.
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "printf x >&3"]);
        pass_fd(&mut cmd, write.as_fd(), 3);
        assert!(cmd.status().unwrap().success());
        drop(write);
        let mut buf = [0u8; 4];
        assert_eq!(read_nb(read.as_fd(), &mut buf).unwrap(), Some(1));
        assert_eq!(&buf[..1], b"x");
        // Nobody else holds the write end: the child is gone, and the reader sees the end.
        assert_eq!(read_nb(read.as_fd(), &mut buf).unwrap(), Some(0));

        // What the child does with the number: take it over, CLOEXEC.
        let (_read, write) = pipe_cloexec().unwrap();
        fcntl(
            write.as_fd(),
            FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .unwrap();
        let raw = write.into_raw_fd();
        let taken = take_inherited(raw).unwrap();
        assert_eq!(taken.as_raw_fd(), raw);
        assert!(cloexec(taken.as_fd()), "not passed on to our own children");
        // Not a standard stream, not a number that is not open (one far above any in use:
        // a freed one may be reused by a test running meanwhile).
        assert!(take_inherited(1).is_err());
        assert!(take_inherited(1 << 30).is_err());
    }
}
