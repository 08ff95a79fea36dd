//! Params of the server's own methods: `ping`, `server.*` and `events.subscribe`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The params of a method that takes none (any given are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoParams {}

/// `server.live_handoff`: hand the session to a new server process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveHandoff {
    /// The new binary, an absolute path; default: the file now at the server's own path.
    pub binary: Option<PathBuf>,
    /// Refuse a binary that reports another version.
    pub expected_version: Option<String>,
    /// Refuse a binary that speaks another protocol.
    pub expected_protocol: Option<u32>,
}

/// `server.rename`: the session's new name (tmux's rename-session).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerRename {
    pub name: String,
}
