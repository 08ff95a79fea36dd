//! Composes one client's view: sidebar (workspaces and their tabs), tab bar, panes with
//! dividers, status line, and overlays (prefix indicator, help). Pure: it reads the
//! [`View`] it is given (values, and the screens lent through [`Screens`]) and returns a
//! [`Frame`], or brings the last one up to date; no registry, lock or clock of its own.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};

use super::chrome::{
    chrome_cells, chrome_signature, clear_chrome, draw_help, draw_panel, draw_sidebar, draw_status,
    draw_tab_bar,
};
use super::diff::Frame;
use super::pane::{draw_ended, draw_machine_banner, draw_pane, PaneCursor, RowCache};
use super::view::{
    machine_down, pane_area, tab_geometry, with_screen, Overlay, View, ACCENT, MUTED,
};
use crate::model::ids::{PaneId, TerminalId};
use crate::model::layout::SplitDir;
use crate::model::Scroll;
use crate::model::{AppState, Tab};

/// What a client's frame was laid out from. While it stays the same, the next frame is
/// the previous one with only the changed parts redrawn.
#[derive(Debug, Clone, PartialEq)]
struct LayoutKey {
    size: (u16, u16),
    sidebar: u16,
    overlay: Overlay,
    active: (usize, usize),
    zoomed: bool,
    focused: Option<PaneId>,
    geometry: Vec<(PaneId, Rect)>,
    /// Scroll-mode panes: their state, view offset and history length (the marks and the
    /// position label are drawn over the rows).
    scroll: Vec<(TerminalId, Scroll, usize, usize)>,
    /// Agent badges on the pane borders: pane, agent, state.
    badges: Vec<(PaneId, String, String)>,
    /// Shown panes whose program ended, with its status (a line over their last row).
    ended: Vec<(TerminalId, Option<i32>)>,
}

/// The agent badge of each shown pane that has one: its agent and state as users see it.
fn badges(state: &AppState, tab: Option<&Tab>) -> Vec<(PaneId, String, String)> {
    let Some(tab) = tab.filter(|t| !t.zoomed) else {
        return Vec::new();
    };
    tab.layout
        .panes()
        .into_iter()
        .filter_map(|p| {
            let s = state.agent_state(p)?;
            let agent = state
                .panes
                .get(&p)
                .and_then(|ps| state.terminals.get(&ps.terminal))
                .and_then(|t| t.agent.clone())?;
            Some((p, agent, s.to_string()))
        })
        .collect()
}

/// Writes each agent's badge into the divider above its pane, from its left; a pane at
/// the top has its badge in the divider below, from its right, only where that divider is
/// still bare (a pane below may have put its own badge there).
fn draw_badges(buf: &mut Buffer, key: &LayoutKey, area: Rect) {
    for below in [false, true] {
        for (pane, agent, state) in &key.badges {
            let Some((_, rect)) = key.geometry.iter().find(|(p, _)| p == pane) else {
                continue;
            };
            let room = usize::from(rect.width.saturating_sub(2));
            let text: String = format!(" {agent} {state} ").chars().take(room).collect();
            let width = text.chars().count() as u16;
            let (x, y) = match (below, rect.y > area.y) {
                (false, true) => (rect.x + 1, rect.y - 1),
                (true, false) if rect.bottom() < area.bottom() => {
                    (rect.right().saturating_sub(width + 1), rect.bottom())
                }
                _ => continue,
            };
            let bare =
                (x..x + width).all(|cx| buf.cell((cx, y)).is_some_and(|c| c.symbol() == "─"));
            if !bare {
                continue;
            }
            let style = Style::default()
                .fg(Color::Black)
                .bg(super::chrome::state_colour(state));
            buf.set_string(x, y, text, style);
        }
    }
}

/// Per-client memory of the last composition (see [`compose`]).
#[derive(Debug, Default)]
pub struct ComposeCache {
    key: Option<LayoutKey>,
    rows: RowCache,
    /// The chrome's cells before it was last drawn again (scratch, reused).
    chrome_before: Vec<ratatui::buffer::Cell>,
    chrome_signature: Option<Vec<u8>>,
    /// Where the next signature is written (the last one's buffer, reused).
    signature_scratch: Vec<u8>,
}

impl ComposeCache {
    /// Forgets everything: the next frame is composed afresh.
    pub fn invalidate(&mut self) {
        self.key = None;
    }

    /// When the last frame must be drawn again because a pane's synchronized output
    /// timed out (see [`RowCache::sync_due`]).
    pub fn sync_due(&self) -> Option<std::time::Instant> {
        self.rows.sync_due
    }

    /// The columns the last [`compose_update`] drew differently, per row (see
    /// [`RowCache::cols`]).
    pub fn cols(&self) -> &[(u16, u16)] {
        self.rows.cols()
    }
}

