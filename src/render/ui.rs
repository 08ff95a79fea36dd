//! Composes one client's view: sidebar (workspaces and their tabs), tab bar, panes with
//! dividers, status line, and overlays (prefix indicator, help). Pure with respect to the
//! outside world: it reads state and emulator screens and returns a [`Frame`].
//!
//! Screen layout (cols × rows): the status line is the last row; the sidebar (if shown)
//! takes `sidebar` columns on the left above it, its last column a divider; the tab bar is
//! the first row right of the sidebar; panes fill the rest. `pane_area`, `compose` and
//! `hit_test` share these rules, so a click lands where the user saw the thing.

use std::collections::BTreeMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};

use super::chrome::{
    chrome_signature, clear_chrome, draw_help, draw_sidebar, draw_status, draw_tab_bar,
};
use super::diff::Frame;
use super::pane::{draw_pane, PaneCursor, RowCache};
use crate::bindings::Bindings;
use crate::model::ids::{PaneId, TerminalId};
use crate::model::layout::{DividerId, SplitDir};
use crate::model::state::TerminalState;
use crate::model::Scroll;
use crate::model::{AppState, Tab};
use crate::pty::{lock, TerminalRuntimeRegistry};

pub(super) const ACCENT: Color = Color::Green;
pub(super) const MUTED: Color = Color::DarkGray;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Prefix,
    Help,
}

pub struct View<'a> {
    pub session: &'a str,
    pub state: &'a AppState,
    pub runtimes: &'a TerminalRuntimeRegistry,
    pub bindings: &'a Bindings,
    pub scroll: &'a BTreeMap<TerminalId, Scroll>,
    /// Sidebar width in columns (0 = hidden).
    pub sidebar: u16,
    pub message: Option<&'a str>,
    pub overlay: Overlay,
}

/// What is under a screen position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Workspace(usize),
    Tab(usize, usize),
    /// An agent's line in the sidebar: its pane.
    Agent(usize, usize, PaneId),
    Divider(DividerId),
    /// A pane and the position inside it.
    Pane(PaneId, u16, u16),
}

pub fn pane_area((cols, rows): (u16, u16), sidebar: u16) -> Rect {
    let sidebar = sidebar.min(cols);
    Rect {
        x: sidebar,
        y: 1,
        width: cols - sidebar,
        height: rows.saturating_sub(2),
    }
}

pub(super) fn tab_bar_area((cols, rows): (u16, u16), sidebar: u16) -> Rect {
    let sidebar = sidebar.min(cols);
    Rect {
        x: sidebar,
        y: 0,
        width: cols - sidebar,
        height: rows.min(1),
    }
}

/// The rectangles of the panes visible in a tab (the zoomed pane alone, if zoomed).
pub fn tab_geometry(tab: &Tab, area: Rect) -> Vec<(PaneId, Rect)> {
    if tab.zoomed {
        vec![(tab.focused, area)]
    } else {
        tab.layout.geometry(area)
    }
}

pub(super) enum SidebarEntry {
    Workspace(usize),
    Tab(usize, usize),
    /// A pane of that tab running an agent with a known state: one line each.
    Agent(usize, usize, PaneId),
}

pub(super) fn sidebar_entries(state: &AppState) -> Vec<SidebarEntry> {
    let mut out = Vec::new();
    for (wi, ws) in state.workspaces.iter().enumerate() {
        out.push(SidebarEntry::Workspace(wi));
        for (ti, tab) in ws.tabs.iter().enumerate() {
            out.push(SidebarEntry::Tab(wi, ti));
            for pane in tab.layout.panes() {
                if state.agent_state(pane).is_some() {
                    out.push(SidebarEntry::Agent(wi, ti, pane));
                }
            }
        }
    }
    out
}

/// Row of the first sidebar entry (row 0 holds the session name).
pub(super) const SIDEBAR_FIRST_ROW: u16 = 2;

/// The label of a tab: its name, else the title of its focused pane's program.
pub fn tab_label(state: &AppState, tab: &Tab) -> String {
    let label = match (&tab.name, state.panes.get(&tab.focused).map(|p| p.terminal)) {
        (Some(name), _) => name.clone(),
        (None, Some(tid)) => terminal_title(state, tid),
        (None, None) => String::new(),
    };
    // The most urgent agent state in the tab, as a badge: blocked agents wait for the user;
    // and a bell rung there while nobody looked (tmux's bell flag).
    let label = match tab_agent_state(state, tab) {
        Some(s) => format!("{label} [{s}]"),
        None => label,
    };
    match tab_rang(state, tab) {
        true => format!("{label} [bell]"),
        false => label,
    }
}

