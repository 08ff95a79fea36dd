//! Resolving the public ids a request names (`w1`, `t2`, `p3`, already parsed by
//! `protocol::api`) to places in the state; an id left out means the focused one.

use super::ApiError;
use crate::model::ids::{PaneId, PaneNo, TabNo, WorkspaceNo};
use crate::model::state::PanePos;
use crate::server::Server;

fn not_found(kind: &str, no: impl std::fmt::Display) -> ApiError {
    ApiError::new("not_found", format!("no {kind} {no} in this session"))
}

impl Server {
    /// The pane named `pane`, else the focused pane.
    pub(crate) fn target_pane(&self, pane: Option<PaneNo>) -> Result<PaneId, ApiError> {
        match pane {
            None => self
                .session
                .state
                .focused_pane()
                .ok_or_else(|| ApiError::new("not_found", "the session has no pane")),
            Some(no) => self
                .session
                .state
                .panes
                .iter()
                .find(|(_, ps)| ps.no == no)
                .map(|(id, _)| *id)
                .ok_or_else(|| not_found("pane", no)),
        }
    }

    /// The workspace named `workspace` (index into the list), else the active one.
    pub(crate) fn target_workspace(
        &self,
        workspace: Option<WorkspaceNo>,
    ) -> Result<usize, ApiError> {
        match workspace {
            None => {
                if self.session.state.workspaces.is_empty() {
                    Err(ApiError::new("not_found", "the session has no workspace"))
                } else {
                    Ok(self.session.state.active)
                }
            }
            Some(no) => self
                .session
                .state
                .workspaces
                .iter()
                .position(|w| w.no == no)
                .ok_or_else(|| not_found("workspace", no)),
        }
    }

    /// The tab named `tab`, else the active tab of `workspace` (else of the active one).
    pub(crate) fn target_tab(
        &self,
        tab: Option<TabNo>,
        workspace: Option<WorkspaceNo>,
    ) -> Result<PanePos, ApiError> {
        match tab {
            None => {
                let w = self.target_workspace(workspace)?;
                Ok(PanePos {
                    workspace: w,
                    tab: self.session.state.workspaces[w].active,
                })
            }
            Some(no) => {
                for (wi, ws) in self.session.state.workspaces.iter().enumerate() {
                    if let Some(ti) = ws.tabs.iter().position(|t| t.no == no) {
                        return Ok(PanePos {
                            workspace: wi,
                            tab: ti,
                        });
                    }
                }
                Err(not_found("tab", no))
            }
        }
    }
}
