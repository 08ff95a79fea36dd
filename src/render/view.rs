//! What a frame is composed from ([`View`], the [`Screens`] the server lends it) and the
//! screen's geometry: where the sidebar, tab bar, status line and panes are, what is under
//! a position, and the labels the chrome shows. The bottom of the renderer: `chrome`, `pane`
//! and `ui` build on it, it imports none of them.
//!
//! Screen layout (cols × rows): the status line is the last row; the sidebar (if shown)
//! takes `sidebar` columns on the left above it, its last column a divider; the tab bar is
//! the first row right of the sidebar; panes fill the rest. `pane_area`, `ui::compose` and
//! `hit_test` share these rules, so a click lands where the user saw the thing.

use std::collections::BTreeMap;
use std::time::Instant;

use ratatui::layout::Rect;
use ratatui::style::Color;

use crate::bindings::Bindings;
use crate::model::ids::{PaneId, TerminalId};
use crate::model::layout::DividerId;
use crate::model::state::TerminalState;
use crate::model::{AppState, Scroll, Tab};
use crate::term::Emulator;

pub(super) const ACCENT: Color = Color::Green;
pub(super) const MUTED: Color = Color::DarkGray;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Prefix,
    Help,
    /// A list to choose from ([`View::panel`]), e.g. the session picker.
    Panel,
}

/// A boxed list over the panes: a title, rows with one of them chosen, and a last line
/// that says which keys do what.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Panel {
    pub title: String,
    pub rows: Vec<String>,
    pub selected: Option<usize>,
    pub footer: String,
}

/// Everything a frame is composed from: values of the session, and the screens.
pub struct View<'a> {
    pub session: &'a str,
    pub state: &'a AppState,
    pub screens: &'a dyn Screens,
    pub bindings: &'a Bindings,
    pub scroll: &'a BTreeMap<TerminalId, Scroll>,
    /// Sidebar width in columns (0 = hidden).
    pub sidebar: u16,
    pub message: Option<&'a str>,
    pub overlay: Overlay,
    /// What [`Overlay::Panel`] shows.
    pub panel: Option<&'a Panel>,
    /// How far the help overlay is scrolled down (when it does not fit).
    pub help_scroll: usize,
    /// What the status line shows (config `status`), this machine's name, and the time
    /// (`HH:MM`) when it is shown.
    pub status: &'a [String],
    pub host: &'a str,
    pub clock: Option<String>,
    /// The time the frame is for (synchronized output ends by it).
    pub now: Instant,
    /// The saved machines, below this one's workspaces in the sidebar.
    pub machines: &'a [MachineRow],
}

/// A saved machine as the sidebar shows it: its state (`connected`, `connecting`,
/// `unreachable`), its workspaces' names each with how many agents wait there, and how
/// many wait on it in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineRow {
    pub name: String,
    pub state: &'static str,
    pub workspaces: Vec<MachineWorkspace>,
    pub waiting: usize,
}

/// A workspace of a saved machine, as the sidebar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineWorkspace {
    pub name: String,
    /// Its agents waiting for the user.
    pub waiting: usize,
    pub tabs: Vec<MachineTab>,
}

/// A tab of a saved machine: its id and label there, and its panes' ids there (`p3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineTab {
    pub id: String,
    pub label: String,
    pub panes: Vec<String>,
}

/// A row of the sidebar's machines part, below this machine's entries; each machine
/// after a blank row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MachineEntry {
    Gap,
    Machine(usize),
    Workspace(usize, usize),
    Tab(usize, usize, usize),
}

/// The machine a terminal mirrors a pane of, with that machine's state, while its link
/// finds it unreachable (its pane here says so, and takes no keys). Not while the link
/// is still connecting: the pane's own connection may well be up already.
pub fn machine_down<'a>(
    state: &AppState,
    machines: &'a [MachineRow],
    tid: TerminalId,
) -> Option<(&'a str, &'static str)> {
    let argv = &state.terminals.get(&tid)?.argv;
    let name = crate::model::state::viewed_machine(argv)?;
    let m = machines.iter().find(|m| m.name == name)?;
    (m.state == "unreachable").then_some((m.name.as_str(), m.state))
}

pub(super) fn machine_entries(machines: &[MachineRow]) -> Vec<MachineEntry> {
    let mut out = Vec::new();
    for (mi, m) in machines.iter().enumerate() {
        out.push(MachineEntry::Gap);
        out.push(MachineEntry::Machine(mi));
        for (wi, ws) in m.workspaces.iter().enumerate() {
            out.push(MachineEntry::Workspace(mi, wi));
            for ti in 0..ws.tabs.len() {
                out.push(MachineEntry::Tab(mi, wi, ti));
            }
        }
    }
    out
}

/// The terminals' screens, as the server lends them to a frame: [`Screens::with`] runs
/// `draw` with a terminal's emulator, held for as long as `draw` runs, or not at all if
/// there is no such terminal. The renderer never sees where emulators live or how they are
/// shared.
pub trait Screens {
    fn with(&self, tid: TerminalId, draw: &mut dyn FnMut(&mut Emulator));
}

/// [`Screens::with`] for a `draw` that gives something back.
pub(super) fn with_screen<R>(
    screens: &dyn Screens,
    tid: TerminalId,
    draw: impl FnOnce(&mut Emulator) -> R,
) -> Option<R> {
    let mut draw = Some(draw);
    let mut out = None;
    screens.with(tid, &mut |emu| {
        if let Some(draw) = draw.take() {
            out = Some(draw(emu));
        }
    });
    out
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
    /// A saved machine's tab: the machine, its workspace and the tab, as listed.
    MachineTab(usize, usize, usize),
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

/// A terminal's title: the one its program set, else the name of the program in front,
/// else its own program's name. From the session
/// state, which the title events keep: never from the emulator, whose lock a busy pane's
/// I/O thread may hold (every frame looks at the title of every tab).
pub(super) fn title_of(term: &TerminalState) -> &str {
    if !term.title.is_empty() {
        return &term.title;
    }
    if let Some(p) = &term.program {
        return p;
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

pub fn hit_test(
    state: &AppState,
    machines: &[MachineRow],
    size: (u16, u16),
    sidebar: u16,
    x: u16,
    y: u16,
) -> Option<Hit> {
    if y + 1 >= size.1 {
        return None; // status line
    }
    if x < sidebar {
        if y < SIDEBAR_FIRST_ROW || x + 1 == sidebar {
            return None;
        }
        let entries = sidebar_entries(state);
        let row = usize::from(y - SIDEBAR_FIRST_ROW);
        return match entries.get(row) {
            Some(SidebarEntry::Workspace(w)) => Some(Hit::Workspace(*w)),
            Some(SidebarEntry::Tab(w, t)) => Some(Hit::Tab(*w, *t)),
            Some(SidebarEntry::Agent(w, t, p)) => Some(Hit::Agent(*w, *t, *p)),
            None => match machine_entries(machines).get(row - entries.len())? {
                MachineEntry::Tab(m, w, t) => Some(Hit::MachineTab(*m, *w, *t)),
                _ => None,
            },
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
