//! The session as a snapshot: what is saved to disk and what a live handoff carries. A
//! pure reading of [`Session`] (with `live`, also of the processes' /proc facts).

use crate::agent::SessionRef;
use crate::model::ids::PaneId;
use crate::model::layout::{LayoutTree, SplitDir};
use crate::persist::snapshot::{
    AgentSessionRef, Counters, DirSnap, LayoutSnap, PaneSnap, SessionSnapshot, TabSnap,
    WorkspaceSnap, SNAPSHOT_VERSION,
};
use crate::server::Session;

impl Session {
    /// The session as a snapshot. `live` adds what only the processes know (cwd, the
    /// foreground command); without it the capture is cheap and pure.
    pub(crate) fn capture(&self, live: bool) -> SessionSnapshot {
        let (w, t, p) = self.state.counters();
        let no = |pane: PaneId| self.state.panes.get(&pane).map(|ps| ps.no.0).unwrap_or(0);
        let workspaces = self
            .state
            .workspaces
            .iter()
            .map(|ws| WorkspaceSnap {
                id: ws.no.0,
                name: ws.name.clone(),
                active_tab: ws.active,
                tabs: ws
                    .tabs
                    .iter()
                    .map(|tab| TabSnap {
                        id: tab.no.0,
                        name: tab.name.clone(),
                        zoomed: tab.zoomed,
                        focused: no(tab.focused),
                        layout: tree_to_snap(&tab.layout.to_tree(), &no),
                        panes: tab
                            .layout
                            .panes()
                            .iter()
                            .map(|p| self.pane_snap(*p, live))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        SessionSnapshot {
            version: SNAPSHOT_VERSION,
            generation: 0,
            saved_at: 0,
            counters: Counters {
                workspace: w,
                tab: t,
                pane: p,
            },
            active_workspace: self.state.active,
            workspaces,
        }
    }

    fn pane_snap(&self, pane: PaneId, live: bool) -> PaneSnap {
        let ps = self.state.panes.get(&pane);
        let term = ps.and_then(|ps| self.state.terminals.get(&ps.terminal));
        let mut cwd = term
            .and_then(|t| t.cwd.as_ref())
            .map(|c| c.display().to_string());
        let mut command = None;
        if live {
            let rt = ps.and_then(|ps| self.runtimes.get(ps.terminal));
            if let Some(fg) = rt.and_then(|rt| rt.pid.map(|pid| (pid, rt.foreground()))) {
                let (leader, fg) = fg;
                if let Some(fg) = fg {
                    if let Some(c) = &fg.cwd {
                        cwd = Some(c.display().to_string());
                    }
                    if fg.pid != leader as i32
                        && super::persist::restorable(&fg.argv, &self.config.restore_commands)
                    {
                        command = Some(fg.argv.clone());
                    }
                }
            }
        }
        PaneSnap {
            id: ps.map(|p| p.no.0).unwrap_or(0),
            label: ps.and_then(|p| p.label.clone()),
            cwd,
            argv: term.map(|t| t.argv.clone()).unwrap_or_default(),
            command,
            agent: term.and_then(|t| t.agent.clone()),
            agent_session: term
                .and_then(|t| t.agent_session.as_ref())
                .map(|r| match r {
                    SessionRef::Id(s) => AgentSessionRef::Id(s.clone()),
                    SessionRef::Path(s) => AgentSessionRef::Path(s.clone()),
                }),
            agent_source: term.and_then(|t| t.agent_source.clone()),
            agent_flags: term
                .and_then(|t| Some(crate::agent::kept_flags(t.agent.as_deref()?, &t.agent_argv)))
                .unwrap_or_default(),
        }
    }
}

fn tree_to_snap(tree: &LayoutTree, no: &dyn Fn(PaneId) -> u32) -> LayoutSnap {
    match tree {
        LayoutTree::Pane(p) => LayoutSnap::Pane { pane: no(*p) },
        LayoutTree::Split {
            dir,
            ratio,
            first,
            second,
        } => LayoutSnap::Split {
            split: match dir {
                SplitDir::Right => DirSnap::Right,
                SplitDir::Down => DirSnap::Down,
            },
            ratio: *ratio,
            first: Box::new(tree_to_snap(first, no)),
            second: Box::new(tree_to_snap(second, no)),
        },
    }
}
