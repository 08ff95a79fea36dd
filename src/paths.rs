//! Where a session lives on disk. A named session gets its own socket and its own state
//! folder, so sessions never share files.
//!
//! * runtime: `$XDG_RUNTIME_DIR/herdr/` or `/tmp/herdr-<uid>/` — mode 0700, owned by us;
//!   the socket is `<session>.sock`, mode 0600.
//! * state: `$XDG_STATE_HOME/herdr/` (default session) or `…/herdr/sessions/<name>/`.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const DEFAULT_SESSION: &str = "default";
const MAX_SESSION_NAME: usize = 64;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("session name is empty; use letters, digits, '-', '_' or '.', e.g. --session work")]
    Empty,
    #[error("session name {0:?} is too long (at most 64 characters)")]
    TooLong(String),
    #[error(
        "session name {0:?} is not allowed: use only letters, digits, '-', '_' and '.', \
         not starting with '.' (it names a socket and a folder)"
    )]
    Invalid(String),
}

/// A validated session name: safe to use as a file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionName(String);

impl SessionName {
    pub fn parse(name: &str) -> Result<SessionName, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_SESSION_NAME {
            return Err(NameError::TooLong(name.into()));
        }
        let ok = !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(NameError::Invalid(name.into()));
        }
        Ok(SessionName(name.into()))
    }

    pub fn default_session() -> SessionName {
        SessionName(DEFAULT_SESSION.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT_SESSION
    }
}

impl std::fmt::Display for SessionName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

pub fn home() -> PathBuf {
    env_dir("HOME").unwrap_or_else(|| PathBuf::from("/"))
}

/// The folder holding every session's socket.
pub fn runtime_dir() -> PathBuf {
    match env_dir("XDG_RUNTIME_DIR") {
        Some(d) => d.join("herdr"),
        None => PathBuf::from(format!("/tmp/herdr-{}", nix::unistd::getuid())),
    }
}

pub fn socket_path(session: &SessionName) -> PathBuf {
    runtime_dir().join(format!("{}.sock", session.as_str()))
}

/// The private socket a live handoff of `session` (by the server `pid`) listens on. Its
/// name starts with '.', which no session name may, so it can never be another session's
/// socket (`a.handoff-42.sock` would be session `a.handoff-42`'s).
pub fn handoff_socket_path(session: &SessionName, pid: u32) -> PathBuf {
    runtime_dir().join(format!(".handoff-{pid}-{}.sock", session.as_str()))
}

/// A stable path for the SSH agent socket of the session's panes: each attach repoints it
/// to the attaching side's `SSH_AUTH_SOCK`, so agent forwarding keeps working in panes
/// started during an earlier connection.
pub fn agent_link(session: &SessionName) -> PathBuf {
    runtime_dir().join(format!("{}.ssh-agent", session.as_str()))
}

/// Points the session's agent link at `$SSH_AUTH_SOCK` (atomically: a new link renamed
/// over the old one). Nothing happens without an agent.
pub fn repoint_agent_link(session: &SessionName) {
    let Some(sock) = std::env::var_os("SSH_AUTH_SOCK").filter(|s| !s.is_empty()) else {
        return;
    };
    if ensure_private_dir(&runtime_dir()).is_err() {
        return;
    }
    let link = agent_link(session);
    let tmp = link.with_extension(format!("tmp-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    if std::os::unix::fs::symlink(&sock, &tmp).is_ok() && fs::rename(&tmp, &link).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// Every session with a socket file in the runtime folder (its server may have died),
/// by name.
pub fn socket_sessions() -> Vec<SessionName> {
    let Ok(dir) = fs::read_dir(runtime_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<SessionName> = dir
        .flatten()
        // (A link is an old name of a renamed session, not a session.)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // A live handoff's private socket starts with '.', which no session name may.
            SessionName::parse(name.strip_suffix(".sock")?).ok()
        })
        .collect();
    out.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    out
}

/// The base of every session's state: the default session's folder.
pub fn state_base() -> PathBuf {
    let base = env_dir("XDG_STATE_HOME").unwrap_or_else(|| home().join(".local/state"));
    base.join("herdr")
}

/// The folder of the default session's state, which also holds every other session's
/// folder (`sessions/`): what is the default session's own in it is all but that.
pub const SESSIONS_DIR: &str = "sessions";

pub fn state_dir(session: &SessionName) -> PathBuf {
    let base = state_base();
    if session.is_default() {
        base
    } else {
        base.join(SESSIONS_DIR).join(session.as_str())
    }
}

/// What in `dir` is the session's own: all of it, but for the default session not the
/// other sessions' folders.
pub fn own_state_entries(dir: &Path, session: &SessionName) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if session.is_default() && e.file_name() == SESSIONS_DIR {
            continue;
        }
        out.push(e.path());
    }
    Ok(out)
}

