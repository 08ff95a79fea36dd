//! Renaming a running session (`herdr session rename OLD NEW`, API `server.rename`), as
//! tmux's rename-session does: nothing stops, the status line and every listing say the
//! new name, new panes are told it.
//!
//! The programs already running were told the old name (`HERDR_SESSION`, the socket and
//! the SSH agent link in their environment), and `herdr` commands and agent hooks in them
//! use it. So the socket moves to the new name and the old name's socket becomes a link
//! to it, and the same for the agent link; the old name's lock stays held. The old name
//! then reaches this server for those programs, and nothing else may take it: a client
//! is told the new name instead of attaching (`paths::renamed_to`), and a new session of
//! that name is refused until this server stops, which removes the links.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{start, Server, SessionLock};
use crate::paths::{self, SessionName};
use crate::protocol::api::ApiError;

/// An old name of this session, held for the programs started under it.
pub(crate) struct OldName {
    links: Vec<PathBuf>,
    _lock: SessionLock,
}

impl OldName {
    /// Removes the links that are still ours (a link another herdr replaced stays).
    pub(crate) fn remove(self) {
        for link in &self.links {
            if std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
                let _ = std::fs::remove_file(link);
            }
        }
    }
}

fn refused(message: String) -> ApiError {
    ApiError::new("conflict", message)
}

/// `link` → `target` in place of what `link` was: `link` is renamed to `target`, then
/// made a link to it.
fn move_and_link(link: &std::path::Path, target: &std::path::Path) -> std::io::Result<()> {
    std::fs::rename(link, target)?;
    if let Err(e) = std::os::unix::fs::symlink(target, link) {
        let _ = std::fs::rename(target, link);
        return Err(e);
    }
    Ok(())
}

/// Undoes [`move_and_link`].
fn unlink_and_move_back(link: &std::path::Path, target: &std::path::Path) {
    let _ = std::fs::remove_file(link);
    let _ = std::fs::rename(target, link);
}

impl Server {
    pub(super) fn rename_session(&mut self, name: &str) -> Result<Value, ApiError> {
        let to = SessionName::parse(name).map_err(|e| ApiError::params(e.to_string()))?;
        let from = self.session.name.clone();
        if to.as_str() == from.as_str() {
            return Ok(json!({ "name": to.as_str(), "renamed": false }));
        }
        self.check_free(&to)?;
        let lock = start::take_lock(&to).map_err(|e| refused(e.to_string()))?;
        // The socket: the listener keeps accepting on the file under its new name.
        let (old_socket, new_socket) = (self.session.socket.clone(), paths::socket_path(&to));
        move_and_link(&old_socket, &new_socket)
            .map_err(|e| ApiError::new("internal", format!("cannot move the socket: {e}")))?;
        let (old_agent, new_agent) = (paths::agent_link(&from), paths::agent_link(&to));
        let agent_moved = std::fs::symlink_metadata(&old_agent).is_ok()
            && move_and_link(&old_agent, &new_agent).is_ok();
        // The saved state and the log, with the saver stopped meanwhile.
        let (f, t) = (from.clone(), to.clone());
        let moved = match self.persist.as_mut() {
            Some(p) => p.relocate(self.session.events.clone(), move || {
                paths::move_state(&f, &t).map(|()| paths::state_dir(&t))
            }),
            None => paths::move_state(&f, &t),
        };
        if let Err(e) = moved {
            // Whatever did move goes back (the new name's folder held nothing).
            let _ = paths::move_state(&to, &from);
            if agent_moved {
                unlink_and_move_back(&old_agent, &new_agent);
            }
            unlink_and_move_back(&old_socket, &new_socket);
            return Err(ApiError::new(
                "internal",
                format!("cannot move the saved state: {e}"),
            ));
        }
        // From now on the session's lock is the new name's, and the old name's is kept.
        let old_lock = match self.lock.replace(lock) {
            Some(l) => Some(l),
            None => start::take_lock(&from).ok(),
        };
        let mut links = vec![old_socket];
        if agent_moved {
            links.push(old_agent);
        }
        if let Some(lock) = old_lock {
            self.session.old_names.push(OldName { links, _lock: lock });
        }
        crate::log::moved(&paths::log_path(&to));
        crate::log::info!("session", "renamed from {from} to {to}");
        self.session.name = to.clone();
        self.session.socket = new_socket;
        self.persist_note_change();
        self.request_render();
        Ok(json!({ "name": to.as_str(), "from": from.as_str(), "renamed": true }))
    }

    /// No session may have the name already: running, saved, an old name of another, or
    /// any state of its own.
    fn check_free(&self, to: &SessionName) -> Result<(), ApiError> {
        if let Some(other) = paths::renamed_to(to) {
            return Err(refused(format!(
                "the name {to} is an old name of session {other}, kept while it runs"
            )));
        }
        if std::os::unix::net::UnixStream::connect(paths::socket_path(to)).is_ok() {
            return Err(refused(format!("a session named {to} is running")));
        }
        let dir = paths::state_dir(to);
        let has_state = paths::own_state_entries(&dir, to).is_ok_and(|e| !e.is_empty());
        if has_state {
            return Err(refused(format!(
                "a session named {to} has saved state ({}); delete it first (`herdr session delete {to}`)",
                dir.display()
            )));
        }
        Ok(())
    }
}
