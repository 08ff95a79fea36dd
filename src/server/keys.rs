//! What a client's keystrokes and mouse events do: forwarded to the focused pane, or —
//! after the prefix — looked up in the bindings; mouse clicks focus panes, select tabs and
//! workspaces, drag dividers; the wheel scrolls history. Scroll/copy mode keys live here
//! too.

use std::time::Instant;

use super::{ClientId, Mode, Server, Session};
use crate::bindings::Action;
use crate::input::keys::KeyCode;
use crate::input::mouse::{encode_for_pane, MouseButton, MouseEvent, MouseKind};
use crate::input::parse::Token;
use crate::model::ids::TerminalId;
use crate::model::layout::{Side, SplitDir};
use crate::pty::WriteError;
use crate::render::view::{self, Hit, Overlay};

/// A paste in progress (it may come in pieces): where it goes and how.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paste {
    tid: TerminalId,
    /// The pane's program asked for paste markers when the paste started.
    bracketed: bool,
    /// The start marker was written (so the end marker must be).
    opened: bool,
    /// A piece was refused: the rest is dropped.
    dropped: bool,
}

impl Session {
    /// A paste its client will not finish: one that was opened with a start marker is
    /// closed, or the pane's program would take everything after as pasted text.
    pub(super) fn close_paste(&self, paste: Option<Paste>) -> Result<(), WriteError> {
        let Some(p) = paste.filter(|p| p.opened) else {
            return Ok(());
        };
        match self.runtimes.get(p.tid) {
            Some(rt) => rt.handle.try_write(b"\x1b[201~".to_vec()),
            None => Ok(()),
        }
    }
}

/// Lines one wheel notch scrolls.
const WHEEL_LINES: usize = 3;
/// How long after keys are written their echo is drawn unpaced (see `Clients::typed`); a
/// program that answers later is drawn as any other output.
const ECHO_UNPACED: std::time::Duration = std::time::Duration::from_millis(100);
/// Cells one resize keypress moves a border.
const RESIZE_STEP: u16 = 2;

impl Server {
    pub(super) fn client_input(&mut self, id: ClientId, bytes: &[u8]) {
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let tokens = client.parser.feed(bytes);
        client.input_flush_at = client
            .parser
            .has_pending()
            .then(|| std::time::Instant::now() + super::INPUT_FLUSH_DELAY);
        self.tokens(id, tokens);
    }

    pub(super) fn flush_input(&mut self, id: ClientId) {
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        client.input_flush_at = None;
        let tokens = client.parser.flush();
        self.tokens(id, tokens);
    }

    fn tokens(&mut self, id: ClientId, tokens: Vec<Token>) {
        // Bytes for the focused pane, gathered across tokens and written at once (one
        // write for a run of typing, not one per key); written out before anything else
        // happens, so nothing overtakes them.
        let mut out = Vec::new();
        for token in tokens {
            if !self.clients.by_id.contains_key(&id) || self.life.stopping.is_some() {
                break;
            }
            self.token(id, token, &mut out);
        }
        self.forward(&mut out);
    }

    fn forward(&mut self, out: &mut Vec<u8>) {
        if !out.is_empty() {
            self.write_focused(std::mem::take(out));
        }
    }

    fn mode(&self, id: ClientId) -> Mode {
        self.clients
            .by_id
            .get(&id)
            .map(|c| c.mode)
            .unwrap_or(Mode::Normal)
    }