/// Whether a pane of the tab rang its bell while no client showed it.
pub fn tab_rang(state: &AppState, tab: &Tab) -> bool {
    let mut rang = false;
    tab.layout.for_each_pane(|p| {
        rang |= state.panes.get(&p).is_some_and(|ps| ps.bell);
    });
    rang
}

/// The agent state that most needs attention among a tab's panes (states other than these
/// four are not shown).
pub fn tab_agent_state<'a>(state: &'a AppState, tab: &Tab) -> Option<&'a str> {
    const ORDER: [&str; 4] = ["blocked", "done", "working", "idle"];
    let mut most: Option<(usize, &'a str)> = None;
    tab.layout.for_each_pane(|p| {
        let Some(s) = state.agent_state(p) else {
            return;
        };
        if let Some(rank) = ORDER.iter().position(|o| *o == s) {
            if most.is_none_or(|(r, _)| rank < r) {
                most = Some((rank, s));
            }
        }
    });
    most.map(|(_, s)| s)
}

pub fn terminal_title(state: &AppState, tid: TerminalId) -> String {
    match state.terminals.get(&tid) {
        Some(t) => title_of(t).to_string(),
        None => "shell".into(),
    }
}

/// A terminal's title: the one its program set, else its program's name. From the session
/// state, which the title events keep: never from the emulator, whose lock a busy pane's
/// I/O thread may hold (every frame looks at the title of every tab).
pub(super) fn title_of(term: &TerminalState) -> &str {
    if !term.title.is_empty() {
        return &term.title;
    }
    match term.argv.first() {
        Some(argv0) => argv0.rsplit('/').next().unwrap_or(argv0),
        None => "shell",
    }
}

pub(super) fn tab_bar_items(view: &View<'_>, area: Rect) -> Vec<(Rect, usize, String)> {
    let mut out = Vec::new();
    let Some(ws) = view.state.active_workspace() else {
        return out;
    };
    let mut x = area.x;
    for (i, tab) in ws.tabs.iter().enumerate() {
        let label: String = tab_label(view.state, tab).chars().take(24).collect();
        let text = format!(" {}:{} ", i + 1, label);
        let w = text.chars().count() as u16;
        if x >= area.right() {
            break;
        }
        let width = w.min(area.right() - x);
        out.push((
            Rect {
                x,
                y: area.y,
                width,
                height: 1,
            },
            i,
            text,
        ));
        x = x.saturating_add(w);
    }
    out
}

pub fn hit_test(state: &AppState, size: (u16, u16), sidebar: u16, x: u16, y: u16) -> Option<Hit> {
    if y + 1 >= size.1 {
        return None; // status line
    }
    if x < sidebar {
        if y < SIDEBAR_FIRST_ROW || x + 1 == sidebar {
            return None;
        }
        return match sidebar_entries(state).get(usize::from(y - SIDEBAR_FIRST_ROW))? {
            SidebarEntry::Workspace(w) => Some(Hit::Workspace(*w)),
            SidebarEntry::Tab(w, t) => Some(Hit::Tab(*w, *t)),
            SidebarEntry::Agent(w, t, p) => Some(Hit::Agent(*w, *t, *p)),
        };
    }
    let tab = state.active_tab()?;
    if y == 0 {
        // Tab bar: labels have the same widths as drawn (numbers and titles), which the
        // caller cannot know without runtimes; approximate by equal split is wrong, so
        // the server resolves tab-bar clicks through `tab_bar_hit`.
        return None;
    }
    let area = pane_area(size, sidebar);
    if !tab.zoomed {
        for d in tab.layout.dividers(area) {
            if contains(d.rect, x, y) {
                return Some(Hit::Divider(d.id));
            }
        }
    }
    for (pane, rect) in tab_geometry(tab, area) {
        if contains(rect, x, y) {
            return Some(Hit::Pane(pane, x - rect.x, y - rect.y));
        }
    }
    None
}

