//! Starting a program on a new pseudo-terminal: the pair (both ends CLOEXEC from the
//! start), and a child that leads its own session with the slave as its controlling
//! terminal, default signal dispositions, no descriptor of ours, and the open-file limit
//! the user had (see [`super::nofile`]).
//!
//! The child is made with `clone(CLONE_VM | CLONE_VFORK)`, as `posix_spawn` makes its
//! own: it borrows the server's memory until it execs, instead of copying the page tables
//! of every mapping a server of many panes holds (a `fork` there costs milliseconds and
//! grows with the server, and its exec then tears the copy down again). So the child may
//! only make system calls on what [`Launch`] prepared before it existed: no allocation, no
//! lock, no panic; every signal stays blocked until its handlers are gone; and it shares
//! the server's descriptor table until it takes one of its own holding only 0, 1 and 2.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::fcntl::OFlag;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};

use super::errno_to_io;

mod child;
use child::{child_main, shared_files, BlockedSignals, ChildJob, ChildStack};

/// A new pseudo-terminal, sized `rows` × `cols`: its master, and its slave's name (only
/// the child [`spawn_on`] starts opens the slave).
pub struct Pair {
    pub master: OwnedFd,
    slave_name: CString,
}

pub fn open_pair(rows: u16, cols: u16) -> io::Result<Pair> {
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    let master = posix_openpt(flags).map_err(errno_to_io)?;
    grantpt(&master).map_err(errno_to_io)?;
    unlockpt(&master).map_err(errno_to_io)?;
    let name = ptsname_r(&master).map_err(errno_to_io)?;
    let master = OwnedFd::from(master);
    super::set_winsize(master.as_fd(), rows, cols, 0, 0)?;
    let slave_name = CString::new(name).map_err(|_| io::Error::other("a NUL in ptsname"))?;
    Ok(Pair { master, slave_name })
}

/// Everything a program's start needs, made before the child exists.
pub struct Launch {
    /// Paths to exec in turn: the program itself when it names a path (relative ones
    /// from `cwd`), else the program in each folder of the program's own `PATH`.
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: CString,
}

/// What runs a candidate the kernel cannot (a script without a `#!` line), as execvp
/// does: `/bin/sh candidate args…`.
const SH: &std::ffi::CStr = c"/bin/sh";

impl Launch {
    /// `program` run as `arg0` with `args`, with exactly the environment `env`, in `cwd`.
    /// Fails on a NUL byte in any of them, which no program could be given.
    pub fn new<'a>(
        program: &OsStr,
        arg0: &'a OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        cwd: &Path,
    ) -> io::Result<Launch> {
        let nul = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{what} contains a NUL byte"),
            )
        };
        let c = |s: &[u8], what: &str| CString::new(s).map_err(|_| nul(what));
        let mut path = None;
        let mut envp = Vec::new();
        for (key, value) in env {
            if key.as_bytes() == b"PATH" {
                path = Some(value.clone());
            }
            let mut entry = key.into_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            envp.push(c(&entry, "an environment variable")?);
        }
        let name = program.as_bytes();
        let candidates = if name.contains(&b'/') {
            vec![c(name, "the program's name")?]
        } else {
            // execvp's search, with execvp's default where PATH is unset.
            let path = path.unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
            path.as_bytes()
                .split(|b| *b == b':')
                .map(|dir| {
                    let dir = if dir.is_empty() { &b"."[..] } else { dir };
                    let mut full = dir.to_vec();
                    full.push(b'/');
                    full.extend_from_slice(name);
                    c(&full, "a folder in PATH")
                })
                .collect::<io::Result<Vec<_>>>()?
        };
        let argv = std::iter::once(arg0)
            .chain(args)
            .map(|a| c(a.as_bytes(), "an argument"))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Launch {
            candidates,
            argv,
            envp,
            cwd: c(cwd.as_os_str().as_bytes(), "the folder")?,
        })
    }
}

/// A program [`spawn_on`] started: ours to wait for (the kernel keeps its exit status
/// until we do).
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
}

impl Child {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Its exit status once it has ended, without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.reap(libc::WNOHANG)
    }

    /// Waits for it to end.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.reap(0)? {
                return Ok(status);
            }
        }
    }

    /// Sends SIGKILL, unless it was already waited for (its number may be another's now).
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: kill on our own child's pid, not yet reaped; no memory is involved.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn reap(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut raw = 0;
        // SAFETY: waitpid writes the status into a local integer.
        match unsafe { libc::waitpid(self.pid, &mut raw, flags) } {
            0 => Ok(None),
            pid if pid == self.pid => {
                self.status = Some(ExitStatus::from_raw(raw));
                Ok(self.status)
            }
            _ => {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => Ok(None),
                    _ => Err(e),
                }
            }
        }
    }
}

