//! `herdr session list|attach|stop|rename|delete`, and `herdr ls` / `herdr attach`: the
//! sessions of this user, each running (its server answers on its socket), saved (a
//! snapshot in its state folder, for the next start) or both.

use std::io::IsTerminal;
use std::path::Path;

use clap::Subcommand;
use serde_json::Value;

use crate::client::sessions::Row;
use crate::paths::{self, SessionName};
use crate::protocol::api::{Request, ServerRename};

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
        #[arg(add = super::manual::session_names())]
        name: Option<String>,
    },
    /// Stop a session's server and every program in its panes (its saved state stays).
    Stop {
        /// The session.
        #[arg(add = super::manual::session_names())]
        name: String,
    },
    /// Rename a session, running or saved (its saved state and log move with it; programs
    /// started before keep reaching a running one by the old name).
    Rename {
        /// The session's name now.
        #[arg(add = super::manual::session_names())]
        old: String,
        /// Its new name (letters, digits, `-`, `_`, `.`).
        new: String,
    },
    /// Stop a session and delete its saved state (asks first on a terminal).
    Delete {
        /// The session.
        #[arg(add = super::manual::session_names())]
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

fn sessions() -> Vec<Row> {
    crate::client::sessions::all()
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
    for line in crate::client::sessions::lines(&rows) {
        crate::say!("{line}");
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
    if taken {
        anyhow::bail!("a session named {to} exists already (`herdr session list`)");
    }
    if let Some(other) = paths::renamed_to(&to) {
        anyhow::bail!("the name {to} is an old name of session {other}, kept while it runs");
    }
    if row.running() {
        // Renamed by its server, which keeps running: see `server::rename`.
        let Some(mut api) = crate::client::api::ApiClient::connect(&from)? else {
            anyhow::bail!("session {from} stopped meanwhile; run the rename again");
        };
        api.request(&Request::ServerRename(ServerRename {
            name: to.as_str().into(),
        }))?;
        crate::say!("renamed session {from} to {to} (its programs keep running)");
        return Ok(0);
    }
    paths::move_state(&from, &to)?;
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

fn remove_state(dir: &Path, session: &SessionName) -> anyhow::Result<()> {
    let entries = match paths::own_state_entries(dir, session) {
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

#[cfg(test)]
mod tests {
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
}