fn layout_key(view: &View<'_>, size: (u16, u16)) -> LayoutKey {
    let area = pane_area(size, view.sidebar);
    let tab = view.state.active_tab();
    let geometry = tab.map(|t| tab_geometry(t, area)).unwrap_or_default();
    let shown = || {
        geometry
            .iter()
            .filter_map(|(p, _)| view.state.panes.get(p).map(|ps| ps.terminal))
    };
    let ended_panes = shown()
        .filter_map(|tid| Some((tid, view.state.exit_status(tid)?)))
        .collect();
    let scroll = shown()
        .filter_map(|tid| {
            let st = view.scroll.get(&tid)?.clone();
            with_screen(view.screens, tid, |emu| {
                (tid, st, emu.scrollback(), emu.history_len())
            })
        })
        .collect();
    LayoutKey {
        size,
        sidebar: view.sidebar,
        overlay: view.overlay,
        active: (
            view.state.active,
            view.state.active_workspace().map_or(0, |w| w.active),
        ),
        zoomed: tab.is_some_and(|t| t.zoomed),
        focused: tab.map(|t| t.focused),
        geometry,
        scroll,
        badges: badges(view.state, tab),
        ended: ended_panes,
    }
}

/// Composes a client's view afresh (and resets the cache to describe this frame).
pub fn compose(view: &View<'_>, size: (u16, u16), cache: &mut ComposeCache) -> Frame {
    cache.rows.clear();
    cache.chrome_signature = None;
    let key = layout_key(view, size);
    let mut frame = Frame::new(size.0, size.1);
    if size.0 == 0 || size.1 == 0 {
        return frame;
    }
    draw_sidebar(view, &mut frame.buffer, size);
    draw_tab_bar(view, &mut frame.buffer, size);
    let area = pane_area(size, view.sidebar);
    let mut dirty = vec![false; usize::from(size.1)];
    if let Some(tab) = view.state.active_tab() {
        if !tab.zoomed {
            for d in tab.layout.dividers(area) {
                draw_divider(&mut frame.buffer, d.rect, d.dir, Style::default().fg(MUTED));
            }
        }
        draw_badges(&mut frame.buffer, &key, area);
        for (pane, rect) in tab_geometry(tab, area) {
            let Some(tid) = view.state.panes.get(&pane).map(|p| p.terminal) else {
                continue;
            };
            let scroll = view.scroll.get(&tid);
            let drawn = with_screen(view.screens, tid, |emu| {
                draw_pane(
                    &mut frame,
                    rect,
                    (tid, emu),
                    scroll,
                    view.now,
                    &mut cache.rows,
                    &mut dirty,
                )
            });
            let Some(cursor) = drawn else {
                continue;
            };
            if let Some(code) = view.state.exit_status(tid) {
                draw_ended(&mut frame.buffer, rect, code);
            } else if let Some((machine, state)) = machine_down(view.state, view.machines, tid) {
                draw_machine_banner(
                    &mut frame.buffer,
                    rect,
                    (tid, machine, state),
                    &mut cache.rows,
                );
            }
            if pane == tab.focused {
                highlight_border(&mut frame.buffer, rect, area);
                apply_cursor(
                    &mut frame,
                    &cursor,
                    !matches!(view.overlay, Overlay::Help | Overlay::Panel) && scroll.is_none(),
                );
            }
        }
    }
    draw_status(view, &mut frame.buffer, size);
    let drawn = match (view.overlay, view.panel) {
        (Overlay::Help, _) => draw_help(view, &mut frame.buffer, size),
        (Overlay::Panel, Some(panel)) => draw_panel(panel, &mut frame.buffer, size),
        _ => None,
    };
    if let Some(drawn) = drawn {
        frame.plain_extras(drawn);
    }
    cache.key = Some(key);
    frame
}

fn apply_cursor(frame: &mut Frame, cursor: &PaneCursor, show: bool) {
    frame.application_cursor = cursor.app_cursor;
    frame.application_keypad = cursor.app_keypad;
    frame.cursor = if show { cursor.pos } else { None };
}

