//! Re-reading config.toml in a running server (`server.reload_config`, or the prefix then
//! `R`): the new settings apply at once, nothing is restarted. Bad entries fall back to
//! their defaults exactly as at start (the rest still applies), and the answer says what
//! changed, what could not apply now, and every problem.

use crate::log;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::start::{config_path, load_config_at, problems_line};
use super::Server;
use crate::config::Diagnostic;

/// Settings the server reads only at some moments, and when a change takes effect.
const LATER: &[(&str, &str)] = &[
    ("shell", "for panes started from now on"),
    ("scrollback_lines", "for panes started from now on"),
    (
        "persistence.resume_agents_on_restore",
        "read when the server restores the session at its start",
    ),
    ("update.releases_url", "read by each `herdr update`"),
    (
        "update.download_timeout_secs",
        "read by each `herdr update`",
    ),
    ("remote.install", "read by each `herdr --remote`"),
    ("remote.ssh", "read by each `herdr --remote`"),
];

/// What a reload did.
pub(crate) struct Reloaded {
    pub path: PathBuf,
    /// The keys that changed and apply now, as `key = value`.
    pub applied: Vec<String>,
    /// The keys that changed and apply only later or not to everyone, and why.
    pub not_applied: Vec<String>,
    pub problems: Vec<Diagnostic>,
}

impl Reloaded {
    pub(crate) fn to_json(&self) -> Value {
        let problems: Vec<String> = self.problems.iter().map(|d| d.to_string()).collect();
        json!({
            "path": self.path.display().to_string(),
            "applied": self.applied,
            "not_applied": self.not_applied,
            "problems": problems,
        })
    }

    /// The status line's word on it.
    fn status_line(&self) -> String {
        match self.problems.is_empty() {
            true => "config reloaded".to_string(),
            false => problems_line(&self.problems),
        }
    }
}

impl Server {
    /// Re-reads the config file and applies it; says so on every client's status line and
    /// in the log.
    pub(crate) fn reload_config(&mut self) -> Reloaded {
        let path = config_path();
        let loaded = load_config_at(&path);
        let changes = crate::config::changes(&self.session.config, &loaded.config);
        let mut done = Reloaded {
            path,
            applied: Vec::new(),
            not_applied: Vec::new(),
            problems: loaded.diags,
        };
        for (key, value) in changes {
            match self.limit_of(&key, &loaded.config) {
                Some(why) => done.not_applied.push(format!("{key} = {value}: {why}")),
                None => done.applied.push(format!("{key} = {value}")),
            }
        }
        let old = std::mem::replace(&mut self.session.config, loaded.config);
        self.session.bindings = loaded.bindings;
        self.agents.activity.rules = loaded.rules;
        self.apply_live(&old);
        for d in &done.problems {
            log::warn!("config", "{d}");
        }
        log::info!(
            "config",
            "reloaded from {}: {} applied, {} not applied now, {} problem(s)",
            done.path.display(),
            done.applied.len(),
            done.not_applied.len(),
            done.problems.len()
        );
        self.say(done.status_line());
        done
    }

    /// Why a change of `key` does not (all) apply now, if it does not.
    fn limit_of(&self, key: &str, new: &crate::config::Config) -> Option<String> {
        if let Some((_, when)) = LATER.iter().find(|(k, _)| *k == key) {
            return Some(when.to_string());
        }
        let own_keys = self
            .clients
            .by_id
            .values()
            .filter(|c| c.bindings.is_some())
            .count();
        match key {
            "prefix" | "keys" if own_keys > 0 => Some(format!(
                "{own_keys} attached client(s) use the key bindings they brought \
                 (--remote-keybindings local); they keep them"
            )),
            "notify.terminal" if new.notify_terminal != "off" && !self.clients.by_id.is_empty() => {
                Some(
                    "clients already attached keep the style their terminal was found to take; \
                     clients attaching from now on use it"
                        .to_string(),
                )
            }
            _ => None,
        }
    }

    /// What the server keeps of the config outside it: the sidebar (only when its setting
    /// changed: a sidebar toggled with the prefix stays as it is otherwise), the layout
    /// for its width, and the clients' notification style (`off`, or back from it).
    fn apply_live(&mut self, old: &crate::config::Config) {
        let new = &self.session.config;
        let sidebar = old.sidebar != new.sidebar;
        let width = old.sidebar_width != new.sidebar_width;
        if sidebar {
            self.session.sidebar = new.sidebar;
        }
        if old.notify_terminal != new.notify_terminal {
            let setting = new.notify_terminal.clone();
            for c in self.clients.by_id.values_mut() {
                c.notify = super::notify::client_style(&setting, c.notify_said);
            }
        }
        if sidebar || width {
            self.relayout();
        }
        for c in self.clients.by_id.values_mut() {
            c.prev = None;
        }
        self.request_render();
    }
}
