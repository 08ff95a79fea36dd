//! Scroll/copy mode, as tmux's vi copy mode: it starts at the program's cursor; vi
//! motions move a cursor over history and screen; `/` and `?` search (smart case, round
//! the whole text) with `n`/`N`; `v`, `V` and ctrl+v select; `y` or Enter copies (OSC 52
//! to the clients' terminals, and the session's buffer for prefix `]` and `herdr paste`).
//! The motions themselves are `model::copy`'s; this is the keys and the view.

use super::Server;
use crate::input::keys::{Key, KeyCode, Mods};
use crate::model::copy::{self, Scroll, SelectKind, Text};
use crate::model::ids::TerminalId;
use crate::term::Emulator;

/// The most a copy puts in the buffer and on the clipboard (a selection of a whole long
/// history would otherwise be one enormous OSC 52 to every client).
pub(crate) const MAX_COPY: usize = 4 * 1024 * 1024;

/// An emulator's history and screen as copy mode reads them.
struct Rows<'a>(&'a Emulator);

impl Text for Rows<'_> {
    fn rows(&self) -> usize {
        self.0.text_len()
    }
    fn row(&self, i: usize) -> String {
        self.0.text_row(i)
    }
}

impl super::Session {
    /// The buffer as a paste for terminal `tid`: in paste markers when its program asked
    /// for them (as a paste from the user's terminal would be). `None` before a copy.
    pub(crate) fn buffer_paste(&self, tid: TerminalId) -> Option<Vec<u8>> {
        let text = self.buffer.as_ref()?;
        let bracketed = self
            .runtimes
            .get(tid)
            .is_some_and(|rt| crate::pty::lock(&rt.emulator).screen().bracketed_paste());
        Some(match bracketed {
            true => [b"\x1b[200~", text.as_bytes(), b"\x1b[201~"].concat(),
            false => text.as_bytes().to_vec(),
        })
    }
}

impl Server {
    /// Enters copy mode at the program's cursor (nothing changes if it is on).
    pub(crate) fn enter_scroll(&mut self, tid: TerminalId) {
        if self.session.scroll.contains_key(&tid) {
            return;
        }
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let emu = crate::pty::lock(&rt.emulator);
        let (row, col) = emu.screen().cursor_position();
        let at = Scroll::at(emu.text_history() + usize::from(row), usize::from(col));
        drop(emu);
        self.session.scroll.insert(tid, at);
        self.request_render();
    }

    pub(super) fn exit_scroll(&mut self, tid: TerminalId) {
        self.session.scroll.remove(&tid);
        if let Some(rt) = self.session.runtimes.get(tid) {
            crate::pty::lock(&rt.emulator).set_scrollback(0);
        }
        self.request_render();
    }

    pub(super) fn scroll_offset(&self, tid: TerminalId) -> usize {
        self.session
            .runtimes
            .get(tid)
            .map(|rt| crate::pty::lock(&rt.emulator).scrollback())
            .unwrap_or(0)
    }

    /// Scrolls the view (positive: further back) and keeps the cursor inside it.
    pub(super) fn scroll_by(&mut self, tid: TerminalId, lines: i64) {
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let mut emu = crate::pty::lock(&rt.emulator);
        let now = emu.scrollback() as i64;
        emu.set_scrollback((now + lines).max(0) as usize);
        let (top, rows) = view_of(&emu);
        drop(emu);
        if let Some(st) = self.session.scroll.get_mut(&tid) {
            st.row = st.row.clamp(top, top + rows - 1);
        }
        self.request_render();
    }