/// Brings `frame` — the last frame composed with this cache — up to date in place, marking
/// in `dirty` (one flag per row) every row it changed. Returns false, touching nothing,
/// when the layout changed or an overlay or scroll mode is showing: then the caller
/// composes afresh with [`compose`].
pub fn compose_update(
    view: &View<'_>,
    size: (u16, u16),
    frame: &mut Frame,
    cache: &mut ComposeCache,
    dirty: &mut Vec<bool>,
) -> bool {
    let boxed = matches!(view.overlay, Overlay::Help | Overlay::Panel);
    if frame.size() != size || size.0 == 0 || size.1 == 0 || boxed {
        return false;
    }
    let key = layout_key(view, size);
    if cache.key.as_ref() != Some(&key) || !key.scroll.is_empty() {
        return false;
    }
    dirty.clear();
    dirty.resize(usize::from(size.1), false);
    cache.rows.start_cols(size.1);
    cache.rows.sync_due = None;
    // Everything the chrome shows: when it is unchanged, so is the chrome.
    let mut signature = std::mem::take(&mut cache.signature_scratch);
    chrome_signature(view, size, &mut signature);
    let chrome_changed = cache.chrome_signature.as_deref() != Some(signature.as_slice());
    cache.signature_scratch = cache
        .chrome_signature
        .replace(signature)
        .unwrap_or_default();
    if chrome_changed {
        // Drawn over the frame in place (the chrome's cells are only its own), its cells
        // as they were kept aside to tell the rows that changed.
        let cells = chrome_cells(size, view.sidebar);
        cache.chrome_before.clear();
        cache.chrome_before.extend(
            cells
                .clone()
                .filter_map(|(x, y)| frame.buffer.cell((x, y)).cloned()),
        );
        clear_chrome(&mut frame.buffer, size, view.sidebar);
        draw_sidebar(view, &mut frame.buffer, size);
        draw_tab_bar(view, &mut frame.buffer, size);
        draw_status(view, &mut frame.buffer, size);
        for ((x, y), before) in cells.zip(&cache.chrome_before) {
            if frame.buffer.cell((x, y)) != Some(before) {
                dirty[usize::from(y)] = true;
                cache.rows.widen(y, 0, size.0);
            }
        }
    }
    let pane_area = pane_area(size, view.sidebar);
    if let Some(tab) = view.state.active_tab() {
        for (pane, rect) in tab_geometry(tab, pane_area) {
            let Some(tid) = view.state.panes.get(&pane).map(|p| p.terminal) else {
                continue;
            };
            let drawn = with_screen(view.screens, tid, |emu| {
                draw_pane(
                    frame,
                    rect,
                    (tid, emu),
                    None,
                    view.now,
                    &mut cache.rows,
                    dirty,
                )
            });
            let Some(cursor) = drawn else {
                continue;
            };
            let banner = match view.state.exit_status(tid) {
                Some(code) => draw_ended(&mut frame.buffer, rect, code),
                None => {
                    machine_down(view.state, view.machines, tid).and_then(|(machine, state)| {
                        draw_machine_banner(
                            &mut frame.buffer,
                            rect,
                            (tid, machine, state),
                            &mut cache.rows,
                        )
                    })
                }
            };
            if let Some(row) = banner {
                dirty[usize::from(row)] = true;
                cache.rows.widen(row, 0, size.0);
            }
            if pane == tab.focused {
                apply_cursor(frame, &cursor, true);
            }
        }
    }
    true
}

fn draw_divider(buf: &mut Buffer, rect: Rect, dir: SplitDir, style: Style) {
    let sym = match dir {
        SplitDir::Right => "│",
        SplitDir::Down => "─",
    };
    for y in rect.y..rect.bottom() {
        for x in rect.x..rect.right() {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.set_symbol(sym).set_style(style);
            }
        }
    }
}

/// Colours the divider cells around the focused pane.
fn highlight_border(buf: &mut Buffer, rect: Rect, area: Rect) {
    let mut paint = |x: u16, y: u16| {
        if let Some(c) = buf.cell_mut((x, y)) {
            if c.symbol() == "│" || c.symbol() == "─" {
                c.set_fg(ACCENT);
            }
        }
    };
    let (left, right) = (rect.x.checked_sub(1), rect.right());
    let (top, bottom) = (rect.y.checked_sub(1), rect.bottom());
    for y in rect.y..rect.bottom() {
        if let Some(l) = left.filter(|l| *l >= area.x) {
            paint(l, y);
        }
        if right < area.right() {
            paint(right, y);
        }
    }
    for x in rect.x..rect.right() {
        if let Some(t) = top.filter(|t| *t >= area.y) {
            paint(x, t);
        }
        if bottom < area.bottom() {
            paint(x, bottom);
        }
    }
}

/// Fits a frame composed at the session size to a client of another size: cropped, or
/// padded with a dotted background (like tmux shows an area a larger client cannot use).
pub fn fit(frame: Frame, size: (u16, u16)) -> Frame {
    let (w, h) = (frame.buffer.area.width, frame.buffer.area.height);
    if (w, h) == size {
        return frame;
    }
    let mut out = Frame::new(size.0, size.1);
    let pad = Style::default().fg(MUTED);
    for y in 0..size.1 {
        for x in 0..size.0 {
            let Some(dst) = out.buffer.cell_mut((x, y)) else {
                continue;
            };
            match frame.buffer.cell((x, y)) {
                Some(src) if x < w && y < h => {
                    *dst = src.clone();
                    let extra = usize::from(y) * usize::from(w) + usize::from(x);
                    if let (Some(to), Some(from)) = (
                        out.extras
                            .get_mut(usize::from(y) * usize::from(size.0) + usize::from(x)),
                        frame.extras.get(extra),
                    ) {
                        to.clone_from(from);
                    }
                }
                _ => {
                    dst.set_symbol("·").set_style(pad);
                }
            }
        }
    }
    // A wide character cut at the right edge would spill: blank it.
    if size.0 < w && size.0 > 0 {
        for y in 0..size.1.min(h) {
            if let Some(c) = out.buffer.cell_mut((size.0 - 1, y)) {
                if ratatui::buffer::CellWidth::cell_width(c) > 1 {
                    c.set_symbol(" ");
                    c.set_diff_option(ratatui::buffer::CellDiffOption::None);
                }
            }
        }
    }
    out.cursor = frame.cursor.filter(|(x, y)| *x < size.0 && *y < size.1);
    out.application_cursor = frame.application_cursor;
    out.application_keypad = frame.application_keypad;
    out
}
