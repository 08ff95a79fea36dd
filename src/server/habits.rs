//! The tmux habits: panes in order (`o`), the last pane (`;`), swapping panes (`{` `}`),
//! questions before closing what runs (`x`, `&`: y/n on the status line), and resize keys
//! that repeat without the prefix for a moment (tmux's `-r`).

use std::time::{Duration, Instant};

use super::{ClientId, Mode, Server, Session};
use crate::bindings::Action;
use crate::input::keys::{Key, KeyCode};
use crate::model::ids::{PaneId, TabNo};

/// How long after a resize key the next one works without the prefix (tmux's
/// `repeat-time`).
pub(crate) const REPEAT_TIME: Duration = Duration::from_millis(500);

/// What a client is asked to confirm with `y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    ClosePane(PaneId),
    CloseTab(TabNo),
}

impl Server {
    /// `o`: the next pane in order (wrapping).
    pub(super) fn focus_next_pane(&mut self) {
        if let Some(tab) = self.session.state.active_tab_mut() {
            if let Some(next) = tab.neighbour_in_order(true) {
                tab.zoomed = false;
                tab.focus(next);
            }
        }
    }

    /// `;`: back to the pane focused before, if it is still in the tab.
    pub(super) fn focus_last_pane(&mut self) {
        if let Some(tab) = self.session.state.active_tab_mut() {
            match tab.last.filter(|p| tab.layout.contains(*p)) {
                Some(last) => {
                    tab.zoomed = false;
                    tab.focus(last);
                }
                None => self.say("no last pane"),
            }
        }
    }

    /// `{` / `}`: the focused pane changes places with the previous / next one, and
    /// stays focused.
    pub(super) fn swap_focused(&mut self, forward: bool) {
        if let Some(tab) = self.session.state.active_tab_mut() {
            if let Some(other) = tab.neighbour_in_order(forward) {
                let focused = tab.focused;
                tab.layout.swap(focused, other);
            }
        }
        self.relayout();
    }

    /// `x`: a pane whose program still runs is closed only once the client says yes;
    /// one whose program ended closes at once.
    pub(super) fn ask_close_pane(&mut self, id: ClientId) {
        let Some(pane) = self.session.state.focused_pane() else {
            return;
        };
        let ended = self.session.state.panes.get(&pane).is_some_and(|ps| {
            let term = self.session.state.terminals.get(&ps.terminal);
            term.is_some_and(|t| t.exited.is_some())
        });
        if ended {
            self.close_pane(pane);
        } else {
            self.set_mode(id, Mode::Confirm(Ask::ClosePane(pane)));
        }
    }

    /// `&`: the tab and all its panes, once the client says yes.
    pub(super) fn ask_close_tab(&mut self, id: ClientId) {
        if let Some(tab) = self.session.state.active_tab() {
            let no = tab.no;
            self.set_mode(id, Mode::Confirm(Ask::CloseTab(no)));
        }
    }

    /// The answer to a question: `y` does it, anything else leaves things as they are.
    pub(super) fn answer(&mut self, id: ClientId, ask: Ask, key: &Key) {
        self.set_mode(id, Mode::Normal);
        if key.code != KeyCode::Char('y') || !key.mods.is_empty() {
            return;
        }
        match ask {
            Ask::ClosePane(pane) => self.close_pane(pane),
            Ask::CloseTab(no) => {
                let panes = self
                    .session
                    .state
                    .workspaces
                    .iter()
                    .flat_map(|w| &w.tabs)
                    .find(|t| t.no == no)
                    .map(|t| t.layout.panes())
                    .unwrap_or_default();
                for pane in panes {
                    self.close_pane(pane);
                }
            }
        }
    }

    /// After a resize key, the same kind of key works without the prefix for a moment.
    /// True when `key` was taken as such a repeat.
    pub(super) fn repeat_key(&mut self, id: ClientId, key: &Key) -> bool {
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return false;
        };
        let now = Instant::now();
        if client.repeat_until.is_none_or(|until| now >= until) {
            client.repeat_until = None;
            return false;
        }
        let action = self.bindings_of(id).lookup(key);
        match action.filter(|a| is_repeatable(*a)) {
            Some(action) => {
                self.action(id, action);
                true
            }
            None => {
                if let Some(c) = self.clients.by_id.get_mut(&id) {
                    c.repeat_until = None;
                }
                false
            }
        }
    }

    /// Opens the repeat window after a repeatable action.
    pub(super) fn start_repeat(&mut self, id: ClientId) {
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            c.repeat_until = Some(Instant::now() + REPEAT_TIME);
        }
    }
}

impl Session {
    /// The question as the status line shows it.
    pub(crate) fn question(&self, ask: Ask) -> String {
        match ask {
            Ask::ClosePane(pane) => {
                let st = &self.state;
                let no = st.panes.get(&pane).map(|p| p.no.to_string());
                let what = st
                    .panes
                    .get(&pane)
                    .and_then(|ps| self.runtimes.get(ps.terminal))
                    .and_then(|rt| rt.foreground())
                    .and_then(|fg| fg.argv.first().cloned())
                    .map(|p| format!(" ({})", program_name(&p)))
                    .unwrap_or_default();
                format!("close pane {}{what}? (y/n)", no.unwrap_or_default())
            }
            Ask::CloseTab(no) => format!("close tab {no} and its panes? (y/n)"),
        }
    }
}

/// The actions tmux binds with `-r`: the resize keys.
pub(crate) fn is_repeatable(action: Action) -> bool {
    matches!(
        action,
        Action::ResizeLeft | Action::ResizeDown | Action::ResizeUp | Action::ResizeRight
    )
}

/// `/usr/bin/vim` → `vim`; a login shell's `-bash` → `bash`.
fn program_name(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.trim_start_matches('-')
}
