//! `herdr session list|attach|stop|rename|delete`, and `herdr ls` / `herdr attach`: the
//! sessions of this user, each running (its server answers on its socket), saved (a
//! snapshot in its state folder, for the next start) or both.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{json, Value};

use crate::client::api::ApiClient;
use crate::paths::{self, SessionName};
use crate::persist::snapshot;
use crate::protocol::api::{NoParams, Request};

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List the sessions: running or saved, panes, clients, agents waiting, last attached.
    #[command(visible_alias = "ls")]
    List {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Attach to a session that runs or was saved (`herdr --session NAME` also starts a
    /// new one).
    Attach {
        /// The session (default: the one attached to last).
        name: Option<String>,
    },
    /// Stop a session's server and every program in its panes (its saved state stays).
    Stop {
        /// The session.
        name: String,
    },
    /// Rename a session that is not running (its saved state and log move with it).
    Rename {
        /// The session's name now.
        old: String,
        /// Its new name (letters, digits, `-`, `_`, `.`).
        new: String,
    },
    /// Stop a session and delete its saved state (asks first on a terminal).
    Delete {
        /// The session.
        name: String,
        /// Delete without asking.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(command: SessionCommand) -> anyhow::Result<i32> {
    match command {
        SessionCommand::List { json } => list(json),
        SessionCommand::Attach { name } => attach(name.as_deref()),
        SessionCommand::Stop { name } => super::server::stop(&known(sessions(), &name)?.name),
        SessionCommand::Rename { old, new } => rename(&old, &new),
        SessionCommand::Delete { name, yes } => delete(&name, yes),
    }
}

/// What `session list` says of one session.
struct Row {
    name: SessionName,
    /// The server's `server.status`, when it runs.
    status: Option<Value>,
    /// The saved snapshot's pane count and time, when there is one.
    saved: Option<(usize, u64)>,
}

impl Row {
    fn of(name: SessionName) -> Row {
        let status = ApiClient::connect(&name)
            .ok()
            .flatten()
            .and_then(|mut api| api.request(&Request::ServerStatus(NoParams {})).ok());
        let saved = std::fs::read(paths::state_dir(&name).join(crate::persist::SESSION_FILE))
            .ok()
            .and_then(|bytes| snapshot::parse(&bytes).ok())
            .map(|s| {
                let panes = s.workspaces.iter().flat_map(|w| &w.tabs);
                (panes.map(|t| t.panes.len()).sum(), s.saved_at)
            });
        Row {
            name,
            status,
            saved,
        }
    }

    fn running(&self) -> bool {
        self.status.is_some()
    }

    fn count(&self, key: &str) -> Option<u64> {
        self.status.as_ref()?.get(key)?.as_u64()
    }

    fn json(&self) -> Value {
        json!({
            "name": self.name.as_str(),
            "running": self.running(),
            "panes": self.count("panes").or(self.saved.map(|(p, _)| p as u64)),
            "clients": self.count("clients"),
            "agents_waiting": self.count("agents_waiting"),
            "last_attached": self.count("last_attached"),
            "saved_at": self.saved.map(|(_, at)| at),
        })
    }

    /// `work  running  3 panes  1 client  2 agents waiting  attached 5m ago`.
    fn line(&self, width: usize, now: u64) -> String {
        let plural = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut parts = vec![if self.running() { "running" } else { "saved" }.to_string()];
        if let Some(p) = self.count("panes").or(self.saved.map(|(p, _)| p as u64)) {
            parts.push(plural(p, "pane"));
        }
        if let Some(c) = self.count("clients") {
            parts.push(plural(c, "client"));
        }
        match self.count("agents_waiting") {
            Some(0) | None => {}
            Some(n) => parts.push(format!("{} waiting", plural(n, "agent"))),
        }
        match (self.count("last_attached"), self.saved) {
            (Some(at), _) => parts.push(format!("attached {} ago", ago(now, at))),
            (None, Some((_, at))) if !self.running() => {
                parts.push(format!("saved {} ago", ago(now, at)))
            }
            _ => {}
        }
        format!("{:<width$}  {}", self.name.as_str(), parts.join("  "))
    }
}

/// Every session that runs or was saved, by name.
fn sessions() -> Vec<Row> {
    let mut names = paths::socket_sessions();
    names.extend(state_sessions());
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    names.dedup_by(|a, b| a.as_str() == b.as_str());
    names
        .into_iter()
        .map(Row::of)
        .filter(|r| r.running() || r.saved.is_some())
        .collect()
}

/// Sessions with a state folder of their own, and the default one when its folder holds
/// a session file.
fn state_sessions() -> Vec<SessionName> {
    let base = paths::state_base();
    let mut out: Vec<SessionName> = std::fs::read_dir(base.join(paths::SESSIONS_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| SessionName::parse(&e.file_name().to_string_lossy()).ok())
        .collect();
    if base.join(crate::persist::SESSION_FILE).exists() {
        out.push(SessionName::default_session());
    }
    out
}

fn list(as_json: bool) -> anyhow::Result<i32> {
    let rows = sessions();
    if as_json {
        let all: Vec<Value> = rows.iter().map(Row::json).collect();
        crate::say!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if rows.is_empty() {
        crate::say!("no sessions (`herdr` starts one)");
        return Ok(0);
    }
    let width = rows
        .iter()
        .map(|r| r.name.as_str().len())
        .max()
        .unwrap_or(0);
    let now = crate::persist::unix_now();
    for r in &rows {
        crate::say!("{}", r.line(width, now));
    }
    Ok(0)
}

/// The session named `name` among `rows` (those that run or were saved); otherwise an
/// error naming the ones there are and the closest name.
fn known(mut rows: Vec<Row>, name: &str) -> anyhow::Result<Row> {
    let session = SessionName::parse(name)?;
    if let Some(at) = rows
        .iter()
        .position(|r| r.name.as_str() == session.as_str())
    {
        return Ok(rows.swap_remove(at));
    }
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    let hint = match crate::suggest::closest(name, &names) {
        Some(c) => format!("; did you mean `{c}`?"),
        None if names.is_empty() => String::new(),
        None => format!("; sessions: {}", names.join(", ")),
    };
    anyhow::bail!(
        "no session named {name}{hint} (`herdr --session {name}` starts a new one; `herdr session list` shows them all)"
    )
}

fn attach(name: Option<&str>) -> anyhow::Result<i32> {
    let session = match name {
        Some(n) => known(sessions(), n)?.name,
        // The one attached to last among those running, else the default.
        None => sessions()
            .into_iter()
            .filter(Row::running)
            .max_by_key(|r| r.count("last_attached").unwrap_or(0))
            .map(|r| r.name)
            .unwrap_or_else(SessionName::default_session),
    };
    Ok(crate::client::attach(&session)?)
}

fn rename(old: &str, new: &str) -> anyhow::Result<i32> {
    let rows = sessions();
    let taken = rows.iter().any(|r| r.name.as_str() == new);
    let row = known(rows, old)?;
    let from = row.name.clone();
    let to = SessionName::parse(new)?;
    if row.running() {
        anyhow::bail!(
            "session {from} is running: its programs were started under that name; stop it first (`herdr session stop {from}`), then rename it"
        );
    }
    if taken {
        anyhow::bail!("a session named {to} exists already (`herdr session list`)");
    }
    let dest = paths::state_dir(&to);
    paths::ensure_private_dir(&dest)?;
    move_state(&paths::state_dir(&from), &from, &dest)?;
    crate::say!("renamed session {from} to {to}");
    Ok(0)
}

fn delete(name: &str, yes: bool) -> anyhow::Result<i32> {
    let row = known(sessions(), name)?;
    let session = row.name.clone();
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!("deleting session {session} needs a yes: pass --yes");
        }
        let what = match row.count("panes") {
            Some(p) if row.running() => format!(
                "stops its server and the programs in its {p} pane(s), and deletes its saved state"
            ),
            _ => "deletes its saved state".to_string(),
        };
        if !crate::say::confirm(&format!("Delete session {session}? This {what}.")) {
            crate::say!("kept session {session}");
            return Ok(1);
        }
    }
    if row.running() {
        let code = super::server::stop(&session)?;
        if code != 0 {
            return Ok(code);
        }
    }
    remove_state(&paths::state_dir(&session), &session)?;
    crate::say!("deleted session {session}");
    Ok(0)
}

/// What in `dir` is the session's own: all of it, but for the default session not the
/// other sessions' folders.
fn own_entries(dir: &Path, session: &SessionName) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if session.is_default() && e.file_name() == paths::SESSIONS_DIR {
            continue;
        }
        out.push(e.path());
    }
    Ok(out)
}

