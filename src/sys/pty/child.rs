//! The child between `clone` and exec (see the parent module): what it reads, made
//! before it exists ([`ChildJob`]); the stack it runs on; and the steps it takes, system
//! calls only, on that and on its own stack: a session with the slave as its controlling
//! terminal, default signal dispositions, a descriptor table of its own holding 0, 1
//! and 2, the user's open-file limit, the folder, and the exec.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// Signals whose disposition a server may have changed (ignored ones are inherited
/// across exec); a program starts with the default for each. Caught ones are reset
/// whatever they are.
const RESET_SIGNALS: [libc::c_int; 7] = [
    libc::SIGCHLD,
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGPIPE,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGALRM,
];

/// Room for the child's frames until it execs (it needs a few hundred bytes).
const CHILD_STACK: usize = 64 * 1024;

/// What the child reads (all of it made before it exists) and the one word it writes
/// back: the error that stopped it before its program ran.
pub(super) struct ChildJob {
    pub(super) candidates: Vec<*const libc::c_char>,
    pub(super) argv: Vec<*const libc::c_char>,
    /// For each candidate, the argv that has `/bin/sh` run it.
    pub(super) scripts: Vec<Vec<*const libc::c_char>>,
    pub(super) sh: *const libc::c_char,
    pub(super) envp: Vec<*const libc::c_char>,
    pub(super) cwd: *const libc::c_char,
    pub(super) slave: *const libc::c_char,
    pub(super) user_limit: Option<libc::rlimit>,
    /// The first descriptor number not to look at when `close_range` is missing.
    pub(super) user_top: libc::c_int,
    pub(super) errno: AtomicI32,
}

/// CLONE_FILES, except under valgrind (the scripts that profile herdr run it there): it
/// turns a clone that shares memory into a fork, and ends the whole program at one that
/// also shares the descriptor table. (There a child that cannot exec reports nothing to
/// the copy of memory it no longer shares: it only exits with 127.)
pub(super) fn shared_files() -> libc::c_int {
    if under_valgrind() {
        0
    } else {
        libc::CLONE_FILES
    }
}

/// Whether this process runs under valgrind: its client request RUNNING_ON_VALGRIND, a
/// sequence of instructions a CPU runs as nothing and valgrind answers.
#[cfg(target_arch = "x86_64")]
pub(super) fn under_valgrind() -> bool {
    const RUNNING_ON_VALGRIND: u64 = 0x1001;
    let request: [u64; 6] = [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0];
    let answer: u64;
    // SAFETY: rdi rotated by 128 bits in all is as it was, and rbx exchanged with itself;
    // under valgrind the sequence reads `request` (rax) and answers in rdx, whose value
    // going in (0) is the answer outside it.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdi") 0u64 => _,
            in("rax") request.as_ptr(),
            inout("rdx") 0u64 => answer,
            options(nostack, readonly),
        );
    }
    answer != 0
}

/// Elsewhere valgrind is not looked for (the sequence differs by architecture).
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn under_valgrind() -> bool {
    false
}

