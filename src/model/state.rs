//! `AppState`: the server's facts. Workspaces hold tabs, a tab holds a BSP layout of
//! `PaneId`s, each pane shows one terminal (`TerminalId`).
//!
//! Invariants: every workspace has ≥ 1 tab, every tab ≥ 1 pane; `active` indexes are in
//! range whenever the lists are non-empty; public numbers come from counters that only
//! grow, so an id a script saw is never given to something else.

use std::path::PathBuf;

use super::ids::{IdMap, PaneId, PaneNo, TabNo, TerminalId, WorkspaceNo};
use super::layout::Layout;

#[derive(Debug, Clone, PartialEq)]
pub struct TerminalState {
    pub id: TerminalId,
    /// Where it was started (the live cwd is read from the process when needed).
    pub cwd: Option<PathBuf>,
    /// Launch argv; empty = the default shell.
    pub argv: Vec<String>,
    pub title: String,
    /// The program in front, by name, when it is not the pane's own program (`vim` run
    /// from the shell): what a tab without a title is named after (tmux's
    /// automatic-rename).
    pub program: Option<String>,
    /// Exit code once the program ended.
    pub exited: Option<Option<i32>>,
    /// The agent running in it and its state, once detected or reported.
    pub agent: Option<String>,
    pub agent_state: Option<String>,
    /// The agent's process (its foreground pid when detected): reports bind to it.
    pub agent_pid: Option<i32>,
    /// The session an official hook (`herdr:<agent>`) reported, and that source.
    pub agent_session: Option<crate::agent::SessionRef>,
    pub agent_source: Option<String>,
    /// The last report sequence number per source (an older report never wins).
    pub report_seq: std::collections::BTreeMap<String, u64>,
    /// The agent's hooks reported it working or blocked: from then on they alone say what
    /// it does (screen rules and output activity step aside).
    pub hooked: bool,
    /// The command line the agent was started with (its launch flags are kept on resume).
    pub agent_argv: Vec<String>,
    /// What went wrong when an error ended the agent's last turn (its hook said so);
    /// cleared when it works again.
    pub agent_error: Option<String>,
    /// When the agent was detected, or its state last changed (`agent list` shows it).
    pub agent_since: Option<std::time::SystemTime>,
    /// In a pane that mirrors a saved machine's pane: the agent there and its state, as
    /// that machine's link last saw them (shown as a local agent's are; nothing of the
    /// agent machinery here touches it).
    pub mirrored_agent: Option<(String, String)>,
}

/// The saved machine whose pane a terminal started with `argv` mirrors (`herdr machine
/// view NAME [PANE]`), if it is one.
pub fn viewed_machine(argv: &[String]) -> Option<&str> {
    match argv {
        [herdr, machine, view, name, ..]
            if program_name(herdr) == "herdr" && machine == "machine" && view == "view" =>
        {
            Some(name)
        }
        _ => None,
    }
}

/// A program's name as people say it, from its `argv[0]`: `/usr/bin/vim` → `vim`, a
/// login shell's `-bash` → `bash`.
pub fn program_name(argv0: &str) -> &str {
    let name = argv0.rsplit('/').next().unwrap_or(argv0);
    name.trim_start_matches('-')
}

impl TerminalState {
    /// A terminal just started: nothing known yet but how and where.
    pub fn new(id: TerminalId, cwd: Option<PathBuf>, argv: Vec<String>) -> TerminalState {
        TerminalState {
            id,
            cwd,
            argv,
            title: String::new(),
            program: None,
            exited: None,
            agent: None,
            agent_state: None,
            agent_pid: None,
            agent_session: None,
            agent_source: None,
            report_seq: Default::default(),
            hooked: false,
            agent_argv: Vec::new(),
            agent_error: None,
            agent_since: None,
            mirrored_agent: None,
        }
    }

