//! Starting a program on a new pseudo-terminal: the pair (both ends CLOEXEC from the
//! start), and a child that leads its own session with the slave as its controlling
//! terminal, default signal dispositions, no descriptor of ours, and the open-file limit
//! the user had (see [`super::nofile`]).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Child, Command, Stdio};

use nix::fcntl::{open, OFlag};
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
use nix::sys::stat::Mode;

use super::errno_to_io;

/// Both ends of a new pseudo-terminal, sized `rows` × `cols`.
pub struct Pair {
    pub master: OwnedFd,
    pub slave: OwnedFd,
}

pub fn open_pair(rows: u16, cols: u16) -> io::Result<Pair> {
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    let master = posix_openpt(flags).map_err(errno_to_io)?;
    grantpt(&master).map_err(errno_to_io)?;
    unlockpt(&master).map_err(errno_to_io)?;
    let name = ptsname_r(&master).map_err(errno_to_io)?;
    let slave = open(name.as_str(), flags, Mode::empty()).map_err(errno_to_io)?;
    let master = OwnedFd::from(master);
    super::set_winsize(master.as_fd(), rows, cols, 0, 0)?;
    Ok(Pair { master, slave })
}

/// Signals whose disposition a server may have changed; a program starts with the
/// default for each (std already resets SIGPIPE and the signal mask).
const RESET_SIGNALS: [libc::c_int; 6] = [
    libc::SIGCHLD,
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGALRM,
];

/// Starts `cmd` with `slave` as its stdin, stdout, stderr and controlling terminal, in a
/// session of its own.
pub fn spawn_on(cmd: &mut Command, slave: BorrowedFd<'_>) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::from(slave.try_clone_to_owned()?))
        .stdout(Stdio::from(slave.try_clone_to_owned()?))
        .stderr(Stdio::from(slave.try_clone_to_owned()?));
    let (soft, hard) = super::nofile::current()?;
    let user_top = super::nofile::user_soft_limit().unwrap_or(soft).min(soft);
    let user_limit = super::nofile::user_soft_limit().map(|user| libc::rlimit {
        rlim_cur: user,
        rlim_max: hard,
    });
    let hook = move || {
        // SAFETY: only async-signal-safe calls on integers and stack values, as code
        // between fork and exec must make (no allocation, no locks).
        unsafe {
            for sig in RESET_SIGNALS {
                libc::signal(sig, libc::SIG_DFL);
            }
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // Without a controlling terminal the program would get no SIGWINCH, and its
            // shell no job control.
            if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            // Ours are all CLOEXEC already; this also covers descriptors whoever started
            // the server leaked to it. Marking instead of closing keeps std's pipe that
            // reports a failed exec.
            let marked = libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if marked < 0 {
                // A kernel before 5.11: every number up to the limit the user had, one
                // by one (what we were given lies below it; ours are CLOEXEC already),
                // not up to the raised one, which may be a billion.
                let top = libc::c_int::try_from(user_top).unwrap_or(libc::c_int::MAX);
                for fd in 3..top {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            if let Some(limit) = &user_limit {
                if libc::setrlimit(libc::RLIMIT_NOFILE, limit) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    };
    // SAFETY: the hook makes only the async-signal-safe calls above.
    unsafe {
        cmd.pre_exec(hook);
    }
    // The copies of the slave for the child's stdio close when the caller drops `cmd`.
    cmd.spawn()
}
