//! Panes whose program ended and that stay (tmux's `remain-on-exit`): which ones stay,
//! the keys a finished pane takes (Enter runs its command again, `x` closes it), and the
//! rerun itself, a transaction of `Session`'s.

use super::panes::PaneError;
use super::{Server, Session};
use crate::input::keys::{Key, KeyCode};
use crate::model::ids::{PaneId, TerminalId};
use ratatui::layout::Rect;

impl Session {
    /// Whether a terminal whose program ended keeps its pane: by `remain_on_exit`, those
    /// started with a command by default (a shell that exits closes its pane).
    pub(crate) fn remains(&self, tid: TerminalId) -> bool {
        match self.config.remain_on_exit.as_str() {
            "always" => true,
            "never" => false,
            _ => self
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| !t.argv.is_empty()),
        }
    }

    /// The focused pane's terminal when its program has ended.
    pub(crate) fn ended_focused(&self) -> Option<TerminalId> {
        let tid = self.state.focused_terminal()?;
        self.state.exit_status(tid).map(|_| tid)
    }

    /// Starts a finished pane's command again, in the folder and size it had, under the
    /// same pane (its number and place stay). On failure nothing changes.
    pub(crate) fn rerun(&mut self, pane: PaneId) -> Result<TerminalId, PaneError> {
        let ps = self.state.panes.get(&pane).ok_or(PaneError::NoPane)?;
        let (old, no) = (ps.terminal, ps.no.0);
        let term = self.state.terminals.get(&old).ok_or(PaneError::NoPane)?;
        let (argv, cwd) = (term.argv.clone(), term.cwd.clone());
        let (rows, cols) = self.runtimes.get(old).map_or((24, 80), |rt| rt.size);
        let rect = Rect::new(0, 0, cols, rows);
        let (term, rt) = self.spawn_terminal_as(no, argv, cwd, rect, None)?;
        let new = term.id;
        self.runtimes.insert(new, rt);
        self.state.terminals.insert(new, Box::new(term));
        if let Some(ps) = self.state.panes.get_mut(&pane) {
            ps.terminal = new;
        }
        self.state.terminals.remove(&old);
        self.runtimes.remove(old);
        self.scroll.remove(&old);
        self.hidden_output.remove(&old);
        Ok(new)
    }
}

impl Server {
    /// A key typed into a finished pane: Enter reruns it, `x` closes it; the rest is
    /// dropped (its program is gone).
    pub(super) fn ended_key(&mut self, tid: TerminalId, key: Key) {
        let Some(pane) = self.session.state.pane_of_terminal(tid) else {
            return;
        };
        if !key.mods.is_empty() {
            return;
        }
        match key.code {
            KeyCode::Enter => {
                match self.session.rerun(pane) {
                    Ok(new) => {
                        self.forget_agent_activity(tid);
                        self.recheck_waits(Some(new));
                    }
                    Err(e) => self.say(format!("rerun failed: {e}")),
                }
                self.relayout();
            }
            KeyCode::Char('x') => self.close_pane(pane),
            _ => {}
        }
    }
}