fn move_state(from: &Path, session: &SessionName, to: &Path) -> anyhow::Result<()> {
    for path in own_entries(from, session)? {
        let Some(name) = path.file_name() else {
            continue;
        };
        std::fs::rename(&path, to.join(name)).map_err(|e| {
            anyhow::anyhow!("cannot move {} to {}: {e}", path.display(), to.display())
        })?;
    }
    if !session.is_default() {
        let _ = std::fs::remove_dir(from);
    }
    Ok(())
}

fn remove_state(dir: &Path, session: &SessionName) -> anyhow::Result<()> {
    let entries = match own_entries(dir, session) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for path in entries {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| anyhow::anyhow!("cannot delete {}: {e}", path.display()))?;
    }
    if !session.is_default() {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// "5m", "3h", "2d": how long ago `then` was.
fn ago(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suggest::closest;

    #[test]
    fn a_typo_finds_its_session_and_a_stranger_finds_none() {
        assert_eq!(closest("wrok", &["work", "default"]), Some("work"));
        assert_eq!(closest("defualt", &["work", "default"]), Some("default"));
        assert_eq!(closest("zzz", &["work", "default"]), None);
        assert_eq!(
            closest("othre", &["other"]),
            Some("other"),
            "a swap is one edit"
        );
        // (The distance itself: `suggest`'s tests.)
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(ago(100, 40), "1m");
        assert_eq!(ago(10_000, 10_000 - 7200), "2h");
        assert_eq!(ago(5, 10), "0s");
    }
}
