//! Params of the `workspace.*` methods.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::ids::WorkspaceNo;

/// `workspace.create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceCreate {
    /// Default: the folder's name.
    pub name: Option<String>,
    /// An existing absolute folder.
    pub cwd: Option<PathBuf>,
}

/// `workspace.close`, `workspace.focus`: the workspace, else the active one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceTarget {
    pub workspace: Option<WorkspaceNo>,
}

/// `workspace.rename`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceRename {
    pub workspace: Option<WorkspaceNo>,
    pub name: String,
}
