//! Params of the `tab.*` methods.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::ids::{TabNo, WorkspaceNo};

/// `tab.list`: the tabs of one workspace, else of all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabList {
    pub workspace: Option<WorkspaceNo>,
}

/// `tab.create`: a tab in the workspace (else the active one), focused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabCreate {
    pub workspace: Option<WorkspaceNo>,
    /// An existing absolute folder.
    pub cwd: Option<PathBuf>,
    pub name: Option<String>,
}

/// `tab.close`, `tab.focus`: the tab, else the active tab of the workspace (else of the
/// active one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabTarget {
    pub tab: Option<TabNo>,
    pub workspace: Option<WorkspaceNo>,
}

/// `tab.rename`: an empty name clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabRename {
    pub tab: Option<TabNo>,
    pub workspace: Option<WorkspaceNo>,
    pub name: String,
}
