//! Params of the `machine.*` methods (docs/remote.md, "Machines").

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `machine.reconnect`: one saved machine, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineTarget {
    pub machine: String,
}

/// `machine.call`: an API request (`{"method":…,"params":…}`) for a machine's server,
/// sent through its link; the answer is that server's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineCall {
    pub machine: String,
    pub request: Value,
}

/// `machine.open`: one of a machine's panes (default: the one focused there), or each
/// pane of one of its tabs, in a new tab here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineOpen {
    pub machine: String,
    pub pane: Option<crate::model::ids::PaneNo>,
    pub tab: Option<crate::model::ids::TabNo>,
}