/// Which tab of the active workspace is under (x, y) in the tab bar.
pub fn tab_bar_hit(view: &View<'_>, size: (u16, u16), x: u16, y: u16) -> Option<usize> {
    let area = tab_bar_area(size, view.sidebar);
    if y != area.y {
        return None;
    }
    tab_bar_items(view, area)
        .into_iter()
        .find(|(r, _, _)| contains(*r, x, y))
        .map(|(_, i, _)| i)
}

fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.right() && y >= r.y && y < r.bottom()
}

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
    /// The chrome as last drawn (only its sidebar, tab bar and status cells are used).
    chrome: Option<Buffer>,
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
}

fn layout_key(view: &View<'_>, size: (u16, u16)) -> LayoutKey {
    let area = pane_area(size, view.sidebar);
    let tab = view.state.active_tab();
    let geometry = tab.map(|t| tab_geometry(t, area)).unwrap_or_default();
    let scroll = geometry
        .iter()
        .filter_map(|(p, _)| view.state.panes.get(p).map(|ps| ps.terminal))
        .filter_map(|tid| {
            let st = *view.scroll.get(&tid)?;
            let rt = view.runtimes.get(tid)?;
            let emu = lock(&rt.emulator);
            Some((tid, st, emu.scrollback(), emu.history_len()))
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
    }
}

/// Composes a client's view afresh (and resets the cache to describe this frame).
pub fn compose(view: &View<'_>, size: (u16, u16), cache: &mut ComposeCache) -> Frame {
    cache.rows.clear();
    cache.chrome = None;
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
            let Some(rt) = view.runtimes.get(tid) else {
                continue;
            };
            let scroll = view.scroll.get(&tid);
            let cursor = draw_pane(
                &mut frame,
                rect,
                tid,
                &rt.emulator,
                scroll,
                &mut cache.rows,
                &mut dirty,
            );
            if pane == tab.focused {
                highlight_border(&mut frame.buffer, rect, area);
                apply_cursor(
                    &mut frame,
                    &cursor,
                    view.overlay != Overlay::Help && scroll.is_none(),
                );
            }
        }
    }
    draw_status(view, &mut frame.buffer, size);
    if view.overlay == Overlay::Help {
        if let Some(drawn) = draw_help(view, &mut frame.buffer, size) {
            frame.plain_extras(drawn);
        }
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
    if frame.size() != size || size.0 == 0 || size.1 == 0 || view.overlay == Overlay::Help {
        return false;
    }
    let key = layout_key(view, size);
    if cache.key.as_ref() != Some(&key) || !key.scroll.is_empty() {
        return false;
    }
    dirty.clear();
    dirty.resize(usize::from(size.1), false);
    cache.rows.sync_due = None;
    // The chrome is drawn aside and copied over only where it changed.
    let area = Rect::new(0, 0, size.0, size.1);
    let chrome = cache.chrome.get_or_insert_with(|| Buffer::empty(area));
    if chrome.area != area {
        *chrome = Buffer::empty(area);
    }
    // Everything the chrome shows: when it is unchanged, so is the chrome.
    let mut signature = std::mem::take(&mut cache.signature_scratch);
    chrome_signature(view, size, &mut signature);
    let chrome_changed = cache.chrome_signature.as_deref() != Some(signature.as_slice());
    cache.signature_scratch = cache
        .chrome_signature
        .replace(signature)
        .unwrap_or_default();
    if chrome_changed {
        clear_chrome(chrome, size, view.sidebar);
        draw_sidebar(view, chrome, size);
        draw_tab_bar(view, chrome, size);
        draw_status(view, chrome, size);
    }
    for y in (0..size.1).filter(|_| chrome_changed) {
        let width = if y == 0 || y + 1 == size.1 {
            size.0
        } else {
            view.sidebar.min(size.0)
        };
        for x in 0..width {
            if let (Some(src), Some(dst)) = (chrome.cell((x, y)), frame.buffer.cell_mut((x, y))) {
                if src != dst {
                    *dst = src.clone();
                    dirty[usize::from(y)] = true;
                }
            }
        }
    }
    let pane_area = pane_area(size, view.sidebar);
    if let Some(tab) = view.state.active_tab() {
        for (pane, rect) in tab_geometry(tab, pane_area) {
            let Some(tid) = view.state.panes.get(&pane).map(|p| p.terminal) else {
                continue;
            };
            let Some(rt) = view.runtimes.get(tid) else {
                continue;
            };
            let cursor = draw_pane(frame, rect, tid, &rt.emulator, None, &mut cache.rows, dirty);
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
