//! Params of the `agent.*` methods (docs/agents.md).

use serde::{Deserialize, Serialize};

use crate::model::ids::PaneNo;

/// `agent.list`: every pane an agent runs in, or only those in `state`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentList {
    /// `working`, `blocked`, `idle` or `done`.
    pub state: Option<String>,
    /// The saved machines' agents too, each naming its machine.
    pub all_machines: Option<bool>,
}

/// `agent.report`: what an agent's hook says, from inside its pane (or from an agent's
/// server shared by panes, naming the turn by `cwd` and `prompt`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentReport {
    pub pane: Option<PaneNo>,
    /// Who reports: `herdr:<agent>` for herdr's own integrations.
    pub source: String,
    pub agent: String,
    pub session_id: Option<String>,
    pub session_path: Option<String>,
    /// `working`, `blocked`, `idle` or `done`.
    pub state: Option<String>,
    /// What went wrong, when an error ended the agent's turn.
    pub error: Option<String>,
    /// Increasing per source: an older report never overrides a newer one.
    pub seq: Option<u64>,
    pub cwd: Option<String>,
    pub prompt: Option<String>,
}
