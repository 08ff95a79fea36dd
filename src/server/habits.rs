//! The tmux habits: panes in order (`o`), the last pane (`;`), swapping panes (`{` `}`),
//! questions before closing what runs (`x`, `&`: y/n on the status line), and resize keys
//! that repeat without the prefix for a moment (tmux's `-r`).

use std::time::{Duration, Instant};

use super::{ClientId, Mode, Server, Session};
use crate::bindings::Action;
use crate::input::keys::{Key, KeyCode};
use crate::model::ids::{PaneId, TabNo, WorkspaceNo};

/// How long after a resize key the next one works without the prefix (tmux's
/// `repeat-time`).
pub(crate) const REPEAT_TIME: Duration = Duration::from_millis(500);

/// What a client is asked: to confirm with `y`, or a new name typed on the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    ClosePane(PaneId),
    CloseTab(TabNo),
    /// `,`: the tab's name (empty: named after its program again).
    RenameTab(TabNo),
    /// `$`: the workspace's name.
    RenameWorkspace(WorkspaceNo),
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
        let st = &self.session.state;
        let ended = st
            .panes
            .get(&pane)
            .and_then(|ps| st.exit_status(ps.terminal));
        if ended.is_some() {
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

    /// `,` / `$`: a prompt on the status line for the focused tab's / workspace's name,
    /// starting from the name it has.
    pub(super) fn ask_rename(&mut self, id: ClientId, workspace: bool) {
        let st = &self.session.state;
        let (ask, now) = match (workspace, st.active_workspace(), st.active_tab()) {
            (true, Some(ws), _) => (Ask::RenameWorkspace(ws.no), ws.name.clone()),
            (false, _, Some(tab)) => (Ask::RenameTab(tab.no), tab.name.clone().unwrap_or_default()),
            _ => return,
        };
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            c.typed = now;
        }
        self.set_mode(id, Mode::Confirm(ask));
    }

    /// A key while a name is typed: text, Backspace, ctrl+u clears, Enter applies, Esc
    /// leaves it as it was.
    fn rename_key(&mut self, id: ClientId, ask: Ask, key: &Key) {
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let ctrl = key.mods.contains(crate::input::keys::Mods::CTRL);
        match key.code {
            KeyCode::Esc => {}
            KeyCode::Enter => {
                let name = std::mem::take(&mut c.typed).trim().to_string();
                self.set_mode(id, Mode::Normal);
                return self.rename(ask, name);
            }
            KeyCode::Backspace => {
                c.typed.pop();
                return self.request_render();
            }
            KeyCode::Char('u') if ctrl => {
                c.typed.clear();
                return self.request_render();
            }
            // A name is one line of at most a screen's width.
            KeyCode::Char(ch) if !ctrl && c.typed.chars().count() < 200 => {
                c.typed.push(ch);
                return self.request_render();
            }
            _ => return,
        }
        c.typed.clear();
        self.set_mode(id, Mode::Normal);
    }

    fn rename(&mut self, ask: Ask, name: String) {
        let st = &mut self.session.state;
        match ask {
            Ask::RenameTab(no) => {
                let tab = st
                    .workspaces
                    .iter_mut()
                    .flat_map(|w| &mut w.tabs)
                    .find(|t| t.no == no);
                if let Some(tab) = tab {
                    tab.name = (!name.is_empty()).then_some(name);
                }
            }
            // A workspace always has a name: an empty one leaves it as it was.
            Ask::RenameWorkspace(no) if !name.is_empty() => {
                if let Some(ws) = st.workspaces.iter_mut().find(|w| w.no == no) {
                    ws.name = name;
                }
            }
            _ => {}
        }
        self.request_render();
    }

    /// The answer to a question: `y` does it, anything else leaves things as they are.
    pub(super) fn answer(&mut self, id: ClientId, ask: Ask, key: &Key) {
        if matches!(ask, Ask::RenameTab(_) | Ask::RenameWorkspace(_)) {
            return self.rename_key(id, ask, key);
        }
        self.set_mode(id, Mode::Normal);
        if key.code != KeyCode::Char('y') || !key.mods.is_empty() {
            return;
        }
        match ask {
            Ask::RenameTab(_) | Ask::RenameWorkspace(_) => {}
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

    /// A key over the help: `j`/`k`, arrows and PageUp/PageDown/Space scroll it (when it
    /// does not fit); any other key closes it.
    pub(super) fn help_key(&mut self, id: ClientId, key: &Key) {
        // (Copy mode's keys and a heading come first while the focused pane copies.)
        let most = self.bindings_of(id).help_rows().len() + crate::model::copy::KEYS.len() + 2;
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let page = usize::from(c.size.1).saturating_sub(6).max(1);
        let scroll = &mut c.help_scroll;
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => *scroll += 1,
            KeyCode::Char('k') | KeyCode::Up => *scroll = scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => *scroll += page,
            KeyCode::PageUp => *scroll = scroll.saturating_sub(page),
            _ => {
                *scroll = 0;
                return self.set_mode(id, Mode::Normal);
            }
        }
        *scroll = (*scroll).min(most);
        self.request_render();
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
    /// The question as the status line shows it (`typed`: the name typed so far).
    pub(crate) fn question(&self, ask: Ask, typed: &str) -> String {
        match ask {
            Ask::RenameTab(no) => format!("rename tab {no}: {typed}_"),
            Ask::RenameWorkspace(no) => format!("rename workspace {no}: {typed}_"),
            Ask::ClosePane(pane) => {
                let st = &self.state;
                let no = st.panes.get(&pane).map(|p| p.no.to_string());
                let what = st
                    .panes
                    .get(&pane)
                    .and_then(|ps| self.runtimes.get(ps.terminal))
                    .and_then(|rt| rt.foreground())
                    .and_then(|fg| fg.argv.first().cloned())
                    .map(|p| format!(" ({})", crate::model::state::program_name(&p)))
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