    /// A key in copy mode.
    pub(super) fn scroll_key(&mut self, tid: TerminalId, key: Key) {
        let Some(mut st) = self.session.scroll.get(&tid).cloned() else {
            return;
        };
        if st.prompt.is_some() {
            self.prompt_key(tid, st, key);
            return;
        }
        let ctrl = key.mods.contains(Mods::CTRL);
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let emu = crate::pty::lock(&rt.emulator);
        let text = Rows(&emu);
        let (top, rows) = view_of(&emu);
        let last = text.rows().saturating_sub(1);
        let page = rows.saturating_sub(1).max(1);
        let mut said = None;
        // Paging moves the view too (by as much as the cursor), as tmux's page-up does.
        let mut view = 0i64;
        let mut up = |st: &mut Scroll, n: usize| {
            let n = n.min(st.row);
            st.row -= n;
            view = n as i64;
        };
        let down = |st: &mut Scroll, n: usize| {
            let n = n.min(last - st.row.min(last));
            st.row += n;
            n as i64
        };
        match (key.code, ctrl) {
            (KeyCode::Char('q'), false) | (KeyCode::Esc, _) | (KeyCode::Char('c'), true) => {
                drop(emu);
                return self.exit_scroll(tid);
            }
            (KeyCode::Char('y'), false) | (KeyCode::Enter, _) => {
                let copied = copy::selection(&text, &st);
                drop(emu);
                return self.copy_out(tid, copied);
            }
            (KeyCode::Left, _) | (KeyCode::Char('h'), false) => st.col = st.col.saturating_sub(1),
            (KeyCode::Right, _) | (KeyCode::Char('l'), false) => {
                st.col = (st.col + 1).min(copy::line_end(&text, st.row));
            }
            (KeyCode::Up, _) | (KeyCode::Char('k'), false) => st.row = st.row.saturating_sub(1),
            (KeyCode::Down, _) | (KeyCode::Char('j'), false) => st.row = (st.row + 1).min(last),
            (KeyCode::Char('w'), false) => {
                (st.row, st.col) = copy::word_forward(&text, st.row, st.col)
            }
            (KeyCode::Char('b'), false) => {
                (st.row, st.col) = copy::word_back(&text, st.row, st.col)
            }
            (KeyCode::Char('e'), false) => (st.row, st.col) = copy::word_end(&text, st.row, st.col),
            (KeyCode::Char('0'), false) | (KeyCode::Home, _) => st.col = 0,
            (KeyCode::Char('^'), false) => st.col = copy::first_non_blank(&text, st.row),
            (KeyCode::Char('$'), false) | (KeyCode::End, _) => {
                st.col = copy::line_end(&text, st.row)
            }
            (KeyCode::Char('g'), false) => (st.row, st.col) = (0, 0),
            (KeyCode::Char('G'), false) => {
                st.row = last;
                st.col = copy::first_non_blank(&text, last);
            }
            (KeyCode::Char('H'), false) => st.row = top,
            (KeyCode::Char('M'), false) => st.row = top + rows / 2,
            (KeyCode::Char('L'), false) => st.row = (top + rows - 1).min(last),
            (KeyCode::Char('{'), false) => st.row = copy::paragraph(&text, st.row, false),
            (KeyCode::Char('}'), false) => st.row = copy::paragraph(&text, st.row, true),
            (KeyCode::PageUp, _) | (KeyCode::Char('b'), true) => up(&mut st, page),
            (KeyCode::Char('u'), true) => up(&mut st, page / 2),
            (KeyCode::PageDown, _) | (KeyCode::Char('f'), true) => view = -down(&mut st, page),
            (KeyCode::Char('d'), true) => view = -down(&mut st, page / 2),
            (KeyCode::Char('v'), true) => toggle(&mut st, SelectKind::Rect),
            (KeyCode::Char('v'), false) | (KeyCode::Char(' '), false) => {
                toggle(&mut st, SelectKind::Char)
            }
            (KeyCode::Char('V'), false) => toggle(&mut st, SelectKind::Line),
            (KeyCode::Char('/'), false) => st.prompt = Some((true, String::new())),
            (KeyCode::Char('?'), false) => st.prompt = Some((false, String::new())),
            (KeyCode::Char('n'), false) | (KeyCode::Char('N'), false) => {
                let again = key.code == KeyCode::Char('n');
                match st.search.clone() {
                    Some((forward, pattern)) => {
                        match copy::search(&text, (st.row, st.col), &pattern, forward == again) {
                            Some(at) => (st.row, st.col) = at,
                            None => said = Some(format!("not found: {pattern}")),
                        }
                    }
                    None => said = Some("no search yet (/ or ? starts one)".to_string()),
                }
            }
            _ => {}
        }
        drop(emu);
        self.place(tid, st, view);
        if let Some(m) = said {
            self.say(m);
        }
    }

