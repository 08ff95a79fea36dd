//! "Needs you": an agent that becomes blocked, or finishes while no client shows it, is
//! announced to every attached client's terminal (a desktop notification by OSC 9 or
//! OSC 777, or a bell, as that client judged its terminal) and to the user's
//! `[notify] command`; and a bell rung in any pane rings the clients' terminals, as
//! tmux's default `bell-action any` does, the tab that rang marked until it is shown.
//!
//! Invariants: both are rate-limited per pane and in all (`limit`), so a flapping agent
//! or a pane printing a megabyte of BEL costs a bounded number of writes and processes,
//! and each event costs O(1) before its limit is checked; nothing here waits (bytes go
//! to each client's writer, commands to threads of their own: `command`).

pub mod command;
pub mod limit;
pub mod text;

use crate::log;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;

use self::limit::{Limiter, Rate};
use super::Server;
use crate::model::ids::{PaneId, TerminalId};
use crate::protocol::terminal::Notify;

/// Notifications of one pane: three at once, then one every 20 s (a flapping agent
/// notifies a few times, not at each flap).
const PER_PANE: Rate = Rate {
    capacity: 3,
    refill: Duration::from_secs(20),
};
/// Notifications of all panes together: ten at once, then one every 6 s.
const ALL_PANES: Rate = Rate {
    capacity: 10,
    refill: Duration::from_secs(6),
};
/// Bells passed on from one pane: two at once, then one a second.
const BELLS_PER_PANE: Rate = Rate {
    capacity: 2,
    refill: Duration::from_secs(1),
};
/// Bells passed on from all panes together: four at once, then one every 250 ms.
const BELLS_ALL_PANES: Rate = Rate {
    capacity: 4,
    refill: Duration::from_millis(250),
};

/// Bytes of notifications and bells kept for a client whose writer is full, at most (a
/// few dozen notifications; older ones beyond are dropped).
pub(crate) const MAX_OWED: usize = 4096;

/// Sends a notification or a bell to a client now, or, when its writer has no room (it is
/// behind), ahead of its next frame.
fn tell(client: &mut super::Client, bytes: &[u8]) {
    if !client.owed.is_empty() || !client.writer.send_output(bytes.to_vec()) {
        if client.owed.len() + bytes.len() <= MAX_OWED {
            client.owed.extend_from_slice(bytes);
        }
        client.behind = true;
    }
}

/// Whose notifications a limit counts: a pane of this server, or an agent of a machine
/// (its name and pane, hashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    Terminal(TerminalId),
    Remote(u64),
}

impl Source {
    pub(crate) fn remote(machine: &str, pane: &str) -> Source {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (machine, pane).hash(&mut h);
        Source::Remote(h.finish())
    }
}

/// The server's memory for notifications and bells.
pub(crate) struct Notifier {
    limiter: Limiter<Source>,
    bells: Limiter<TerminalId>,
    runner: command::Runner,
    /// Panes whose notifications are being dropped by the limit, and were said to be in
    /// the log once (one line per burst, not one per drop).
    dropping: BTreeSet<Source>,
}

impl Default for Notifier {
    fn default() -> Notifier {
        Notifier {
            limiter: Limiter::new(PER_PANE, ALL_PANES),
            bells: Limiter::new(BELLS_PER_PANE, BELLS_ALL_PANES),
            runner: command::Runner::default(),
            dropping: BTreeSet::new(),
        }
    }
}

impl Notifier {
    /// A closed terminal leaves nothing behind.
    pub(crate) fn forget(&mut self, tid: TerminalId) {
        self.limiter.forget(Source::Terminal(tid));
        self.bells.forget(tid);
        self.dropping.remove(&Source::Terminal(tid));
    }

    /// The server stops: no command of its keeps running.
    pub(crate) fn stop(&self) {
        self.runner.stop();
    }
}

/// How the server notifies a client: as it said its terminal does, unless the server's
/// `[notify] terminal` is `off`; for an older client (it said nothing) the setting's
/// style, the bell for `auto`.
pub(crate) fn client_style(setting: &str, said: Option<Notify>) -> Notify {
    match (setting, said) {
        ("off", _) => Notify::Off,
        (_, Some(style)) if style != Notify::Unknown => style,
        ("osc9", _) => Notify::Osc9,
        ("osc777", _) => Notify::Osc777,
        _ => Notify::Bell,
    }
}

impl Server {
    /// An agent's shown state became `state`: if that state notifies (and its agent is not
    /// turned off, and its pane is within its limit), every client's terminal is told and
    /// the user's command run.
    pub(crate) fn agent_notify(&mut self, tid: TerminalId, pane: PaneId, state: &str) {
        let agent = self
            .session
            .state
            .terminals
            .get(&tid)
            .and_then(|t| t.agent.clone())
            .unwrap_or_else(|| "agent".into());
        let no = self.pane_no(pane);
        let tab = self.session.state.find_pane(pane).map(|pos| pos.tab + 1);
        let about = |s: &Server| {
            let about = s.pane_json(pane).unwrap_or_default();
            json!({
                "pane": about["id"],
                "tab": about["tab"],
                "workspace": about["workspace"],
                "cwd": about["cwd"],
            })
        };
        let text = text::message(&agent, state, &no, tab);
        self.needs_you(Source::Terminal(tid), (&agent, state), &no, &text, &about);
    }