    pub(super) fn set_mode(&mut self, id: ClientId, mode: Mode) {
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            if c.mode != mode {
                c.mode = mode;
                self.request_render();
            }
        }
    }

    fn token(&mut self, id: ClientId, token: Token, out: &mut Vec<u8>) {
        match (self.mode(id), token) {
            (_, Token::Text(text)) => self.text(id, &text, out),
            (Mode::Normal, Token::Key { key, raw })
                if key != self.bindings_of(id).prefix && self.pane_takes_keys(id) =>
            {
                self.key_for_pane(key, &raw, out)
            }
            (Mode::Normal, Token::Unknown(raw)) => out.extend_from_slice(&raw),
            (Mode::Normal, Token::Report(raw)) if self.pane_takes_keys(id) => {
                self.report_for_pane(id, &raw, out)
            }
            (Mode::Prefix, Token::Key { key, raw }) if key == self.bindings_of(id).prefix => {
                self.set_mode(id, Mode::Normal);
                self.key_for_pane(key, &raw, out);
            }
            (_, token) => {
                self.forward(out);
                self.act(id, token);
            }
        }
    }

    /// A run of plain characters: forwarded whole while they are only text to this client
    /// (normal mode, no scroll mode, up to a prefix key that is a plain character);
    /// otherwise key by key.
    fn text(&mut self, id: ClientId, text: &str, out: &mut Vec<u8>) {
        let mut rest = text;
        while !rest.is_empty() {
            if !self.clients.by_id.contains_key(&id) || self.life.stopping.is_some() {
                return;
            }
            if self.mode(id) == Mode::Normal && self.pane_takes_keys(id) {
                let prefix = self.bindings_of(id).prefix;
                let cut = match prefix.code {
                    KeyCode::Char(c) if prefix.mods.is_empty() => rest.find(c),
                    _ => None,
                };
                let (run, tail) = rest.split_at(cut.unwrap_or(rest.len()));
                self.text_for_pane(run, out);
                rest = tail;
            }
            let Some((key, raw)) = crate::input::parse::text_keys(rest).next() else {
                return;
            };
            rest = rest.get(raw.len()..).unwrap_or_default();
            let raw = raw.as_bytes().to_vec();
            self.token(id, Token::Key { key, raw }, out);
        }
    }

    /// Everything but forwarding: modes, bindings, scroll keys, mouse, pastes.
    fn act(&mut self, id: ClientId, token: Token) {
        match (self.mode(id), token) {
            (_, Token::Mouse(ev)) => {
                if matches!(self.mode(id), Mode::Help | Mode::Sessions) {
                    return;
                }
                self.set_mode(id, Mode::Normal);
                self.mouse(id, ev);
            }
            (Mode::Help, Token::Key { key, raw }) => {
                self.consume(id, &raw);
                self.help_key(id, &key);
            }
            (Mode::Confirm(ask), Token::Key { key, raw }) => {
                self.consume(id, &raw);
                self.answer(id, ask, &key);
            }
            (Mode::Sessions, Token::Key { key, raw }) => {
                self.consume(id, &raw);
                self.picker_key(id, &key);
            }
            (Mode::Prefix, Token::Key { key, raw }) => {
                self.consume(id, &raw);
                self.set_mode(id, Mode::Normal);
                if let Some(action) = self.bindings_of(id).lookup(&key) {
                    self.action(id, action);
                }
            }
            (Mode::Normal, Token::Key { key, raw }) => {
                if self.repeat_key(id, &key) {
                    self.consume(id, &raw);
                } else if key == self.bindings_of(id).prefix {
                    self.consume(id, &raw);
                    self.set_mode(id, Mode::Prefix);
                } else if let Some(tid) = self.scrolling_focused() {
                    self.consume(id, &raw);
                    self.scroll_key(tid, key);
                } else if let Some(tid) = self.session.ended_focused() {
                    self.consume(id, &raw);
                    self.ended_key(tid, key);
                } else {
                    let mut bytes = Vec::new();
                    self.key_for_pane(key, &raw, &mut bytes);
                    self.write_focused(bytes);
                }
            }
            (_, Token::Focus(focused)) => self.client_focus(id, focused),
            // Outside normal mode a report is herdr's: a modifier pressed after the
            // prefix, the release of what it took.
            (_, Token::Report(raw)) => self.report_taken(id, &raw),
            (_, Token::Paste { text, start, end }) => {
                self.set_mode(id, Mode::Normal);
                self.paste(id, text, start, end);
            }
            (Mode::Normal, Token::Unknown(raw)) => self.write_focused(raw),
            (_, Token::Unknown(_)) | (_, Token::Text(_)) => {}
        }
    }

    /// Whether keys in normal mode go to the focused pane's program: not while it is
    /// scrolled back, nor once it has ended, nor right after a resize key (then they are
    /// herdr's).
    fn pane_takes_keys(&self, id: ClientId) -> bool {
        self.scrolling_focused().is_none()
            && self.session.ended_focused().is_none()
            && self
                .clients
                .by_id
                .get(&id)
                .is_none_or(|c| c.repeat_until.is_none())
    }

    /// Bytes for the focused pane's program. A full queue is reported, never waited on.
    pub(crate) fn write_focused(&mut self, bytes: Vec<u8>) {
        let Some(tid) = self.session.state.focused_terminal() else {
            return;
        };
        self.write_terminal(tid, bytes);
    }

    /// Whether the bytes were taken (else the status line says why not).
    pub(crate) fn write_terminal(&mut self, tid: TerminalId, bytes: Vec<u8>) -> bool {
        // A program that has ended takes nothing, and that is no news.
        if self.session.state.exit_status(tid).is_some() {
            return false;
        }
        // A machine's pane mirrored here while the machine is unreachable: refused,
        // and said on the status line (its pane says so too; no bell: mouse and focus
        // reports come this way as well), never queued for later.
        let down =
            crate::render::view::machine_down(&self.session.state, &self.session.machines, tid);
        if let Some((name, state)) = down {
            self.say(format!("{name} is {state}: keys not sent"));
            return false;
        }
        self.before_agent_input(tid);
        let Some(rt) = self.session.runtimes.get(tid) else {
            return false;
        };
        match rt.handle.try_write(bytes) {
            Ok(()) => {
                self.clients.typed = Some((tid, Instant::now() + ECHO_UNPACED));
                true
            }
            Err(e) => {
                self.say(format!("input dropped: {e}"));
                false
            }
        }
    }

    /// A piece of a paste. Where it goes and whether it is wrapped in paste markers are
    /// decided at its start, for the whole paste. Later pieces wait until the pane has
    /// room (`paste_waits_for_room`); should one be refused all the same, the rest of that
    /// paste is dropped too (no paste with a hole), but a paste that was opened is closed.
    fn paste(&mut self, id: ClientId, text: Vec<u8>, start: bool, end: bool) {
        if start {
            let target =
                self.session.state.focused_terminal().map(|tid| Paste {
                    tid,
                    bracketed: self.session.runtimes.get(tid).is_some_and(|rt| {
                        crate::pty::lock(&rt.emulator).screen().bracketed_paste()
                    }),
                    opened: false,
                    dropped: false,
                });
            if let Some(c) = self.clients.by_id.get_mut(&id) {
                c.paste = target;
            }
        }
        let Some(mut p) = self.clients.by_id.get_mut(&id).and_then(|c| c.paste.take()) else {
            return;
        };
        let open: &[u8] = if p.bracketed && start {
            b"\x1b[200~"
        } else {
            b""
        };
        let close: &[u8] = if p.bracketed && end {
            b"\x1b[201~"
        } else {
            b""
        };
        if !p.dropped {
            if self.write_terminal(p.tid, [open, &text, close].concat()) {
                p.opened |= start && p.bracketed;
            } else {
                p.dropped = true;
                if p.opened && !close.is_empty() {
                    self.write_terminal(p.tid, close.to_vec());
                }
            }
        } else if p.opened && !close.is_empty() {
            self.write_terminal(p.tid, close.to_vec());
        }
        if !end {
            if let Some(c) = self.clients.by_id.get_mut(&id) {
                c.paste = Some(p);
            }
        }
    }

    /// Whether a paste of this client's is coming in and its pane has no room for the
    /// next piece: its input then waits (the pane's program is slow to read a big paste;
    /// dropping the rest would lose it).
    pub(super) fn paste_waits_for_room(&self, id: ClientId) -> bool {
        let Some(p) = self.clients.by_id.get(&id).and_then(|c| c.paste.as_ref()) else {
            return false;
        };
        !p.dropped
            && self
                .session
                .runtimes
                .get(p.tid)
                .is_some_and(|rt| rt.handle.input_room() < crate::input::parse::PASTE_PIECE + 64)
    }

    /// A client left in the middle of a paste: see [`Session::close_paste`].
    pub(super) fn abandon_paste(&mut self, paste: Option<Paste>) {
        if let Err(e) = self.session.close_paste(paste) {
            self.say(format!("input dropped: {e}"));
        }
    }

    pub(crate) fn action(&mut self, id: ClientId, action: Action) {
        match action {
            Action::SplitRight => self.split_focused(SplitDir::Right),
            Action::SplitDown => self.split_focused(SplitDir::Down),
            Action::FocusLeft => self.move_focus(Side::Left),
            Action::FocusDown => self.move_focus(Side::Down),
            Action::FocusUp => self.move_focus(Side::Up),
            Action::FocusRight => self.move_focus(Side::Right),
            Action::ResizeLeft => self.resize_focused(id, Side::Left),
            Action::ResizeDown => self.resize_focused(id, Side::Down),
            Action::ResizeUp => self.resize_focused(id, Side::Up),
            Action::ResizeRight => self.resize_focused(id, Side::Right),
            Action::NextPane => self.focus_next_pane(),
            Action::LastPane => self.focus_last_pane(),
            Action::SwapPrev => self.swap_focused(false),
            Action::SwapNext => self.swap_focused(true),
            Action::CloseTab => self.ask_close_tab(id),
            Action::RenameTab => self.ask_rename(id, false),
            Action::RenameWorkspace => self.ask_rename(id, true),
            Action::Zoom => {
                if let Some(tab) = self.session.state.active_tab_mut() {
                    tab.zoomed = !tab.zoomed && tab.layout.len() > 1;
                }
                self.relayout();
            }
            Action::ClosePane => self.ask_close_pane(id),
            Action::NewTab => {
                let cwd = self.session.focused_cwd();
                if let Err(e) = self.create_tab(cwd) {
                    self.say(format!("new tab failed: {e}"));
                }
            }
            Action::NextTab => self.session.state.cycle_tab(true),
            Action::PrevTab => self.session.state.cycle_tab(false),
            Action::SelectTab(n) => {
                self.session
                    .state
                    .select_tab(usize::from(n).saturating_sub(1));
            }
            Action::NewWorkspace => {
                let cwd = self.session.focused_cwd();
                if let Err(e) = self.create_workspace(None, cwd) {
                    self.say(format!("new workspace failed: {e}"));
                }
            }
            Action::NextWorkspace => self.session.state.cycle_workspace(true),
            Action::PrevWorkspace => self.session.state.cycle_workspace(false),
            Action::Detach => self.detach(id, "detached"),
            Action::Help => self.set_mode(id, Mode::Help),
            Action::Sessions => self.open_picker(id),
            Action::ScrollMode => {
                if let Some(tid) = self.session.state.focused_terminal() {
                    self.enter_scroll(tid);
                }
            }
            Action::PasteBuffer => {
                let Some(tid) = self.session.state.focused_terminal() else {
                    return;
                };
                match self.session.buffer_paste(tid) {
                    Some(bytes) => {
                        self.write_terminal(tid, bytes);
                    }
                    None => self.say("nothing copied yet (prefix [ then v and y copies)"),
                }
            }
            Action::SendPrefix => {
                let bytes = self.bindings_of(id).prefix.to_bytes();
                self.write_focused(bytes);
            }
            Action::ToggleSidebar => {
                self.session.sidebar = !self.session.sidebar;
                self.relayout();
            }
            Action::ReloadConfig => {
                self.reload_config();
            }
        }
        self.request_render();
    }

    fn split_focused(&mut self, dir: SplitDir) {
        if let Err(e) = self.split(None, dir, vec![], None) {
            self.say(format!("split failed: {e}"));
        }
    }

    fn move_focus(&mut self, side: Side) {
        let area = self.session.pane_area();
        if let Some(tab) = self.session.state.active_tab_mut() {
            if tab.zoomed {
                return;
            }
            if let Some(next) = tab.layout.neighbor(area, tab.focused, side) {
                tab.focus(next);
            }
        }
    }

    fn resize_focused(&mut self, id: ClientId, side: Side) {
        let area = self.session.pane_area();
        if let Some(tab) = self.session.state.active_tab_mut() {
            let focused = tab.focused;
            tab.layout.resize(area, focused, side, RESIZE_STEP);
        }
        self.relayout();
        self.start_repeat(id);
    }

    // ----- mouse -----

    fn mouse(&mut self, id: ClientId, ev: MouseEvent) {
        if self.mouse_selecting(id, &ev) {
            return;
        }
        // A drag in progress owns the mouse until the button is released.
        if let Some(div) = self.clients.by_id.get(&id).and_then(|c| c.drag) {
            match ev.kind {
                MouseKind::Drag => {
                    let area = self.session.pane_area();
                    if let Some(tab) = self.session.state.active_tab_mut() {
                        tab.layout.drag_divider(area, div, ev.x, ev.y);
                    }
                    self.relayout();
                }
                _ => {
                    if let Some(c) = self.clients.by_id.get_mut(&id) {
                        c.drag = None;
                    }
                }
            }
            return;
        }
        let view_hit = view::hit_test(
            &self.session.state,
            &self.session.machines,
            self.session.size,
            self.session.sidebar_width(),
            ev.x,
            ev.y,
        );
        match view_hit {
            Some(Hit::Workspace(i)) if is_click(&ev) => {
                self.session.state.select_workspace(i);
            }
            Some(Hit::Tab(w, t)) if is_click(&ev) => {
                self.session.state.select_workspace(w);
                self.session.state.select_tab(t);
            }
            Some(Hit::Agent(w, t, pane)) if is_click(&ev) => {
                self.session.state.select_workspace(w);
                self.session.state.select_tab(t);
                self.session.state.focus_pane(pane);
            }
            Some(Hit::Divider(div)) if is_click(&ev) => {
                if let Some(c) = self.clients.by_id.get_mut(&id) {
                    c.drag = Some(div);
                }
            }
            Some(Hit::Pane(pane, x, y)) => self.mouse_in_pane(id, pane, x, y, ev),
            Some(Hit::MachineTab(m, w, t)) if is_click(&ev) => self.click_machine_tab(m, w, t),
            None if is_click(&ev) => {
                if let Some(t) = view::tab_bar_hit(
                    &self
                        .session
                        .view(Overlay::None, None, &self.session.bindings),
                    self.session.size,
                    ev.x,
                    ev.y,
                ) {
                    self.session.state.select_tab(t);
                }
            }
            _ => {}
        }
        self.request_render();
    }

    fn mouse_in_pane(
        &mut self,
        id: ClientId,
        pane: crate::model::ids::PaneId,
        x: u16,
        y: u16,
        ev: MouseEvent,
    ) {
        let Some(tid) = self.session.state.panes.get(&pane).map(|p| p.terminal) else {
            return;
        };
        if is_click(&ev) && self.session.state.focused_pane() != Some(pane) {
            self.session.state.focus_pane(pane);
        }
        let (mode, enc, alt) = match self.session.runtimes.get(tid) {
            Some(rt) => {
                let emu = crate::pty::lock(&rt.emulator);
                let s = emu.screen();
                (
                    s.mouse_protocol_mode(),
                    s.mouse_protocol_encoding(),
                    s.alternate_screen(),
                )
            }
            None => return,
        };
        // Shift selects even over a program that took the mouse, as in most terminals.
        let shift = ev.mods.contains(crate::input::keys::Mods::SHIFT);
        if mode != crate::term::vt::MouseProtocolMode::None
            && !self.session.scroll.contains_key(&tid)
            && !shift
        {
            if let Some(bytes) = encode_for_pane(&ev, x, y, mode, enc) {
                self.write_terminal(tid, bytes);
            }
            return;
        }
        if is_click(&ev) {
            return self.mouse_press(id, tid, pane, (x, y));
        }
        match ev.button {
            MouseButton::WheelUp if !alt => {
                self.enter_scroll(tid);
                self.scroll_by(tid, WHEEL_LINES as i64);
            }
            MouseButton::WheelDown if self.session.scroll.contains_key(&tid) => {
                self.scroll_by(tid, -(WHEEL_LINES as i64));
                if self.scroll_offset(tid) == 0 {
                    self.exit_scroll(tid);
                }
            }
            _ => {}
        }
    }

    // ----- scroll / copy mode (copy.rs) -----

    fn scrolling_focused(&self) -> Option<TerminalId> {
        let tid = self.session.state.focused_terminal()?;
        self.session.scroll.contains_key(&tid).then_some(tid)
    }
}

fn is_click(ev: &MouseEvent) -> bool {
    ev.kind == MouseKind::Press && ev.button == MouseButton::Left
}