/// Moves session `from`'s state (saved session, backups, log) to session `to`'s folder,
/// made private first. What is moved is said in the error of the first that could not be.
pub fn move_state(from: &SessionName, to: &SessionName) -> std::io::Result<()> {
    let (src, dest) = (state_dir(from), state_dir(to));
    ensure_private_dir(&dest)?;
    for path in own_state_entries(&src, from)? {
        let Some(name) = path.file_name() else {
            continue;
        };
        fs::rename(&path, dest.join(name)).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot move {} to {}: {e}", path.display(), dest.display()),
            )
        })?;
    }
    if !from.is_default() {
        let _ = fs::remove_dir(&src);
    }
    Ok(())
}

/// The session that `session`'s name leads to when it was renamed while its server ran:
/// its socket is then a link to the new name's, kept for the programs started before.
pub fn renamed_to(session: &SessionName) -> Option<SessionName> {
    let socket = socket_path(session);
    if !fs::symlink_metadata(&socket).ok()?.file_type().is_symlink() {
        return None;
    }
    let target = fs::read_link(&socket).ok()?;
    // A link whose socket is gone leads nowhere: the name is free.
    fs::metadata(&target).ok()?;
    let name = target.file_name()?.to_str()?.strip_suffix(".sock")?;
    SessionName::parse(name).ok()
}

pub fn log_path(session: &SessionName) -> PathBuf {
    state_dir(session).join("server.log")
}

/// Creates (if needed) a private folder: mode 0700, owned by us. Refuses a folder that
/// someone else owns or others can enter, since our sockets live there.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check_private_dir(dir, true)
}

/// Checks that `dir` is a real folder (not a symlink) owned by us and closed to others —
/// our sockets live there, and anyone who could put a socket in it could read our
/// keystrokes. With `fix`, too-open permissions on our own folder are tightened.
pub fn check_private_dir(dir: &Path, fix: bool) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let uid = nix::unistd::getuid().as_raw();
    if !meta.file_type().is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a folder (a symbolic link?); remove it or set XDG_RUNTIME_DIR",
                dir.display()
            ),
        ));
    }
    if meta.uid() != uid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to you (uid {uid}); remove it or set XDG_RUNTIME_DIR",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        if !fix {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is open to other users (mode {:o}); run chmod 700 on it",
                    dir.display(),
                    meta.mode() & 0o777
                ),
            ));
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

pub fn ensure_state_dir(session: &SessionName) -> io::Result<PathBuf> {
    let dir = state_dir(session);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    Ok(dir)
}

/// This process cannot name the file it was started from.
#[derive(Debug, thiserror::Error)]
#[error("cannot find this herdr's binary: {0}")]
pub struct NoBinary(std::io::Error);

/// The file this process was started from, as it is named now: after an update replaced
/// it, the running inode shows as "(deleted)" and the path names the new file.
pub fn own_binary() -> Result<PathBuf, NoBinary> {
    let exe = std::fs::read_link("/proc/self/exe")
        .or_else(|_| std::env::current_exe())
        .map_err(NoBinary)?;
    let text = exe.to_string_lossy();
    Ok(match text.strip_suffix(" (deleted)") {
        Some(p) => PathBuf::from(p),
        None => exe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_validated() {
        assert_eq!(SessionName::parse(""), Err(NameError::Empty));
        assert!(matches!(
            SessionName::parse("../x"),
            Err(NameError::Invalid(_))
        ));
        assert!(matches!(
            SessionName::parse("a/b"),
            Err(NameError::Invalid(_))
        ));
        assert!(matches!(
            SessionName::parse(".hidden"),
            Err(NameError::Invalid(_))
        ));
        assert!(matches!(
            SessionName::parse(&"x".repeat(65)),
            Err(NameError::TooLong(_))
        ));
        assert!(SessionName::parse("work-2.b_c").is_ok());
        // A handoff's socket is never a session's socket.
        let a = SessionName::parse("a").unwrap();
        let lookalike = SessionName::parse("a.handoff-42").unwrap();
        assert_ne!(handoff_socket_path(&a, 42), socket_path(&lookalike));
        let name = handoff_socket_path(&a, 42);
        let stem = name.file_name().unwrap().to_str().unwrap();
        assert!(SessionName::parse(stem.trim_end_matches(".sock")).is_err());
        let msg = SessionName::parse("../x").unwrap_err().to_string();
        assert!(msg.contains("\"../x\""), "{msg}");
    }
}