    /// An agent of a saved machine became `state` (its link's view said so): told as a
    /// pane of this server's is, its place named `machine:pane`.
    pub(crate) fn machine_agent_notify(&mut self, machine: &str, agent: &serde_json::Value) {
        let field = |k: &str| agent.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let (pane, state) = (field("pane"), field("state"));
        let name = Some(field("agent"))
            .filter(|a| !a.is_empty())
            .unwrap_or("agent");
        let place = format!("{machine}:{pane}");
        let text = text::message(name, state, &place, None);
        let about = |_: &Server| {
            json!({
                "machine": machine,
                "pane": agent.get("pane"),
                "tab": agent.get("tab"),
                "workspace": agent.get("workspace"),
                "cwd": agent.get("cwd"),
            })
        };
        let source = Source::remote(machine, pane);
        self.needs_you(source, (name, state), &place, &text, &about);
    }

    /// Tells every client's terminal `text`, and the user's command the event (where it
    /// is from `about`), if `state` notifies, the agent is not turned off and `source` is
    /// within its limit.
    fn needs_you(
        &mut self,
        source: Source,
        (agent, state): (&str, &str),
        place: &str,
        text: &str,
        about: &dyn Fn(&Server) -> serde_json::Value,
    ) {
        let cfg = &self.session.config;
        if !cfg.notify_states.iter().any(|s| s == state)
            || cfg.notify_off_for.iter().any(|a| a == agent)
        {
            return;
        }
        if !self.agents.notify.limiter.allow(source, Instant::now()) {
            if self.agents.notify.dropping.insert(source) {
                log::warn!(
                    "notify",
                    "notifications of {place} come too fast; dropping some"
                );
            }
            return;
        }
        self.agents.notify.dropping.remove(&source);
        for c in self.clients.by_id.values_mut() {
            let bytes = text::escape(c.notify, text);
            if !bytes.is_empty() {
                tell(c, &bytes);
            }
        }
        if self.session.config.notify_command.is_empty() {
            return;
        }
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // (In the order docs/agents.md shows: where, what, then when and the words.)
        let mut event = serde_json::Map::new();
        event.insert("event".into(), json!("agent.notify"));
        let mut about = about(self);
        let cwd = about.get_mut("cwd").map(serde_json::Value::take);
        if let serde_json::Value::Object(where_) = about {
            event.extend(where_.into_iter().filter(|(k, _)| k != "cwd"));
        }
        event.insert("agent".into(), json!(agent));
        event.insert("state".into(), json!(state));
        event.insert("cwd".into(), cwd.unwrap_or_default());
        event.insert("time".into(), json!(time));
        event.insert("text".into(), json!(text));
        let event = serde_json::Value::Object(event);
        let argv = self.session.config.notify_command.clone();
        let shown = command::shown(&argv);
        if let Err(e) = self.agents.notify.runner.run(argv, format!("{event}\n")) {
            log::warn!("notify", "command {shown} not run: {e}");
        }
    }

    /// A program rang the bell: the clients' terminals ring too (within the limits), and
    /// a pane nobody sees is marked until it is shown.
    pub(crate) fn pane_bell(&mut self, tid: TerminalId) {
        if self.session.config.notify_bells == "off" {
            return;
        }
        if !self.is_visible(tid) || self.clients.by_id.is_empty() {
            let pane = self.session.state.pane_of_terminal(tid);
            if let Some(ps) = pane.and_then(|p| self.session.state.panes.get_mut(&p)) {
                if !ps.bell {
                    ps.bell = true;
                    self.request_render();
                }
            }
        }
        if self.agents.notify.bells.allow(tid, Instant::now()) {
            for c in self.clients.by_id.values_mut() {
                tell(c, b"\x07");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_notified_as_it_said_unless_the_server_turned_it_off() {
        assert_eq!(client_style("auto", Some(Notify::Osc777)), Notify::Osc777);
        assert_eq!(client_style("osc9", Some(Notify::Osc777)), Notify::Osc777);
        assert_eq!(client_style("off", Some(Notify::Osc9)), Notify::Off);
        assert_eq!(client_style("auto", Some(Notify::Off)), Notify::Off);
        // Older clients, and words this server does not know.
        assert_eq!(client_style("auto", None), Notify::Bell);
        assert_eq!(client_style("osc9", None), Notify::Osc9);
        assert_eq!(
            client_style("osc777", Some(Notify::Unknown)),
            Notify::Osc777
        );
        assert_eq!(client_style("bell", None), Notify::Bell);
    }
}
