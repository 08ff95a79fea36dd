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

/// The server's memory for notifications and bells.
pub(crate) struct Notifier {
    limiter: Limiter<TerminalId>,
    bells: Limiter<TerminalId>,
    runner: command::Runner,
    /// Panes whose notifications are being dropped by the limit, and were said to be in
    /// the log once (one line per burst, not one per drop).
    dropping: BTreeSet<TerminalId>,
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
        self.limiter.forget(tid);
        self.bells.forget(tid);
        self.dropping.remove(&tid);
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
        let cfg = &self.session.config;
        if !cfg.notify_states.iter().any(|s| s == state) || cfg.notify_off_for.contains(&agent) {
            return;
        }
        if !self.agents.notify.limiter.allow(tid, Instant::now()) {
            if self.agents.notify.dropping.insert(tid) {
                let no = self.pane_no(pane);
                log::warn!(
                    "notify",
                    "notifications of {no} come too fast; dropping some"
                );
            }
            return;
        }
        self.agents.notify.dropping.remove(&tid);
        let no = self.pane_no(pane);
        let tab = self.session.state.find_pane(pane).map(|pos| pos.tab + 1);
        let text = text::message(&agent, state, &no, tab);
        for c in self.clients.by_id.values_mut() {
            let bytes = text::escape(c.notify, &text);
            if !bytes.is_empty() {
                tell(c, &bytes);
            }
        }
        if !self.session.config.notify_command.is_empty() {
            self.run_notify_command(pane, &agent, state, &text);
        }
    }

    /// Hands the event to the user's command (a thread of its own runs it).
    fn run_notify_command(&mut self, pane: PaneId, agent: &str, state: &str, text: &str) {
        let about = self.pane_json(pane).unwrap_or_default();
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let event = json!({
            "event": "agent.notify",
            "pane": about["id"],
            "tab": about["tab"],
            "workspace": about["workspace"],
            "agent": agent,
            "state": state,
            "cwd": about["cwd"],
            "time": time,
            "text": text,
        });
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