    /// A key while a search is typed: text, Backspace, Enter runs it, Esc drops it.
    fn prompt_key(&mut self, tid: TerminalId, mut st: Scroll, key: Key) {
        let Some((forward, mut pattern)) = st.prompt.take() else {
            return;
        };
        match key.code {
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                pattern.pop();
                st.prompt = Some((forward, pattern));
            }
            KeyCode::Enter if pattern.is_empty() => {}
            KeyCode::Enter => {
                let found = self.session.runtimes.get(tid).and_then(|rt| {
                    let emu = crate::pty::lock(&rt.emulator);
                    copy::search(&Rows(&emu), (st.row, st.col), &pattern, forward)
                });
                match found {
                    Some(at) => (st.row, st.col) = at,
                    None => self.say(format!("not found: {pattern}")),
                }
                st.search = Some((forward, pattern));
            }
            KeyCode::Char(c) if !key.mods.contains(Mods::CTRL) => {
                pattern.push(c);
                st.prompt = Some((forward, pattern));
            }
            _ => st.prompt = Some((forward, pattern)),
        }
        self.place(tid, st, 0);
    }

    /// Stores the new state, scrolls the view by `view` rows (positive: back), then as
    /// much more as the cursor needs to be in it.
    fn place(&mut self, tid: TerminalId, st: Scroll, view: i64) {
        if let Some(rt) = self.session.runtimes.get(tid) {
            let mut emu = crate::pty::lock(&rt.emulator);
            let offset = emu.scrollback() as i64;
            emu.set_scrollback((offset + view).max(0) as usize);
            let (top, rows) = view_of(&emu);
            let offset = emu.scrollback();
            if st.row < top {
                emu.set_scrollback(offset + (top - st.row));
            } else if st.row >= top + rows {
                let down = st.row + 1 - (top + rows);
                emu.set_scrollback(offset.saturating_sub(down));
            }
        }
        self.session.scroll.insert(tid, st);
        self.request_render();
    }

    /// Puts copied text on every client's clipboard (OSC 52) and in the session's
    /// buffer, then leaves copy mode; with nothing selected, says how to select.
    fn copy_out(&mut self, tid: TerminalId, text: Option<String>) {
        let Some(text) = text else {
            self.say("nothing selected: v, V or ctrl+v starts a selection");
            return;
        };
        if text.len() > MAX_COPY {
            self.say(format!(
                "selection too large to copy ({} KiB; at most {} KiB)",
                text.len() / 1024,
                MAX_COPY / 1024
            ));
            return;
        }
        let seq = format!(
            "\x1b]52;c;{}\x07",
            crate::protocol::base64::encode(text.as_bytes())
        );
        for c in self.clients.by_id.values() {
            c.writer.send_output(seq.clone().into_bytes());
        }
        let lines = text.lines().count().max(1);
        let chars = text.chars().count();
        self.session.buffer = Some(text);
        self.exit_scroll(tid);
        self.say(format!(
            "copied {lines} line{} ({chars} characters)",
            if lines == 1 { "" } else { "s" }
        ));
    }
}

/// The first row of the whole text the view shows, and how many rows it shows.
fn view_of(emu: &Emulator) -> (usize, usize) {
    let rows = usize::from(emu.size().0).max(1);
    let top = emu.text_history().saturating_sub(emu.scrollback());
    (top, rows)
}

/// `v`, `V`, ctrl+v: starts a selection of that kind at the cursor; the same key again
/// ends it; another kind's key changes the kind.
fn toggle(st: &mut Scroll, kind: SelectKind) {
    st.anchor = match st.anchor {
        Some((_, _, k)) if k == kind => None,
        Some((r, c, _)) => Some((r, c, kind)),
        None => Some((st.row, st.col, kind)),
    };
}

/// Two clicks this close in time, on the same cell, are a double click (and three a
/// triple one).
const MULTI_CLICK: std::time::Duration = std::time::Duration::from_millis(400);

/// A selection being made with the mouse: the pane it is confined to, and where the
/// button went down.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MouseSelect {
    tid: TerminalId,
    pane: crate::model::ids::PaneId,
    from: (usize, usize),
    dragged: bool,
}

/// The last click of a client: when, where, and how many in a row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LastClick {
    at: std::time::Instant,
    cell: (u16, u16),
    count: u8,
}

impl Server {
    /// The left button went down in a pane whose program does not take the mouse (or
    /// with shift held): the start of a selection; a double click selects a word and a
    /// triple one the row, and copies it.
    pub(super) fn mouse_press(
        &mut self,
        id: crate::server::ClientId,
        tid: TerminalId,
        pane: crate::model::ids::PaneId,
        (x, y): (u16, u16),
    ) {
        let now = std::time::Instant::now();
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let count = match c.last_click {
            Some(l) if l.cell == (x, y) && now.duration_since(l.at) < MULTI_CLICK => {
                (l.count % 3) + 1
            }
            _ => 1,
        };
        c.last_click = Some(LastClick {
            at: now,
            cell: (x, y),
            count,
        });
        let Some(from) = self.text_at(tid, x, y) else {
            return;
        };
        if count == 1 {
            if let Some(c) = self.clients.by_id.get_mut(&id) {
                c.mouse_select = Some(MouseSelect {
                    tid,
                    pane,
                    from,
                    dragged: false,
                });
            }
            return;
        }
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let emu = crate::pty::lock(&rt.emulator);
        let text = Rows(&emu);
        let mut st = Scroll::at(from.0, from.1);
        st.anchor = Some(match count {
            2 => {
                // The word under the pointer: from its start to its end.
                let start = copy::word_back(&text, from.0, from.1 + 1);
                let end = copy::word_end(&text, start.0, start.1.saturating_sub(1));
                (st.row, st.col) = end;
                (start.0, start.1, SelectKind::Char)
            }
            _ => (from.0, 0, SelectKind::Line),
        });
        let copied = copy::selection(&text, &st);
        drop(emu);
        self.session.scroll.insert(tid, st);
        self.copy_out(tid, copied);
    }