    /// When the agent's state last changed, in milliseconds since the Unix epoch.
    pub fn agent_since_ms(&self) -> Option<u64> {
        let d = self
            .agent_since?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        u64::try_from(d.as_millis()).ok()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PaneState {
    pub no: PaneNo,
    pub terminal: TerminalId,
    /// A name given by the user or a script (`pane rename`).
    pub label: Option<String>,
    /// False from when its agent finished while nobody looked until a client shows it:
    /// an idle agent in an unseen pane is "done".
    pub seen: bool,
    /// Its program rang the bell while no client showed it (tmux's bell flag), until one
    /// does.
    pub bell: bool,
}

/// [`AppState::agent_state`] of a pane and its terminal, already looked up.
pub fn shown_agent_state<'a>(pane: &PaneState, terminal: &'a TerminalState) -> Option<&'a str> {
    match terminal.agent_state.as_deref() {
        Some("idle") if !pane.seen => Some("done"),
        None => terminal.mirrored_agent.as_ref().map(|(_, s)| s.as_str()),
        other => other,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tab {
    pub no: TabNo,
    pub name: Option<String>,
    pub layout: Layout,
    pub focused: PaneId,
    /// The pane focused before `focused` (tmux's last pane), while it is in the tab.
    pub last: Option<PaneId>,
    pub zoomed: bool,
}

impl Tab {
    /// Moves the focus to `pane`, remembering the pane it leaves.
    pub fn focus(&mut self, pane: PaneId) {
        if self.focused != pane {
            self.last = Some(self.focused);
            self.focused = pane;
        }
    }

    /// The panes in tree order, starting after (`forward`) or before the focused one,
    /// wrapping around: the one `o` goes to, the one a swap exchanges with.
    pub fn neighbour_in_order(&self, forward: bool) -> Option<PaneId> {
        let panes = self.layout.panes();
        let at = panes.iter().position(|p| *p == self.focused)?;
        let n = panes.len();
        (n > 1).then(|| {
            panes[if forward {
                (at + 1) % n
            } else {
                (at + n - 1) % n
            }]
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub no: WorkspaceNo,
    pub name: String,
    pub tabs: Vec<Tab>,
    pub active: usize,
}

impl Workspace {
    pub fn active_tab(&self) -> Option<&Tab> {
        self.tabs.get(self.active)
    }

    pub fn active_tab_mut(&mut self) -> Option<&mut Tab> {
        self.tabs.get_mut(self.active)
    }
}

/// Where a pane sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanePos {
    pub workspace: usize,
    pub tab: usize,
}

/// What closing a pane removed, so the server can finish the job in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub terminal: TerminalId,
    pub tab_closed: bool,
    pub workspace_closed: bool,
    /// No pane is left anywhere: the session is over.
    pub session_empty: bool,
}

#[derive(Debug, Default)]
pub struct AppState {
    pub workspaces: Vec<Workspace>,
    pub active: usize,
    pub panes: IdMap<PaneId, PaneState>,
    /// (Boxed: a table keeps room for up to twice its entries, and a terminal's state is
    /// 368 bytes; 1,000 panes left ~400 KB of empty room.)
    pub terminals: IdMap<TerminalId, Box<TerminalState>>,
    next_pane_id: u32,
    next_terminal_id: u64,
    next_workspace_no: u32,
    next_tab_no: u32,
    next_pane_no: u32,
}

impl AppState {
    pub fn alloc_pane_id(&mut self) -> PaneId {
        self.next_pane_id += 1;
        PaneId(self.next_pane_id)
    }

    pub fn alloc_terminal_id(&mut self) -> TerminalId {
        self.next_terminal_id += 1;
        TerminalId(self.next_terminal_id)
    }

    /// The last public numbers handed out: (workspace, tab, pane).
    pub fn counters(&self) -> (u32, u32, u32) {
        (self.next_workspace_no, self.next_tab_no, self.next_pane_no)
    }

    /// Puts back the counters of a restored session (they never go backwards, so ids a
    /// script saw before the restart are not given to anything new).
    pub fn restore_counters(&mut self, (w, t, p): (u32, u32, u32)) {
        self.next_workspace_no = self.next_workspace_no.max(w);
        self.next_tab_no = self.next_tab_no.max(t);
        self.next_pane_no = self.next_pane_no.max(p);
    }

    /// Adds a restored workspace as it was: its public numbers, tabs, layouts, labels.
    /// The caller has spawned every terminal in `panes`.
    pub fn insert_restored(
        &mut self,
        ws: Workspace,
        panes: Vec<(PaneId, PaneState, TerminalState)>,
    ) {
        for (id, ps, term) in panes {
            self.terminals.insert(term.id, Box::new(term));
            self.panes.insert(id, ps);
        }
        self.workspaces.push(ws);
    }

    /// The public number the next pane will get.
    pub fn peek_pane_no(&self) -> u32 {
        self.next_pane_no + 1
    }

    fn alloc_pane_no(&mut self) -> PaneNo {
        self.next_pane_no += 1;
        PaneNo(self.next_pane_no)
    }

    fn alloc_tab_no(&mut self) -> TabNo {
        self.next_tab_no += 1;
        TabNo(self.next_tab_no)
    }

    /// Registers a new pane showing a new terminal (after its spawn succeeded).
    fn register(&mut self, pane: PaneId, term: TerminalState) {
        let no = self.alloc_pane_no();
        self.panes.insert(
            pane,
            PaneState {
                no,
                terminal: term.id,
                label: None,
                seen: true,
                bell: false,
            },
        );
        self.terminals.insert(term.id, Box::new(term));
    }

    pub fn active_workspace(&self) -> Option<&Workspace> {
        self.workspaces.get(self.active)
    }

    pub fn active_workspace_mut(&mut self) -> Option<&mut Workspace> {
        self.workspaces.get_mut(self.active)
    }

    pub fn active_tab(&self) -> Option<&Tab> {
        self.active_workspace().and_then(|w| w.active_tab())
    }

    pub fn active_tab_mut(&mut self) -> Option<&mut Tab> {
        self.active_workspace_mut().and_then(|w| w.active_tab_mut())
    }

    pub fn focused_pane(&self) -> Option<PaneId> {
        self.active_tab().map(|t| t.focused)
    }

    pub fn focused_terminal(&self) -> Option<TerminalId> {
        self.focused_pane()
            .and_then(|p| self.panes.get(&p))
            .map(|p| p.terminal)
    }

    pub fn pane_count(&self) -> usize {
        self.panes.len()
    }

    /// Adds a workspace with one tab holding `pane` (spawned already) and focuses it.
    pub fn add_workspace(
        &mut self,
        name: Option<String>,
        pane: PaneId,
        term: TerminalState,
    ) -> usize {
        self.next_workspace_no += 1;
        let no = WorkspaceNo(self.next_workspace_no);
        let tab = self.make_tab(pane, term);
        self.workspaces.push(Workspace {
            no,
            name: name.unwrap_or_else(|| format!("{}", no.0)),
            tabs: vec![tab],
            active: 0,
        });
        self.active = self.workspaces.len() - 1;
        self.active
    }

    fn make_tab(&mut self, pane: PaneId, term: TerminalState) -> Tab {
        self.register(pane, term);
        Tab {
            no: self.alloc_tab_no(),
            name: None,
            layout: Layout::new(pane),
            focused: pane,
            last: None,
            zoomed: false,
        }
    }

    /// Adds a tab after the active one in the active workspace and focuses it.
    pub fn add_tab(&mut self, pane: PaneId, term: TerminalState) -> bool {
        let tab = self.make_tab(pane, term);
        let Some(ws) = self.active_workspace_mut() else {
            return false;
        };
        let at = (ws.active + 1).min(ws.tabs.len());
        ws.tabs.insert(at, tab);
        ws.active = at;
        true
    }

    /// Puts a split (computed and spawned by the caller) in place: `layout` already holds
    /// `pane`; the tab's layout is replaced and the new pane focused.
    pub fn commit_split(
        &mut self,
        pos: PanePos,
        layout: Layout,
        pane: PaneId,
        term: TerminalState,
    ) -> bool {
        if self.tab_at(pos).is_none() {
            return false;
        }
        self.register(pane, term);
        if let Some(tab) = self.tab_at_mut(pos) {
            tab.layout = layout;
            tab.focus(pane);
            tab.zoomed = false;
        }
        true
    }

    pub fn tab_at(&self, pos: PanePos) -> Option<&Tab> {
        self.workspaces.get(pos.workspace)?.tabs.get(pos.tab)
    }

    pub fn tab_at_mut(&mut self, pos: PanePos) -> Option<&mut Tab> {
        self.workspaces
            .get_mut(pos.workspace)?
            .tabs
            .get_mut(pos.tab)
    }

    pub fn find_pane(&self, pane: PaneId) -> Option<PanePos> {
        for (wi, ws) in self.workspaces.iter().enumerate() {
            for (ti, tab) in ws.tabs.iter().enumerate() {
                if tab.layout.contains(pane) {
                    return Some(PanePos {
                        workspace: wi,
                        tab: ti,
                    });
                }
            }
        }
        None
    }

    /// How a terminal's program ended, once it has (`Some(None)`: a signal ended it).
    pub fn exit_status(&self, tid: TerminalId) -> Option<Option<i32>> {
        self.terminals.get(&tid).and_then(|t| t.exited)
    }

    /// How many agents wait for the user (blocked), in every workspace.
    pub fn agents_waiting(&self) -> usize {
        self.panes
            .keys()
            .filter(|p| self.agent_state(**p) == Some("blocked"))
            .count()
    }

    /// The agent state of a pane as users see it: an idle agent whose pane has not been
    /// looked at since it finished is "done".
    pub fn agent_state(&self, pane: PaneId) -> Option<&str> {
        let ps = self.panes.get(&pane)?;
        shown_agent_state(ps, self.terminals.get(&ps.terminal)?)
    }

    pub fn pane_of_terminal(&self, terminal: TerminalId) -> Option<PaneId> {
        self.panes
            .iter()
            .find(|(_, p)| p.terminal == terminal)
            .map(|(id, _)| *id)
    }

    /// Removes a pane from its layout and repairs focus; empty tabs and workspaces go too.
    pub fn close_pane(&mut self, pane: PaneId) -> Option<Closed> {
        let pos = self.find_pane(pane)?;
        let terminal = self.panes.remove(&pane)?.terminal;
        self.terminals.remove(&terminal);
        let mut closed = Closed {
            terminal,
            tab_closed: false,
            workspace_closed: false,
            session_empty: false,
        };
        let ws = &mut self.workspaces[pos.workspace];
        let tab = &mut ws.tabs[pos.tab];
        if tab.layout.len() > 1 {
            let next = tab.layout.remove(pane);
            if tab.focused == pane {
                tab.focused = next.unwrap_or_else(|| tab.layout.first());
            }
            tab.zoomed = false;
            return Some(closed);
        }
        ws.tabs.remove(pos.tab);
        closed.tab_closed = true;
        if ws.active >= ws.tabs.len() && ws.active > 0 {
            ws.active = ws.tabs.len() - 1;
        } else if pos.tab < ws.active {
            ws.active -= 1;
        }
        if ws.tabs.is_empty() {
            self.workspaces.remove(pos.workspace);
            closed.workspace_closed = true;
            if self.active >= self.workspaces.len() && self.active > 0 {
                self.active = self.workspaces.len() - 1;
            } else if pos.workspace < self.active {
                self.active -= 1;
            }
        }
        closed.session_empty = self.workspaces.is_empty();
        Some(closed)
    }

    /// Focuses tab `index` (0-based) of the active workspace.
    pub fn select_tab(&mut self, index: usize) -> bool {
        match self.active_workspace_mut() {
            Some(ws) if index < ws.tabs.len() => {
                ws.active = index;
                true
            }
            _ => false,
        }
    }

    /// Moves between tabs of the active workspace, wrapping around.
    pub fn cycle_tab(&mut self, forward: bool) {
        if let Some(ws) = self.active_workspace_mut() {
            let n = ws.tabs.len();
            if n > 0 {
                ws.active = if forward {
                    (ws.active + 1) % n
                } else {
                    (ws.active + n - 1) % n
                };
            }
        }
    }

    pub fn select_workspace(&mut self, index: usize) -> bool {
        if index < self.workspaces.len() {
            self.active = index;
            true
        } else {
            false
        }
    }

    pub fn cycle_workspace(&mut self, forward: bool) {
        let n = self.workspaces.len();
        if n > 0 {
            self.active = if forward {
                (self.active + 1) % n
            } else {
                (self.active + n - 1) % n
            };
        }
    }

    /// Focuses a pane wherever it is (switching workspace and tab).
    pub fn focus_pane(&mut self, pane: PaneId) -> bool {
        let Some(pos) = self.find_pane(pane) else {
            return false;
        };
        self.active = pos.workspace;
        let ws = &mut self.workspaces[pos.workspace];
        ws.active = pos.tab;
        let tab = &mut ws.tabs[pos.tab];
        if tab.focused != pane {
            tab.zoomed = false;
        }
        tab.focus(pane);
        true
    }

    /// All panes with their terminal, in every workspace and tab (hidden ones too).
    pub fn all_panes(&self) -> Vec<(PanePos, PaneId)> {
        let mut out = Vec::new();
        for (wi, ws) in self.workspaces.iter().enumerate() {
            for (ti, tab) in ws.tabs.iter().enumerate() {
                for p in tab.layout.panes() {
                    out.push((
                        PanePos {
                            workspace: wi,
                            tab: ti,
                        },
                        p,
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layout::SplitDir;

    fn term(st: &mut AppState) -> TerminalState {
        TerminalState::new(st.alloc_terminal_id(), None, vec![])
    }

    fn with_one_pane() -> (AppState, PaneId) {
        let mut st = AppState::default();
        let p = st.alloc_pane_id();
        let t = term(&mut st);
        st.add_workspace(None, p, t);
        (st, p)
    }

    #[test]
    fn split_then_close_restores_focus() {
        let (mut st, p1) = with_one_pane();
        let p2 = st.alloc_pane_id();
        let mut layout = st.active_tab().unwrap().layout.clone();
        assert!(layout.split(p1, SplitDir::Right, p2));
        let t = term(&mut st);
        let pos = st.find_pane(p1).unwrap();
        assert!(st.commit_split(pos, layout, p2, t));
        assert_eq!(st.focused_pane(), Some(p2));
        let closed = st.close_pane(p2).unwrap();
        assert!(!closed.tab_closed);
        assert_eq!(st.focused_pane(), Some(p1));
        assert_eq!(st.pane_count(), 1);
    }

    #[test]
    fn closing_last_pane_empties_session_and_public_numbers_are_not_reused() {
        let (mut st, p1) = with_one_pane();
        let p2 = st.alloc_pane_id();
        let t = term(&mut st);
        st.add_tab(p2, t);
        assert_eq!(st.panes[&p2].no, PaneNo(2));
        let c = st.close_pane(p2).unwrap();
        assert!(c.tab_closed && !c.workspace_closed);
        let p3 = st.alloc_pane_id();
        let t = term(&mut st);
        st.add_tab(p3, t);
        assert_eq!(st.panes[&p3].no, PaneNo(3));
        assert_eq!(st.active_workspace().unwrap().tabs[1].no, TabNo(3));
        st.close_pane(p3);
        let c = st.close_pane(p1).unwrap();
        assert!(c.workspace_closed && c.session_empty);
    }

    #[test]
    fn workspaces_cycle_and_focus_follows_pane() {
        let (mut st, p1) = with_one_pane();
        let p2 = st.alloc_pane_id();
        let t = term(&mut st);
        st.add_workspace(Some("second".into()), p2, t);
        assert_eq!(st.active, 1);
        st.cycle_workspace(true);
        assert_eq!(st.active, 0);
        assert!(st.focus_pane(p2));
        assert_eq!(st.active, 1);
        assert_eq!(st.focused_pane(), Some(p2));
        st.close_pane(p2);
        assert_eq!(st.active, 0);
        assert_eq!(st.focused_pane(), Some(p1));
    }
}
