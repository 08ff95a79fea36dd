//! Spawn backend: portable-pty opens the pair and starts the child on the slave (setsid,
//! controlling tty, default signal dispositions, stray fds closed). The parent keeps only
//! a CLOEXEC dup of the master and the child handle; the slave and portable-pty's own
//! master object are dropped before returning.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use portable_pty::{native_pty_system, Child, CommandBuilder, PtySize};

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
    pub rows: u16,
    pub cols: u16,
}

pub struct Spawned {
    pub master: OwnedFd,
    pub child: Box<dyn Child + Send + Sync>,
}

/// Variables a pane must not inherit from whoever started the server.
const SCRUBBED_ENV: &[&str] = &["HERDR_PANE", "TMUX", "TMUX_PANE", "COLUMNS", "LINES"];

pub fn spawn(spec: &SpawnSpec) -> Result<Spawned, SpawnError> {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: spec.rows.max(1),
            cols: spec.cols.max(1),
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| SpawnError::OpenPty(e.to_string()))?;

    let mut cmd = if spec.argv.is_empty() {
        let mut c = CommandBuilder::new_default_prog();
        c.env("SHELL", &spec.shell);
        c
    } else {
        CommandBuilder::from_argv(spec.argv.iter().map(OsString::from).collect())
    };
    for key in SCRUBBED_ENV {
        cmd.env_remove(key);
    }
    cmd.env("TERM", "xterm-256color");
    cmd.env("COLORTERM", "truecolor");
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    if let Some(cwd) = &spec.cwd {
        cmd.cwd(cwd);
    }
    let program = spec
        .argv
        .first()
        .cloned()
        .unwrap_or_else(|| spec.shell.clone());
    let child = pair
        .slave
        .spawn_command(cmd)
        .map_err(|e| SpawnError::Exec {
            program,
            reason: format!("{e:#}"),
        })?;
    drop(pair.slave);

    let raw = pair
        .master
        .as_raw_fd()
        .ok_or_else(|| SpawnError::OpenPty("no master fd".into()))?;
    let master = crate::sys::dup_raw_cloexec(raw)?;
    crate::sys::set_nonblocking(master.as_fd())?;
    drop(pair.master);
    Ok(Spawned { master, child })
}
