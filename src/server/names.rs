//! Tabs named after what runs in them (tmux's automatic-rename): while clients look, the
//! program in front of each pane of the shown workspace is looked up soon after anything
//! happened (output, keys, a frame), at most once a second, and a pane whose title its
//! program did not set is named after it (`vim`, `npm`). What runs in front changes
//! through the shell's job control, after keys (a command run) or with output (a program
//! ended, the prompt is back): a session where nothing happens looks nothing up and
//! never wakes for it.

use std::time::{Duration, Instant};

use super::Server;

/// The programs in front are looked up at most this often.
pub(crate) const NAMES_INTERVAL: Duration = Duration::from_secs(1);
/// How long after something happened they are looked up (a command typed has started by
/// then).
pub(crate) const NAMES_DELAY: Duration = Duration::from_millis(300);

impl super::Clients {
    /// Something happened that may change what runs in front of a pane: the programs are
    /// looked up soon (see the module).
    pub(crate) fn names_soon(&mut self) {
        if self.names_at.is_none() {
            let at = (Instant::now() + NAMES_DELAY).max(self.names_last + NAMES_INTERVAL);
            self.names_at = Some(at);
        }
    }
}

impl Server {
    /// When the programs in front are looked up next: only while someone looks.
    pub(super) fn names_deadline(&self) -> Option<Instant> {
        self.clients
            .names_at
            .filter(|_| !self.clients.by_id.is_empty())
    }

    /// Looks up the program in front of each pane of the shown workspace; draws again if
    /// a name changed.
    pub(super) fn names_tick(&mut self, now: Instant) {
        self.clients.names_at = None;
        self.clients.names_last = now;
        let Some(ws) = self.session.state.active_workspace() else {
            return;
        };
        let terminals: Vec<_> = ws
            .tabs
            .iter()
            .flat_map(|t| t.layout.panes())
            .filter_map(|p| self.session.state.panes.get(&p).map(|ps| ps.terminal))
            .collect();
        let mut changed = false;
        for tid in terminals {
            let Some(rt) = self.session.runtimes.get(tid) else {
                continue;
            };
            // Only the command line is read: a name is all a tab needs.
            let leader = rt.pid;
            let program = rt
                .foreground_pid()
                .filter(|pid| Some(*pid as u32) != leader)
                .and_then(crate::pty::proc::cmdline)
                .and_then(|argv| Some(crate::model::state::program_name(argv.first()?).to_string()))
                .filter(|n| !n.is_empty());
            if let Some(term) = self.session.state.terminals.get_mut(&tid) {
                if term.program != program {
                    term.program = program;
                    changed = true;
                }
            }
        }
        if changed {
            self.request_render();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{NAMES_DELAY, NAMES_INTERVAL};
    use crate::server::Clients;

    /// Nothing happened: nothing is due. Something did: one look-up soon, never sooner
    /// than a second after the last one, however much happens meanwhile.
    #[test]
    fn names_are_looked_up_after_something_happened_at_most_once_a_second() {
        let mut c = Clients {
            names_last: Instant::now() - Duration::from_secs(60),
            ..Clients::default()
        };
        assert_eq!(c.names_at, None);
        let before = Instant::now();
        c.names_soon();
        let due = c.names_at.unwrap();
        assert!(due >= before + NAMES_DELAY && due <= Instant::now() + NAMES_DELAY);
        c.names_soon();
        assert_eq!(c.names_at, Some(due));
        // Looked up just now: the next one waits out the interval.
        c.names_at = None;
        c.names_last = Instant::now();
        c.names_soon();
        assert!(c.names_at.unwrap() >= c.names_last + NAMES_INTERVAL);
    }
}
