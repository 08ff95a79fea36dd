//! Tabs named after what runs in them (tmux's automatic-rename): while clients look,
//! once a second, the program in front of each pane of the shown workspace is looked up,
//! and a pane whose title its program did not set is named after it (`vim`, `npm`).

use std::time::{Duration, Instant};

use super::Server;

/// How often the programs in front are looked up.
pub(crate) const NAMES_INTERVAL: Duration = Duration::from_secs(1);

impl Server {
    /// When the programs in front are looked up next: only while someone looks.
    pub(super) fn names_deadline(&self) -> Option<Instant> {
        (!self.clients.by_id.is_empty()).then_some(self.clients.names_at)
    }

    /// Looks up the program in front of each pane of the shown workspace; draws again if
    /// a name changed.
    pub(super) fn names_tick(&mut self, now: Instant) {
        self.clients.names_at = now + NAMES_INTERVAL;
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
