//! API methods that read or change the structure: workspaces, tabs, panes.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{now, ApiError, ApiResult};
use crate::model::ids::{PaneId, TerminalId};
use crate::model::layout::{Side, SplitDir};
use crate::model::state::PanePos;
use crate::protocol::api::{
    AgentList, Edge, PaneList, PaneRename, PaneResize, PaneSplit, PaneTarget, PaneZoom,
    SplitDirection, TabCreate, TabList, TabRename, TabTarget, WorkspaceCreate, WorkspaceRename,
    WorkspaceTarget,
};
use crate::pty::proc::{Foreground, Probe};
use crate::render::view;
use crate::server::Server;

fn cwd_param(cwd: Option<PathBuf>) -> Result<Option<PathBuf>, ApiError> {
    match cwd {
        None => Ok(None),
        Some(path) => {
            if !path.is_absolute() || !path.is_dir() {
                return Err(ApiError::params(format!(
                    "\"cwd\" must be an existing absolute folder, got {path:?}"
                )));
            }
            Ok(Some(path))
        }
    }
}

fn spawn_err(e: impl std::fmt::Display) -> ApiError {
    ApiError::new("spawn_failed", e.to_string())
}

/// One pane as `pane.get` and `pane.list` show it (the keys in this order).
#[derive(serde::Serialize)]
struct PaneRow<'a> {
    id: String,
    workspace: String,
    tab: String,
    title: String,
    label: Option<&'a str>,
    cwd: Option<String>,
    pid: Option<u32>,
    command: Option<String>,
    argv: &'a [String],
    rows: u16,
    cols: u16,
    focused: bool,
    shown: bool,
    mirrors: Option<Value>,
    zoomed: bool,
    agent: Option<&'a str>,
    agent_state: Option<&'a str>,
    agent_error: Option<&'a str>,
    /// While it runs: null; then its status, or "signal" when a signal ended it.
    exited: Option<Exited>,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum Exited {
    Code(i32),
    Signal(&'static str),
}

impl Server {
    pub(crate) fn workspace_list(&self) -> Value {
        let items: Vec<Value> = self
            .session
            .state
            .workspaces
            .iter()
            .enumerate()
            .map(|(i, ws)| {
                json!({
                    "id": ws.no.to_string(),
                    "name": ws.name,
                    "focused": i == self.session.state.active,
                    "tabs": ws.tabs.iter().map(|t| t.no.to_string()).collect::<Vec<_>>(),
                    "panes": ws.tabs.iter().map(|t| t.layout.len()).sum::<usize>(),
                })
            })
            .collect();
        Value::Array(items)
    }

    pub(crate) fn workspace_create(&mut self, p: WorkspaceCreate) -> ApiResult {
        let name = p.name;
        let cwd = cwd_param(p.cwd)?.or_else(|| self.session.focused_cwd());
        let pane = self.create_workspace(name, cwd).map_err(spawn_err)?;
        let ws = &self.session.state.workspaces[self.session.state.active];
        now(
            json!({ "id": ws.no.to_string(), "tab": ws.tabs[0].no.to_string(), "pane": self.pane_no(pane) }),
        )
    }

    pub(crate) fn workspace_close(&mut self, p: WorkspaceTarget) -> ApiResult {
        let w = self.target_workspace(p.workspace)?;
        let id = self.session.state.workspaces[w].no.to_string();
        let panes: Vec<PaneId> = self.session.state.workspaces[w]
            .tabs
            .iter()
            .flat_map(|t| t.layout.panes())
            .collect();
        for pane in panes {
            self.close_pane(pane);
        }
        now(json!({ "closed": id }))
    }

    pub(crate) fn workspace_rename(&mut self, p: WorkspaceRename) -> ApiResult {
        let w = self.target_workspace(p.workspace)?;
        let name = p.name.trim().to_string();
        if name.is_empty() {
            return Err(ApiError::params("\"name\" must not be empty"));
        }
        self.session.state.workspaces[w].name = name;
        self.request_render();
        now(json!({ "id": self.session.state.workspaces[w].no.to_string() }))
    }

    pub(crate) fn workspace_focus(&mut self, p: WorkspaceTarget) -> ApiResult {
        let w = self.target_workspace(p.workspace)?;
        self.session.state.select_workspace(w);
        self.request_render();
        now(json!({ "id": self.session.state.workspaces[w].no.to_string() }))
    }

    fn tab_json(&self, pos: PanePos) -> Value {
        let ws = &self.session.state.workspaces[pos.workspace];
        let tab = &ws.tabs[pos.tab];
        json!({
            "id": tab.no.to_string(),
            "workspace": ws.no.to_string(),
            "name": tab.name,
            "title": view::tab_label(&self.session.state, tab),
            "focused": pos.workspace == self.session.state.active && pos.tab == ws.active,
            "panes": tab.layout.panes().iter().map(|p| self.pane_no(*p)).collect::<Vec<_>>(),
            "zoomed": tab.zoomed,
        })
    }

    pub(crate) fn tab_list(&mut self, p: TabList) -> ApiResult {
        let only = match p.workspace {
            None => None,
            Some(w) => Some(self.target_workspace(Some(w))?),
        };
        let mut out = Vec::new();
        for (wi, ws) in self.session.state.workspaces.iter().enumerate() {
            if only.is_some_and(|o| o != wi) {
                continue;
            }
            for ti in 0..ws.tabs.len() {
                out.push(self.tab_json(PanePos {
                    workspace: wi,
                    tab: ti,
                }));
            }
        }
        now(Value::Array(out))
    }

    pub(crate) fn tab_create(&mut self, p: TabCreate) -> ApiResult {
        let w = self.target_workspace(p.workspace)?;
        let cwd = cwd_param(p.cwd)?;
        let name = p.name;
        self.session.state.select_workspace(w);
        // Without a folder: that of the workspace's focused pane, as from the keyboard.
        let cwd = cwd.or_else(|| self.session.focused_cwd());
        let pane = self.create_tab(cwd).map_err(spawn_err)?;
        let pos = self
            .session
            .state
            .find_pane(pane)
            .ok_or_else(|| ApiError::new("internal", "new tab vanished"))?;
        if let Some(tab) = self.session.state.tab_at_mut(pos) {
            tab.name = name;
        }
        let id = self.session.state.workspaces[pos.workspace].tabs[pos.tab]
            .no
            .to_string();
        now(json!({ "id": id, "pane": self.pane_no(pane) }))
    }

    pub(crate) fn tab_close(&mut self, p: TabTarget) -> ApiResult {
        let pos = self.target_tab(p.tab, p.workspace)?;
        let tab = &self.session.state.workspaces[pos.workspace].tabs[pos.tab];
        let id = tab.no.to_string();
        for pane in tab.layout.panes() {
            self.close_pane(pane);
        }
        now(json!({ "closed": id }))
    }

    pub(crate) fn tab_rename(&mut self, p: TabRename) -> ApiResult {
        let pos = self.target_tab(p.tab, p.workspace)?;
        let name = p.name.trim().to_string();
        let tab = self
            .session
            .state
            .tab_at_mut(pos)
            .ok_or_else(|| ApiError::new("not_found", "no such tab"))?;
        tab.name = (!name.is_empty()).then_some(name);
        let id = tab.no.to_string();
        self.request_render();
        now(json!({ "id": id }))
    }

    pub(crate) fn tab_focus(&mut self, p: TabTarget) -> ApiResult {
        let pos = self.target_tab(p.tab, p.workspace)?;
        self.session.state.select_workspace(pos.workspace);
        self.session.state.select_tab(pos.tab);
        self.request_render();
        now(self.tab_json(pos))
    }

    pub(crate) fn pane_no(&self, pane: PaneId) -> String {
        self.session
            .state
            .panes
            .get(&pane)
            .map(|p| p.no.to_string())
            .unwrap_or_default()
    }

    /// Everything a script wants to know about one pane.
    pub(crate) fn pane_json(&self, pane: PaneId) -> Option<Value> {
        let fg = self.foreground_pid(self.session.state.panes.get(&pane)?.terminal);
        let fg = fg.map(crate::pty::proc::describe);
        let row = self.pane_row(self.session.state.find_pane(pane)?, pane, fg)?;
        serde_json::to_value(row).ok()
    }

    /// One pane at `pos` (found by the caller: a listing walks the layout once rather
    /// than looking each pane up in it), with its foreground process as the caller read it.
    fn pane_row(&self, pos: PanePos, pane: PaneId, fg: Option<Foreground>) -> Option<PaneRow<'_>> {
        let ps = self.session.state.panes.get(&pane)?;
        let ws = &self.session.state.workspaces[pos.workspace];
        let tab = &ws.tabs[pos.tab];
        let term = self.session.state.terminals.get(&ps.terminal)?;
        let rt = self.session.runtimes.get(ps.terminal);
        let (rows, cols) = rt.map(|r| r.size).unwrap_or((0, 0));
        let focused = pos.workspace == self.session.state.active
            && pos.tab == ws.active
            && tab.focused == pane;
        Some(PaneRow {
            id: ps.no.to_string(),
            workspace: ws.no.to_string(),
            tab: tab.no.to_string(),
            title: view::terminal_title(&self.session.state, ps.terminal),
            label: ps.label.as_deref(),
            cwd: fg
                .as_ref()
                .and_then(|f| f.cwd.as_ref())
                .map(|c| c.display().to_string()),
            pid: rt.and_then(|r| r.pid),
            command: fg.as_ref().map(|f| f.argv.join(" ")),
            argv: &term.argv,
            rows,
            cols,
            focused,
            shown: self.session.shown.binary_search(&ps.terminal).is_ok(),
            mirrors: self.api.streams.mirrors_of(ps.terminal),
            zoomed: tab.zoomed && tab.focused == pane,
            agent: term.agent.as_deref(),
            agent_state: self.session.state.agent_state(pane),
            agent_error: term.agent_error.as_deref(),
            exited: term.exited.map(|e| match e {
                Some(code) => Exited::Code(code),
                None => Exited::Signal("signal"),
            }),
        })
    }

    pub(crate) fn pane_list(&mut self, p: PaneList) -> ApiResult {
        let foreground = self.refresh_agents();
        let tab_filter = match p.tab {
            None => None,
            Some(t) => Some(self.target_tab(Some(t), p.workspace)?),
        };
        let ws_filter = match p.workspace {
            None => None,
            Some(w) => Some(self.target_workspace(Some(w))?),
        };
        let listed: Vec<(PanePos, PaneId)> = self
            .session
            .state
            .all_panes()
            .into_iter()
            .filter(|&(pos, _)| {
                tab_filter.is_none_or(|t| t == pos) && ws_filter.is_none_or(|w| w == pos.workspace)
            })
            .collect();
        // Each listed pane's foreground process, read for all at once (in parallel),
        // through what the last listing kept of it (`pty::proc::Kept`) while descriptors
        // are plenty.
        let keep = crate::sys::nofile::has_room(2 * listed.len() as u64);
        let mut probes: Vec<Probe> = Vec::with_capacity(listed.len());
        // (Which row and terminal each probe is for.)
        let mut at: Vec<(usize, TerminalId)> = Vec::with_capacity(listed.len());
        for (i, (_, pane)) in listed.iter().enumerate() {
            let Some(p) = self.session.state.panes.get(pane) else {
                continue;
            };
            let Some(pid) = foreground.get(&p.terminal).copied().flatten() else {
                continue;
            };
            let kept = self
                .session
                .runtimes
                .get_mut(p.terminal)
                .and_then(|rt| rt.foreground_kept.take());
            probes.push(Probe::new(pid, kept, keep));
            at.push((i, p.terminal));
        }
        crate::pty::proc::describe_all(&mut probes);
        let mut fgs: Vec<Option<Foreground>> = vec![None; listed.len()];
        for ((i, tid), probe) in at.into_iter().zip(probes) {
            if let Some(rt) = self.session.runtimes.get_mut(tid) {
                rt.foreground_kept = probe.kept;
            }
            fgs[i] = probe.found;
        }
        // Written straight to JSON text, row by row (a list of 1,000 panes built as
        // values first spent most of its time making, writing and freeing them).
        let mut out = Vec::with_capacity(64 + 512 * listed.len());
        out.push(b'[');
        for ((pos, pane), fg) in listed.into_iter().zip(fgs) {
            let Some(row) = self.pane_row(pos, pane, fg) else {
                continue;
            };
            if out.len() > 1 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, &row)
                .map_err(|e| ApiError::new("internal", format!("pane list: {e}")))?;
        }
        out.push(b']');
        let text = String::from_utf8(out)
            .map_err(|e| ApiError::new("internal", format!("pane list: {e}")))?;
        Ok(super::Outcome::Json(text))
    }

    /// `agent.list`: every pane an agent runs in, in layout order, with what a script (or
    /// another agent) needs to find the one waiting; `state` keeps only those in it.
    pub(crate) fn agent_list(&mut self, p: AgentList) -> ApiResult {
        let want = p.state.as_deref();
        if let Some(w) = want.filter(|w| !super::agents::STATES.contains(w)) {
            return Err(ApiError::params(format!(
                "\"state\" must be one of {}, got {w:?}",
                super::agents::STATES.join(", ")
            )));
        }
        self.refresh_agents();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut items: Vec<Value> = self
            .session
            .state
            .all_panes()
            .into_iter()
            .filter_map(|(_, pane)| self.agent_json(pane, now_ms))
            .filter(|a| want.is_none_or(|w| a["state"] == w))
            .collect();
        if p.all_machines == Some(true) {
            items.extend(self.machine_agents(want));
        }
        now(Value::Array(items))
    }

    fn agent_json(&self, pane: PaneId, now_ms: u64) -> Option<Value> {
        let ps = self.session.state.panes.get(&pane)?;
        let term = self.session.state.terminals.get(&ps.terminal)?;
        let agent = term.agent.as_deref()?;
        let pos = self.session.state.find_pane(pane)?;
        let ws = &self.session.state.workspaces[pos.workspace];
        let tab = &ws.tabs[pos.tab];
        let fg = self
            .session
            .runtimes
            .get(ps.terminal)
            .and_then(|r| r.foreground());
        let since = term.agent_since_ms();
        let session = term.agent_session.as_ref();
        let (id, path) = match session {
            Some(crate::agent::SessionRef::Id(s)) => (Some(s), None),
            Some(crate::agent::SessionRef::Path(s)) => (None, Some(s)),
            None => (None, None),
        };
        Some(json!({
            "pane": ps.no.to_string(),
            "workspace": ws.no.to_string(),
            "tab": tab.no.to_string(),
            "agent": agent,
            "state": self.session.state.agent_state(pane),
            "since_ms": since,
            "for_secs": since.map(|t| now_ms.saturating_sub(t) / 1000),
            "session_id": id,
            "session_path": path,
            "cwd": fg.as_ref().and_then(|f| f.cwd.as_ref()).map(|c| c.display().to_string()),
            "pid": term.agent_pid,
            "title": view::terminal_title(&self.session.state, ps.terminal),
            "error": term.agent_error,
        }))
    }

    pub(crate) fn pane_get(&mut self, p: PaneTarget) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        if let Some(tid) = self.session.state.panes.get(&pane).map(|ps| ps.terminal) {
            self.refresh_agent(tid);
        }
        self.pane_json(pane)
            .map(super::Outcome::Now)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))
    }

    pub(crate) fn pane_split(&mut self, p: PaneSplit) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let dir = match p.direction.unwrap_or_default() {
            SplitDirection::Right => SplitDir::Right,
            SplitDirection::Down => SplitDir::Down,
        };
        let argv = p.command.unwrap_or_default().0;
        let cwd = match cwd_param(p.cwd)? {
            Some(c) => Some(c),
            None => self.pane_cwd(pane),
        };
        let new = self.split(Some(pane), dir, argv, cwd).map_err(spawn_err)?;
        now(json!({ "id": self.pane_no(new) }))
    }

    fn pane_cwd(&self, pane: PaneId) -> Option<std::path::PathBuf> {
        let tid = self.session.state.panes.get(&pane)?.terminal;
        self.session.runtimes.get(tid)?.foreground()?.cwd
    }

    pub(crate) fn pane_close(&mut self, p: PaneTarget) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let id = self.pane_no(pane);
        self.close_pane(pane);
        now(json!({ "closed": id }))
    }

    pub(crate) fn pane_focus(&mut self, p: PaneTarget) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        self.session.state.focus_pane(pane);
        self.request_render();
        now(json!({ "id": self.pane_no(pane) }))
    }

    pub(crate) fn pane_zoom(&mut self, p: PaneZoom) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let want = p.zoom;
        self.session.state.focus_pane(pane);
        let tab = self
            .session
            .state
            .active_tab_mut()
            .ok_or_else(|| ApiError::new("not_found", "no tab"))?;
        let z = want.unwrap_or(!tab.zoomed) && tab.layout.len() > 1;
        tab.zoomed = z;
        self.relayout();
        now(json!({ "id": self.pane_no(pane), "zoomed": z }))
    }

    pub(crate) fn pane_resize(&mut self, p: PaneResize) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let side = match p.direction {
            Edge::Left => Side::Left,
            Edge::Right => Side::Right,
            Edge::Up => Side::Up,
            Edge::Down => Side::Down,
        };
        let cells = p.cells.unwrap_or(1).min(u64::from(u16::MAX)) as u16;
        let area = self.session.pane_area();
        let pos = self
            .session
            .state
            .find_pane(pane)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))?;
        let moved = self
            .session
            .state
            .tab_at_mut(pos)
            .is_some_and(|t| t.layout.resize(area, pane, side, cells));
        self.relayout();
        now(json!({ "id": self.pane_no(pane), "resized": moved }))
    }

    pub(crate) fn pane_rename(&mut self, p: PaneRename) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let name = p.name.trim().to_string();
        if let Some(ps) = self.session.state.panes.get_mut(&pane) {
            ps.label = (!name.is_empty()).then_some(name);
        }
        self.request_render();
        now(json!({ "id": self.pane_no(pane) }))
    }
}