/// Starts `launch` with the slave of `pair` as its stdin, stdout, stderr and controlling
/// terminal, in a session of its own. The error is the one that stopped it before its program ran
/// (`ENOENT` when no candidate exists; `EACCES` when one exists but may not be run).
pub fn spawn_on(launch: &Launch, pair: &Pair) -> io::Result<Child> {
    let (soft, hard) = super::nofile::current()?;
    let user_top = super::nofile::user_soft_limit().unwrap_or(soft).min(soft);
    let pointers = |list: &[CString]| {
        list.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    };
    let job = ChildJob {
        candidates: launch.candidates.iter().map(|s| s.as_ptr()).collect(),
        argv: pointers(&launch.argv),
        scripts: launch
            .candidates
            .iter()
            .map(|path| {
                let args = launch.argv.iter().skip(1).map(|a| a.as_ptr());
                [SH.as_ptr(), path.as_ptr()]
                    .into_iter()
                    .chain(args)
                    .chain(std::iter::once(std::ptr::null()))
                    .collect()
            })
            .collect(),
        sh: SH.as_ptr(),
        envp: pointers(&launch.envp),
        cwd: launch.cwd.as_ptr(),
        slave: pair.slave_name.as_ptr(),
        user_limit: super::nofile::user_soft_limit().map(|user| libc::rlimit {
            rlim_cur: user,
            rlim_max: hard,
        }),
        user_top: libc::c_int::try_from(user_top).unwrap_or(libc::c_int::MAX),
        errno: AtomicI32::new(0),
    };
    let stack = ChildStack::new()?;
    let pid = {
        let _blocked = BlockedSignals::all()?;
        // SAFETY: the child runs `child_main` on a stack of its own that outlives it
        // (CLONE_VFORK: this thread sleeps until the child has exec'd or exited), reading
        // `job`, which outlives it too; it makes only system calls (see `child_main`),
        // and takes a descriptor table of its own before it touches one (CLONE_FILES
        // saves copying ours). SIGCHLD as the exit signal makes it a child like any other
        // to wait for.
        unsafe {
            libc::clone(
                child_main,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | shared_files() | libc::SIGCHLD,
                &job as *const ChildJob as *mut libc::c_void,
            )
        }
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut child = Child { pid, status: None };
    match job.errno.load(Ordering::Acquire) {
        0 => Ok(child),
        errno => {
            let _ = child.wait();
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::child::under_valgrind;
    use super::*;
    use std::time::{Duration, Instant};

    /// Runs `script` with `/bin/sh` on a new terminal through [`spawn_on`] and returns
    /// what it printed, once it has ended, and its exit status.
    fn run(arg0: &str, script: &str, env: &[(&str, &str)], cwd: &Path) -> (String, ExitStatus) {
        let _guard = super::super::test_fd_lock();
        let pair = open_pair(24, 80).unwrap();
        let env = env.iter().map(|(k, v)| (k.into(), v.into()));
        let args = [OsStr::new("-c"), OsStr::new(script)];
        let launch = Launch::new(OsStr::new("sh"), OsStr::new(arg0), args, env, cwd).unwrap();
        let mut child = spawn_on(&launch, &pair).unwrap();
        super::super::set_nonblocking(pair.master.as_fd()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // Until the terminal hangs up: the child and everything it started have gone.
        while Instant::now() < deadline {
            let _ = super::super::poll_readable(
                &[pair.master.as_fd()],
                Some(Duration::from_millis(100)),
            );
            match super::super::read_nb(pair.master.as_fd(), &mut buf) {
                Ok(Some(0)) | Err(_) => break,
                Ok(Some(n)) => out.extend_from_slice(&buf[..n]),
                Ok(None) => {}
            }
        }
        let status = child.wait().unwrap();
        (String::from_utf8_lossy(&out).replace("\r\n", "\n"), status)
    }

    fn field<'a>(out: &'a str, key: &str) -> &'a str {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {out:?}"))
            .trim()
    }

    #[test]
    fn the_child_leads_a_session_on_its_terminal_with_our_signals_undone() {
        // What a server may have done to itself: a signal ignored, one caught, one
        // blocked in the thread that spawns.
        extern "C" fn caught(_: libc::c_int) {}
        // SAFETY: dispositions of signals no other test uses, and this thread's mask.
        unsafe {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::signal(libc::SIGUSR2, caught as *const () as libc::sighandler_t);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
        // The shell reads its own masks with a builtin, before it has waited for any
        // child (while it waits, it blocks every signal itself).
        let script = "while read -r k v; do case $k in Sig*) echo $k $v;; esac; \
                      done < /proc/$$/status; \
                      read -r pid comm state ppid pgrp sid tty tpgid rest < /proc/$$/stat; \
                      echo pid: $$; echo ids: $sid $tpgid; \
                      echo cwd: $(pwd); echo arg0: $0; echo only: $ONLY; \
                      echo home: ${HOME-unset}; \
                      [ -e /proc/$$/fd/$LEAKED ] && echo leaked: yes || echo leaked: no; \
                      exit 3";
        // A descriptor without CLOEXEC, as whoever starts a server may leave it one.
        // SAFETY: a duplicate of our stdin, closed below.
        let leaked = unsafe { libc::fcntl(0, libc::F_DUPFD, 900) };
        assert!(leaked >= 900);
        let (out, status) = run(
            "named",
            script,
            &[
                ("ONLY", "this"),
                ("PATH", "/usr/bin:/bin"),
                ("LEAKED", &leaked.to_string()),
            ],
            Path::new("/tmp"),
        );
        // SAFETY: the duplicate made above.
        unsafe { libc::close(leaked) };
        assert_eq!(field(&out, "leaked:"), "no", "{out}");
        // SAFETY: as above; the rest of the process's tests see the defaults again.
        unsafe {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            libc::signal(libc::SIGUSR2, libc::SIG_DFL);
        }
        assert_eq!(status.code(), Some(3), "{out}");
        assert_eq!(field(&out, "SigBlk:"), "0000000000000000", "{out}");
        let ignored = u64::from_str_radix(field(&out, "SigIgn:"), 16).unwrap();
        // SIGHUP ignored above, SIGPIPE by the Rust runtime.
        for sig in [libc::SIGHUP, libc::SIGPIPE] {
            assert_eq!(ignored & (1 << (sig - 1)), 0, "{sig} still ignored: {out}");
        }
        let pid = field(&out, "pid:");
        // Its own session, with its terminal's foreground group its own.
        assert_eq!(
            field(&out, "ids:").split_whitespace().collect::<Vec<_>>(),
            [pid, pid],
            "{out}"
        );
        assert_eq!(field(&out, "cwd:"), "/tmp");
        assert_eq!(field(&out, "arg0:"), "named");
        assert_eq!(field(&out, "only:"), "this");
        assert_eq!(
            field(&out, "home:"),
            "unset",
            "exactly the environment given: {out}"
        );
    }

    #[test]
    fn a_program_is_searched_in_its_own_path_and_failures_say_why() {
        let dir = std::env::temp_dir().join(format!("herdr-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Written by a process of its own: a descriptor open for writing here could be
        // inherited by another test's child for a moment, and the exec refused (ETXTBSY).
        let write = |name: &str, text: &str| {
            let done = std::process::Command::new("/bin/sh")
                .args(["-c", "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\""])
                .args(["sh", &dir.join(name).display().to_string(), text])
                .status()
                .unwrap();
            assert!(done.success());
        };
        write("hello-herdr", "#!/bin/sh\nexit 4\n");
        // No `#!` line: run by /bin/sh, as execvp does.
        write("plain-herdr", "exit 5\n");
        let script = dir.join("hello-herdr");
        let mode = |m| std::os::unix::fs::PermissionsExt::from_mode(m);
        let start = |program: &str, path: &str| {
            let _guard = super::super::test_fd_lock();
            let pair = open_pair(24, 80).unwrap();
            let env = [(OsString::from("PATH"), OsString::from(path))];
            let launch = Launch::new(
                OsStr::new(program),
                OsStr::new(program),
                [],
                env,
                Path::new("/"),
            )
            .unwrap();
            let mut child = spawn_on(&launch, &pair)?;
            child.wait().map(|status| status.code())
        };
        let path = format!("/nonexistent:{}", dir.display());
        assert_eq!(start("hello-herdr", &path).unwrap(), Some(4));
        assert_eq!(start("plain-herdr", &path).unwrap(), Some(5));
        let missing = start("hello-herdr", "/nonexistent:/usr/bin").unwrap_err();
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT), "{missing}");
        std::fs::set_permissions(&script, mode(0o644)).unwrap();
        let denied = start("hello-herdr", &path).unwrap_err();
        assert_eq!(denied.raw_os_error(), Some(libc::EACCES), "{denied}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Run again by the test below inside valgrind: it must see valgrind, and start a
    /// program there (valgrind ends the whole process at a clone it does not take).
    const UNDER_VALGRIND: &str = "HERDR_TEST_UNDER_VALGRIND";

    #[test]
    fn a_program_starts_under_valgrind_too() {
        if std::env::var_os(UNDER_VALGRIND).is_some() {
            assert!(under_valgrind());
            let (out, status) = run("sh", "echo started", &[], Path::new("/"));
            assert!(status.success() && out.contains("started"), "{out:?}");
            println!("spawned under valgrind");
            return;
        }
        assert!(!under_valgrind());
        if !cfg!(target_arch = "x86_64") || !Path::new("/usr/bin/valgrind").exists() {
            return;
        }
        let out = std::process::Command::new("/usr/bin/valgrind")
            .args(["--tool=none", "-q", "--trace-children=no"])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sys::pty::tests::a_program_starts_under_valgrind_too",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(UNDER_VALGRIND, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("spawned under valgrind"),
            "{text}"
        );
    }

    #[test]
    fn a_nul_byte_is_refused_before_anything_starts() {
        let err = Launch::new(
            OsStr::new("sh"),
            OsStr::new("sh"),
            [OsStr::new("a\0b")],
            [],
            Path::new("/"),
        )
        .err()
        .expect("refused");
        assert!(err.to_string().contains("NUL"), "{err}");
    }
}
