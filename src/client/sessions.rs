//! This user's sessions as `herdr session list` and the session picker show them: each
//! running (its server answers on its socket), saved (a snapshot in its state folder, for
//! the next start) or both.

use serde_json::{json, Value};

use crate::client::api::ApiClient;
use crate::paths::{self, SessionName};
use crate::persist::snapshot;
use crate::protocol::api::{NoParams, Request};

/// How long a running server may take to say how it is: one that does not answer in
/// time is listed as running with nothing more known.
const STATUS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// What is known of one session.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: SessionName,
    /// The server's `server.status`, when it runs.
    pub status: Option<Value>,
    /// The saved snapshot's pane count and time, when there is one.
    pub saved: Option<(usize, u64)>,
}

impl Row {
    fn of(name: SessionName) -> Row {
        let status = ApiClient::connect(&name)
            .ok()
            .flatten()
            .and_then(|mut api| {
                api.set_timeout(Some(STATUS_TIMEOUT)).ok()?;
                api.request(&Request::ServerStatus(NoParams {})).ok()
            });
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

    pub fn running(&self) -> bool {
        self.status.is_some()
    }

    pub fn count(&self, key: &str) -> Option<u64> {
        self.status.as_ref()?.get(key)?.as_u64()
    }

    fn panes(&self) -> Option<u64> {
        self.count("panes").or(self.saved.map(|(p, _)| p as u64))
    }

    pub fn json(&self) -> Value {
        json!({
            "name": self.name.as_str(),
            "running": self.running(),
            "panes": self.panes(),
            "clients": self.count("clients"),
            "agents_waiting": self.count("agents_waiting"),
            "last_attached": self.count("last_attached"),
            "saved_at": self.saved.map(|(_, at)| at),
        })
    }

    /// `running  3 panes  1 client  2 agents waiting  attached 5m ago`.
    pub fn facts(&self, now: u64) -> String {
        let plural = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut parts = vec![if self.running() { "running" } else { "saved" }.to_string()];
        if let Some(p) = self.panes() {
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
        parts.join("  ")
    }

    /// `work  running  3 panes …`, the name padded to `width`.
    pub fn line(&self, width: usize, now: u64) -> String {
        format!("{:<width$}  {}", self.name.as_str(), self.facts(now))
    }
}

/// A line of each row, names padded to the longest, ages counted from now.
pub fn lines(rows: &[Row]) -> Vec<String> {
    let width = rows
        .iter()
        .map(|r| r.name.as_str().len())
        .max()
        .unwrap_or(0);
    let now = crate::persist::unix_now();
    rows.iter().map(|r| r.line(width, now)).collect()
}

/// The names of the sessions that have a socket or saved state, sorted, without asking
/// any server (for completion).
pub fn names() -> Vec<SessionName> {
    let mut names = paths::socket_sessions();
    names.extend(state_sessions());
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    names.dedup_by(|a, b| a.as_str() == b.as_str());
    names
}

/// Every session that runs or was saved, by name.
pub fn all() -> Vec<Row> {
    names()
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

/// "5m", "3h", "2d": how long ago `then` was.
pub fn ago(now: u64, then: u64) -> String {
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

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(ago(100, 40), "1m");
        assert_eq!(ago(10_000, 10_000 - 7200), "2h");
        assert_eq!(ago(5, 10), "0s");
    }

    #[test]
    fn facts_say_what_runs_and_what_waits() {
        let row = Row {
            name: SessionName::parse("work").unwrap(),
            status: Some(
                json!({"panes": 3, "clients": 1, "agents_waiting": 2, "last_attached": 700}),
            ),
            saved: Some((2, 100)),
        };
        assert_eq!(
            row.line(6, 1000),
            "work    running  3 panes  1 client  2 agents waiting  attached 5m ago"
        );
        let saved = Row {
            status: None,
            ..row
        };
        assert_eq!(saved.facts(1000), "saved  2 panes  saved 15m ago");
    }
}
