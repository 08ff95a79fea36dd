//! Spawn backend: a new pseudo-terminal pair, and the child started on its slave (its own
//! session, the slave as controlling tty, default signal dispositions, stray fds closed,
//! the user's open-file limit: `sys::pty`). The parent keeps only the CLOEXEC master and
//! the child handle; only the child opens the slave.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use crate::sys::pty::{Child, Launch};

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot open a pseudo-terminal: {0}")]
    OpenPty(String),
    #[error("cannot start {program}: {reason}")]
    Exec { program: String, reason: String },
    #[error("pseudo-terminal setup failed: {0}")]
    Fd(#[from] std::io::Error),
}

/// What to run in a new terminal.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    /// Program and arguments; empty = the configured shell as a login shell.
    pub argv: Vec<String>,
    pub shell: String,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// Variables the program must not inherit from the server.
    pub unset: Vec<String>,
    pub rows: u16,
    pub cols: u16,
}

pub struct Spawned {
    pub master: OwnedFd,
    pub child: Child,
}

/// Variables a pane must not inherit from whoever started the server.
const SCRUBBED_ENV: &[&str] = &[
    "HERDR_PANE",
    "TMUX",
    "TMUX_PANE",
    "COLUMNS",
    "LINES",
    crate::sys::nofile::ORIGINAL_ENV,
];

pub fn spawn(spec: &SpawnSpec) -> Result<Spawned, SpawnError> {
    let pair = crate::sys::nofile::ensure_room(crate::sys::nofile::PANE_START)
        .and_then(|()| crate::sys::pty::open_pair(spec.rows.max(1), spec.cols.max(1)))
        .map_err(|e| {
            SpawnError::OpenPty(if crate::sys::nofile::is_exhausted(&e) {
                crate::sys::nofile::exhausted_message()
            } else {
                e.to_string()
            })
        })?;

    // The server's environment, less what a pane must not inherit, plus the pane's own.
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    let set = |env: &mut BTreeMap<OsString, OsString>, key: &str, value: &str| {
        env.insert(key.into(), value.into());
    };
    let (program, arg0, args) = match spec.argv.split_first() {
        None => {
            // A configured shell that cannot run is reported, not replaced by another.
            if nix::unistd::access(spec.shell.as_str(), nix::unistd::AccessFlags::X_OK).is_err() {
                return Err(SpawnError::Exec {
                    program: spec.shell.clone(),
                    reason: "not an executable file (check `shell` in config.toml or $SHELL)"
                        .into(),
                });
            }
            // A login shell, as a terminal starts it: its name with a '-' in front.
            let name = spec.shell.rsplit('/').next().unwrap_or(&spec.shell);
            set(&mut env, "SHELL", &spec.shell);
            (&spec.shell, format!("-{name}"), &[][..])
        }
        Some((program, args)) => {
            if !env.contains_key(OsStr::new("SHELL")) {
                set(&mut env, "SHELL", &spec.shell);
            }
            (program, program.clone(), args)
        }
    };
    for key in SCRUBBED_ENV
        .iter()
        .copied()
        .chain(spec.unset.iter().map(String::as_str))
    {
        env.remove(OsStr::new(key));
    }
    set(&mut env, "TERM", "xterm-256color");
    set(&mut env, "COLORTERM", "truecolor");
    for (k, v) in &spec.env {
        set(&mut env, k, v);
    }
    // A folder that has gone since (a restored pane's) starts the program at home.
    let cwd = spec
        .cwd
        .clone()
        .filter(|d| d.is_dir())
        .unwrap_or_else(crate::paths::home);
    let exec_error = |reason: String| SpawnError::Exec {
        program: program.clone(),
        reason,
    };
    let launch = Launch::new(
        OsStr::new(program),
        OsStr::new(&arg0),
        args.iter().map(OsStr::new),
        env,
        &cwd,
    )
    .map_err(|e| exec_error(e.to_string()))?;
    let child = crate::sys::pty::spawn_on(&launch, &pair).map_err(|e| {
        exec_error(match e.kind() {
            _ if crate::sys::nofile::is_exhausted(&e) => crate::sys::nofile::exhausted_message(),
            std::io::ErrorKind::NotFound => "no such program (check the command and $PATH)".into(),
            std::io::ErrorKind::PermissionDenied => "permission denied (not executable?)".into(),
            _ => e.to_string(),
        })
    })?;
    crate::sys::set_nonblocking(pair.master.as_fd())?;
    Ok(Spawned {
        master: pair.master,
        child,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn ptmx_fds() -> usize {
        crate::sys::open_fds()
            .iter()
            .filter(|(_, t)| t.contains("ptmx"))
            .count()
    }

    #[test]
    fn spawn_keeps_exactly_one_pty_fd_and_leaks_nothing_into_the_child() {
        // Unit tests run in threads of one process: serialise the fd counting.
        let _guard = crate::sys::test_fd_lock();
        let before = ptmx_fds();
        let spec = SpawnSpec {
            // The child lists its own open fds (0, 1, 2 and the one ls uses to read the dir).
            argv: vec![
                "/bin/sh".into(),
                "-c".into(),
                "ls /proc/$$/fd; sleep 5".into(),
            ],
            shell: "/bin/sh".into(),
            rows: 24,
            cols: 80,
            ..Default::default()
        };
        let mut spawned = spawn(&spec).unwrap();
        assert_eq!(ptmx_fds(), before + 1, "{:?}", crate::sys::open_fds());
        // Read the child's listing through the master.
        let mut out = Vec::new();
        let file = std::fs::File::from(crate::sys::dup_cloexec(spawned.master.as_fd()).unwrap());
        let mut file = file;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut buf = [0u8; 1024];
        while std::time::Instant::now() < deadline {
            match file.read(&mut buf) {
                Ok(n) if n > 0 => {
                    out.extend_from_slice(&buf[..n]);
                    if String::from_utf8_lossy(&out).contains('2') {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        if let Ok(n) = file.read(&mut buf) {
                            out.extend_from_slice(&buf[..n]);
                        }
                        break;
                    }
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        let listing = String::from_utf8_lossy(&out);
        let fds: Vec<u32> = listing
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        // sh holds 0,1,2 (and possibly 10 for its own use); nothing of ours.
        assert!(
            fds.iter().all(|fd| *fd <= 2 || *fd == 10),
            "child fds: {fds:?}"
        );
        assert!(fds.contains(&0) && fds.contains(&2), "child fds: {fds:?}");
        let _ = spawned.child.kill();
        let _ = spawned.child.wait();
    }

    #[test]
    fn a_missing_program_is_a_clear_error() {
        let _guard = crate::sys::test_fd_lock();
        let spec = SpawnSpec {
            argv: vec!["/nonexistent/program".into()],
            shell: "/bin/sh".into(),
            rows: 24,
            cols: 80,
            ..Default::default()
        };
        let err = spawn(&spec).err().expect("spawn must fail");
        let msg = err.to_string();
        assert!(msg.contains("/nonexistent/program"), "{msg}");
    }
}
