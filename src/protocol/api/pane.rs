//! Params of the `pane.*` methods. Every `pane` param is the pane to act on, else the
//! focused one.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::Strings;
use crate::model::ids::{PaneNo, TabNo, WorkspaceNo};

/// `pane.list`: filters, both optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneList {
    pub workspace: Option<WorkspaceNo>,
    pub tab: Option<TabNo>,
}

/// `pane.get`, `pane.close`, `pane.focus`, `pane.signals`: the pane alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneTarget {
    pub pane: Option<PaneNo>,
}

/// Where `pane.split` puts the new pane.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitDirection {
    #[default]
    Right,
    Down,
}

/// `pane.split`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneSplit {
    pub pane: Option<PaneNo>,
    /// Default: right.
    pub direction: Option<SplitDirection>,
    /// An existing absolute folder; default: the split pane's.
    pub cwd: Option<PathBuf>,
    /// The program and its arguments; default: the user's shell.
    pub command: Option<Strings>,
}

/// `pane.zoom`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneZoom {
    pub pane: Option<PaneNo>,
    /// Default: toggles.
    pub zoom: Option<bool>,
}

/// The border `pane.resize` moves outward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Edge {
    Left,
    Right,
    Up,
    Down,
}

/// `pane.resize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneResize {
    pub pane: Option<PaneNo>,
    pub direction: Edge,
    /// Default: 1.
    pub cells: Option<u64>,
}

/// `pane.rename`: an empty name clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneRename {
    pub pane: Option<PaneNo>,
    pub name: String,
}

/// `pane.send`: text as typed, no Enter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneSend {
    pub pane: Option<PaneNo>,
    pub text: String,
}

/// `pane.write`: bytes as a terminal sends them (keys encoded, mouse reports), base64.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneWrite {
    pub pane: Option<PaneNo>,
    pub data: String,
}

/// `pane.stream`: the pane mirrored to this connection at this size (again on the same
/// connection: a new size, or paused or not).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneStream {
    pub pane: Option<PaneNo>,
    pub rows: u16,
    pub cols: u16,
    /// Nobody looks at the mirror now: what the program prints is held (bounded) until
    /// it is streamed again without this.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Where a mirror that streamed this pane before stands (`{"run":…,"at":…}` of its
    /// last `pane.data`): only what came since is sent, if that is still kept.
    pub resume: Option<serde_json::Value>,
}

/// `pane.keys`: named keys (`Enter`, `C-c`, `Up`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneKeys {
    pub pane: Option<PaneNo>,
    pub keys: Strings,
}

/// `pane.submit`: text, a pause, Enter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneSubmit {
    pub pane: Option<PaneNo>,
    pub text: String,
    /// The pause before Enter; default 80, at most 10000.
    pub delay_ms: Option<u64>,
}

/// `pane.read`: the visible screen, or the last `lines` lines with scrollback.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneRead {
    pub pane: Option<PaneNo>,
    pub lines: Option<u64>,
    /// Keep colours and attributes as SGR sequences.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ansi: bool,
}

/// `pane.wait`: one of `output`, `exit`, `agent_state`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneWait {
    pub pane: Option<PaneNo>,
    /// A regex; `^` and `$` match at line starts and ends.
    pub output: Option<String>,
    /// Until the program ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exit: bool,
    pub agent_state: Option<String>,
    pub timeout_ms: Option<u64>,
}