/// The child between `clone` and exec. It shares the server's memory, so it makes only
/// system calls on what `job` holds, and gives up with the failing call's errno.
pub(super) extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildJob` spawn_on keeps alive until this child has exec'd or
    // exited (CLONE_VFORK).
    let job = unsafe { &*(arg as *const ChildJob) };
    // SAFETY: system calls on integers, on `job`'s NUL-terminated strings and pointer
    // arrays, and on stack values; nothing here allocates, locks or unwinds.
    let errno = unsafe { child_setup(job) };
    job.errno.store(errno, Ordering::Release);
    // SAFETY: ends this child only (it is a process of its own, not a thread).
    unsafe { libc::_exit(127) }
}

/// Makes the child what [`spawn_on`] promises, then execs; returns only the errno of the
/// step that failed.
///
/// # Safety
/// Only for `child_main`: `job` must be valid, and every signal blocked.
unsafe fn child_setup(job: &ChildJob) -> libc::c_int {
    let last = || *libc::__errno_location();
    // The descriptor table is still the server's (CLONE_FILES: a copy of thousands of
    // entries for a child that keeps three, closed again at its exec, cost a server of
    // many panes more than the rest of a start). The child's own holds only the server's
    // 0, 1 and 2, which the terminal replaces below; nothing of ours reaches the program,
    // nor anything whoever started the server leaked to it.
    let unshared = libc::syscall(
        libc::SYS_close_range,
        3 as libc::c_uint,
        libc::c_uint::MAX,
        libc::CLOSE_RANGE_UNSHARE,
    );
    // A kernel before 5.9: a copy of the whole table, marked below.
    let copied_all = unshared < 0;
    if copied_all && libc::unshare(libc::CLONE_FILES) < 0 {
        return last();
    }
    // A handler of the server's would run on the server's memory: every caught signal
    // goes back to its default before any is let through, and so do RESET_SIGNALS. The
    // kernel's own calls, not the C library's, which hides the signals it uses itself
    // (and may take a lock).
    for sig in 1..=KERNEL_SIGNALS {
        let mut old = KernelSigaction::default();
        if rt_sigaction(sig, None, Some(&mut old)) < 0 {
            continue;
        }
        let caught = old.handler() != libc::SIG_DFL && old.handler() != libc::SIG_IGN;
        if caught || RESET_SIGNALS.contains(&sig) {
            rt_sigaction(sig, Some(&KernelSigaction::default()), None);
        }
    }
    if libc::setsid() < 0 {
        return last();
    }
    // Opened by the leader of a session without a terminal, it becomes the session's.
    let slave = libc::open(job.slave, libc::O_RDWR);
    if slave < 0 {
        return last();
    }
    for target in 0..3 {
        if slave != target && libc::dup2(slave, target) < 0 {
            return last();
        }
    }
    if slave > 2 {
        libc::close(slave);
    }
    // Without a controlling terminal the program would get no SIGWINCH, and its shell no
    // job control (already so from the open, unless the system's open does not make it).
    if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
        return last();
    }
    if copied_all {
        // Every number up to the limit the user had, one by one (what we were given
        // lies below it; ours are CLOEXEC already), not up to the raised one, which may
        // be a billion.
        for fd in 3..job.user_top {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    if let Some(limit) = &job.user_limit {
        if libc::setrlimit(libc::RLIMIT_NOFILE, limit) < 0 {
            return last();
        }
    }
    if libc::chdir(job.cwd) < 0 {
        return last();
    }
    rt_sigprocmask(0, None);
    // execvp's rules: a candidate that is not there is passed over, one that may not be
    // run is remembered, one the kernel cannot run is a script for /bin/sh, anything else
    // stops the search.
    let mut errno = libc::ENOENT;
    for (path, script) in job.candidates.iter().zip(&job.scripts) {
        libc::execve(*path, job.argv.as_ptr(), job.envp.as_ptr());
        match last() {
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            libc::EACCES => errno = libc::EACCES,
            libc::ENOEXEC => {
                libc::execve(job.sh, script.as_ptr(), job.envp.as_ptr());
                return last();
            }
            other => return other,
        }
    }
    errno
}

/// The child's stack: mapped for it alone, with a guard page below it.
pub(super) struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    pub(super) fn new() -> io::Result<ChildStack> {
        let page = crate::sys::page_size();
        let len = CHILD_STACK + page;
        // SAFETY: a new anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of the mapping just made.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Where the stack starts (it grows down), 16-byte aligned as the ABI wants.
    pub(super) fn top(&self) -> *mut libc::c_void {
        (self.base as usize + self.len) as *mut libc::c_void
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, no longer in use (the child has exec'd or ended).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Every signal blocked for this thread while the guard lives (the C library's own
/// too, which its calls would leave open), the mask it had restored after.
pub(super) struct BlockedSignals {
    old: u64,
}

impl BlockedSignals {
    pub(super) fn all() -> io::Result<BlockedSignals> {
        let mut old = 0;
        if rt_sigprocmask(u64::MAX, Some(&mut old)) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(BlockedSignals { old })
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        rt_sigprocmask(self.old, None);
    }
}

/// The kernel's signals (1 to 64 on Linux), whose masks are one 64-bit word.
const KERNEL_SIGNALS: libc::c_int = 64;

/// The kernel's `struct sigaction`: the handler first, then fields whose order varies
/// by architecture; all zero is the default disposition everywhere.
#[derive(Default)]
#[repr(C)]
struct KernelSigaction([u64; 4]);

impl KernelSigaction {
    fn handler(&self) -> libc::sighandler_t {
        self.0[0] as libc::sighandler_t
    }
}

/// `rt_sigaction`: the disposition of `sig` set to `new` and/or read into `old`.
fn rt_sigaction(
    sig: libc::c_int,
    new: Option<&KernelSigaction>,
    old: Option<&mut KernelSigaction>,
) -> libc::c_long {
    let new = new.map_or(std::ptr::null(), |n| n as *const KernelSigaction);
    let old = old.map_or(std::ptr::null_mut(), |o| o as *mut KernelSigaction);
    // SAFETY: both pointers are null or point at a KernelSigaction, which is as large as
    // the kernel's struct on every architecture; the last argument is the mask's size.
    unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, new, old, 8usize) }
}

/// `rt_sigprocmask(SIG_SETMASK)` for this thread: `mask` set, the one before into `old`.
fn rt_sigprocmask(mask: u64, old: Option<&mut u64>) -> libc::c_long {
    let old = old.map_or(std::ptr::null_mut(), |o| o as *mut u64);
    // SAFETY: the kernel reads one mask word from `mask` and writes one to `old` (or
    // nothing when it is null).
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask,
            old,
            8usize,
        )
    }
}