    /// A mouse event while a selection is being made: a drag moves its end (held inside
    /// its pane), the release copies it (a click without a drag selects nothing). False
    /// when no selection is being made.
    pub(super) fn mouse_selecting(
        &mut self,
        id: crate::server::ClientId,
        ev: &crate::input::mouse::MouseEvent,
    ) -> bool {
        use crate::input::mouse::MouseKind;
        let Some(mut sel) = self.clients.by_id.get(&id).and_then(|c| c.mouse_select) else {
            return false;
        };
        let rect = self.pane_rect(sel.pane);
        let Some(rect) = rect else {
            self.end_mouse_select(id);
            return true;
        };
        // Held inside the pane: past its edge, the nearest cell of it.
        let x = ev.x.clamp(rect.x, rect.right().saturating_sub(1)) - rect.x;
        let y = ev.y.clamp(rect.y, rect.bottom().saturating_sub(1)) - rect.y;
        match ev.kind {
            MouseKind::Drag => {
                let Some(to) = self.text_at(sel.tid, x, y) else {
                    return true;
                };
                let mut st = self
                    .session
                    .scroll
                    .get(&sel.tid)
                    .cloned()
                    .unwrap_or_else(|| Scroll::at(to.0, to.1));
                st.anchor = Some((sel.from.0, sel.from.1, SelectKind::Char));
                (st.row, st.col) = to;
                self.session.scroll.insert(sel.tid, st);
                sel.dragged = true;
                if let Some(c) = self.clients.by_id.get_mut(&id) {
                    c.mouse_select = Some(sel);
                }
                self.request_render();
            }
            MouseKind::Motion => {}
            // A press without the release before it (a terminal that lost it): the
            // selection is dropped and the press is handled as any other.
            MouseKind::Press => {
                self.end_mouse_select(id);
                return false;
            }
            MouseKind::Release => {
                self.end_mouse_select(id);
                if sel.dragged {
                    let copied = self.session.runtimes.get(sel.tid).and_then(|rt| {
                        let emu = crate::pty::lock(&rt.emulator);
                        let st = self.session.scroll.get(&sel.tid)?;
                        copy::selection(&Rows(&emu), st)
                    });
                    self.copy_out(sel.tid, copied);
                }
            }
        }
        true
    }

    fn end_mouse_select(&mut self, id: crate::server::ClientId) {
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            c.mouse_select = None;
        }
    }

    /// Where a pane is on the screen now, if it is shown.
    fn pane_rect(&self, pane: crate::model::ids::PaneId) -> Option<ratatui::layout::Rect> {
        let tab = self.session.state.active_tab()?;
        let area = self.session.pane_area();
        crate::render::view::tab_geometry(tab, area)
            .into_iter()
            .find(|(p, _)| *p == pane)
            .map(|(_, r)| r)
    }

    /// The row and character under cell (`x`, `y`) of a pane's view.
    fn text_at(&self, tid: TerminalId, x: u16, y: u16) -> Option<(usize, usize)> {
        use unicode_width::UnicodeWidthChar;
        let rt = self.session.runtimes.get(tid)?;
        let emu = crate::pty::lock(&rt.emulator);
        let (top, rows) = view_of(&emu);
        let row = (top + usize::from(y)).min(top + rows - 1);
        let line = emu.text_row(row);
        let mut cells = 0u16;
        let mut col = 0;
        for ch in line.chars() {
            let w = ch.width().unwrap_or(0) as u16;
            if cells + w > x {
                break;
            }
            cells += w;
            col += 1;
        }
        // Past the row's text: the cells there count one character each.
        Some((row, col + usize::from(x.saturating_sub(cells))))
    }
}
