//! Rebuilding a session's workspaces, tabs, layouts and public ids from a snapshot —
//! after a restart (fresh shells) and after a live handoff (imported terminals).

use std::collections::HashMap;

use ratatui::layout::Rect;

use super::persist::snap_to_tree;
use super::Server;
use crate::model::ids::{PaneId, PaneNo, TabNo, WorkspaceNo};
use crate::model::layout::Layout;
use crate::model::{PaneState, Tab, TerminalState, Workspace};
use crate::persist::snapshot::{PaneSnap, SessionSnapshot};
use crate::pty::TerminalRuntime;

impl Server {
    /// Rebuilds workspaces, tabs, layouts and public ids from a snapshot; `make` provides
    /// each pane's terminal (a fresh shell on restore, an imported one on a handoff). A
    /// pane it cannot make leaves the layout; the rest stays usable.
    pub(crate) fn rebuild(
        &mut self,
        snap: &SessionSnapshot,
        make: &mut MakeTerminal,
    ) -> Vec<String> {
        let mut notes = Vec::new();
        self.session.state.restore_counters((
            snap.counters.workspace,
            snap.counters.tab,
            snap.counters.pane,
        ));
        let area = self.session.pane_area();
        for ws in &snap.workspaces {
            let mut tabs = Vec::new();
            let mut panes = Vec::new();
            for tab in &ws.tabs {
                let ids: HashMap<u32, PaneId> = tab
                    .panes
                    .iter()
                    .map(|p| (p.id, self.session.state.alloc_pane_id()))
                    .collect();
                let Some(layout) =
                    snap_to_tree(&tab.layout, &ids).and_then(|t| Layout::from_tree(t).ok())
                else {
                    notes.push(format!(
                        "tab t{} had an unusable layout and was skipped",
                        tab.id
                    ));
                    continue;
                };
                let geometry: HashMap<PaneId, ratatui::layout::Rect> =
                    layout.geometry(area).into_iter().collect();
                let mut made = Vec::new();
                for ps in &tab.panes {
                    let Some(&pid) = ids.get(&ps.id) else {
                        continue;
                    };
                    let rect = geometry.get(&pid).copied().unwrap_or(area);
                    match make(self, ps, rect, &mut notes) {
                        Ok((term, rt)) => {
                            let state = PaneState {
                                no: PaneNo(ps.id),
                                terminal: term.id,
                                label: ps.label.clone(),
                                seen: true,
                                bell: false,
                            };
                            self.session.runtimes.insert(term.id, rt);
                            made.push((pid, state, term));
                        }
                        Err(e) => notes.push(format!("p{}: {e}", ps.id)),
                    }
                }
                let mut layout = layout;
                for pid in ids.values() {
                    if !made.iter().any(|(p, _, _)| p == pid) && layout.len() > 1 {
                        layout.remove(*pid);
                    }
                }
                if made.is_empty() {
                    continue;
                }
                let focused = ids
                    .get(&tab.focused)
                    .copied()
                    .filter(|f| layout.contains(*f))
                    .unwrap_or_else(|| layout.first());
                tabs.push(Tab {
                    no: TabNo(tab.id),
                    name: tab.name.clone(),
                    layout,
                    focused,
                    last: None,
                    zoomed: tab.zoomed,
                });
                panes.extend(made);
            }
            if tabs.is_empty() {
                continue;
            }
            let active = ws.active_tab.min(tabs.len() - 1);
            self.session.state.insert_restored(
                Workspace {
                    no: WorkspaceNo(ws.id),
                    name: ws.name.clone(),
                    tabs,
                    active,
                },
                panes,
            );
        }
        self.session.state.active = snap
            .active_workspace
            .min(self.session.state.workspaces.len().saturating_sub(1));
        self.relayout();
        if let Some(p) = self.persist.as_mut() {
            p.last_structure = None;
        }
        notes
    }
}

/// Makes one pane's terminal for [`Server::rebuild`]; may add notes for the user.
pub(crate) type MakeTerminal<'a> = dyn FnMut(
        &mut Server,
        &PaneSnap,
        Rect,
        &mut Vec<String>,
    ) -> Result<(TerminalState, TerminalRuntime), PaneStartError>
    + 'a;

/// Why one pane of a rebuilt session has no terminal: said in the notes, the pane left
/// out, the rest of the session rebuilt.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PaneStartError {
    /// A restore: its shell did not start.
    #[error("could not start a shell: {0}")]
    Shell(super::panes::PaneError),
    // A live handoff's: what came over for it does not make a terminal.
    #[error("no terminal was handed over for it")]
    NotHandedOver,
    #[error("no descriptor for it")]
    NoDescriptor,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("its terminal's session is {session}, not its program's pid {pid}")]
    NotItsProgram { session: String, pid: i32 },
    #[error("cannot watch its program (pid {pid}): {cause}")]
    NoWatch { pid: i32, cause: std::io::Error },
}
