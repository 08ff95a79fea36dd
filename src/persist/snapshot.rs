//! The snapshot types: what a saved session looks like on disk. They are their own types
//! (DTOs), not a serialisation of live state, so the live state can change shape without
//! breaking files already on users' disks.
//!
//! `SNAPSHOT_VERSION` is a one-way gate: older versions are migrated on load; a file from a
//! newer version is refused (and must never be written over by this binary).
//!
//! Version history:
//! * 1 — panes lived inside the layout leaves; no public ids, counters or generation.
//! * 2 — public ids and their counters, labels, per-pane launch argv, restorable command,
//!   agent fields, and a generation shared with the history file.

use serde::{Deserialize, Serialize};

pub const SNAPSHOT_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSnapshot {
    pub version: u32,
    /// Incremented on every save; the history file carries the same number, so a reader
    /// can tell whether the two belong together.
    pub generation: u64,
    /// Unix seconds.
    pub saved_at: u64,
    pub counters: Counters,
    pub active_workspace: usize,
    pub workspaces: Vec<WorkspaceSnap>,
}

/// The last public number handed out of each kind (never reused after a restore either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    pub workspace: u32,
    pub tab: u32,
    pub pane: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceSnap {
    pub id: u32,
    pub name: String,
    pub active_tab: usize,
    pub tabs: Vec<TabSnap>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TabSnap {
    pub id: u32,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub zoomed: bool,
    /// Public number of the focused pane.
    pub focused: u32,
    pub layout: LayoutSnap,
    pub panes: Vec<PaneSnap>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirSnap {
    Right,
    Down,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LayoutSnap {
    Pane {
        pane: u32,
    },
    Split {
        split: DirSnap,
        ratio: f32,
        first: Box<LayoutSnap>,
        second: Box<LayoutSnap>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentSessionRef {
    Id(String),
    Path(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaneSnap {
    pub id: u32,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// How the pane was started; empty = the default shell.
    #[serde(default)]
    pub argv: Vec<String>,
    /// The foreground command, saved only when it is on the `restore_commands` list.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub agent_session: Option<AgentSessionRef>,
    /// Who reported the session (only `herdr:<agent>` ever leads to a resume).
    #[serde(default)]
    pub agent_source: Option<String>,
    /// The agent's launch flags that its resume command keeps (`agent::kept_flags`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_flags: Vec<String>,
}

/// session-history.json: what each pane showed, for presentation after a restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistorySnapshot {
    pub version: u32,
    /// Must equal the structure file's generation, or the history is ignored.
    pub generation: u64,
    pub panes: Vec<PaneHistory>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaneHistory {
    pub id: u32,
    /// Number of lines in `ansi`.
    pub lines: usize,
    /// Lines joined with CRLF, colours as SGR sequences.
    pub ansi: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoadError {
    #[error("it was written by a newer herdr (snapshot version {found}, this herdr reads up to {SNAPSHOT_VERSION})")]
    /// `found`: the version as the file wrote it (it may not fit any integer type).
    Newer { found: String },
    #[error("it is not a valid session file: {0}")]
    Corrupt(String),
}

impl LayoutSnap {
    pub fn panes(&self) -> Vec<u32> {
        match self {
            LayoutSnap::Pane { pane } => vec![*pane],
            LayoutSnap::Split { first, second, .. } => {
                let mut v = first.panes();
                v.extend(second.panes());
                v
            }
        }
    }
}

/// Parses a session file of any known version into the current one.
pub fn parse(bytes: &[u8]) -> Result<SessionSnapshot, LoadError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| LoadError::Corrupt(e.to_string()))?;
    let Some(version) = value.get("version").and_then(|v| v.as_number()).cloned() else {
        return Err(LoadError::Corrupt("no \"version\" number".into()));
    };
    // Any number above ours may be a future herdr's file, however large (JSON numbers
    // beyond u64 arrive as floats): it is kept and never written over, not moved aside.
    let newer = match version.as_u64() {
        Some(v) => v > u64::from(SNAPSHOT_VERSION),
        None => version
            .as_f64()
            .is_some_and(|f| f > f64::from(SNAPSHOT_VERSION)),
    };
    if newer {
        return Err(LoadError::Newer {
            found: version.to_string(),
        });
    }
    let snap = match version.as_u64() {
        Some(1) => {
            let v1: v1::SessionV1 =
                serde_json::from_value(value).map_err(|e| LoadError::Corrupt(e.to_string()))?;
            v1::migrate(v1)
        }
        Some(2) => serde_json::from_value(value).map_err(|e| LoadError::Corrupt(e.to_string()))?,
        _ => return Err(LoadError::Corrupt(format!("unknown version {version}"))),
    };
    validate(&snap)?;
    Ok(snap)
}

/// Reads only the version of a file (to decide whether we may write over it).
pub fn version_of(bytes: &[u8]) -> Option<u32> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    value
        .get("version")?
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
}

/// Checks what the types cannot: every layout names exactly its tab's panes, ids are
/// unique, indexes are in range, ratios are sane, counters cover every id.
pub fn validate(s: &SessionSnapshot) -> Result<(), LoadError> {
    let bad = |m: String| Err(LoadError::Corrupt(m));
    if !s.workspaces.is_empty() && s.active_workspace >= s.workspaces.len() {
        return bad(format!(
            "active workspace {} out of range",
            s.active_workspace
        ));
    }
    let mut seen_ws = std::collections::HashSet::new();
    let mut seen_tab = std::collections::HashSet::new();
    let mut seen_pane = std::collections::HashSet::new();
    for ws in &s.workspaces {
        if !seen_ws.insert(ws.id) || ws.id > s.counters.workspace {
            return bad(format!(
                "workspace id {} repeated or above its counter",
                ws.id
            ));
        }
        if ws.tabs.is_empty() || ws.active_tab >= ws.tabs.len() {
            return bad(format!(
                "workspace w{} has no tabs or a bad active tab",
                ws.id
            ));
        }
        for tab in &ws.tabs {
            if !seen_tab.insert(tab.id) || tab.id > s.counters.tab {
                return bad(format!("tab id {} repeated or above its counter", tab.id));
            }
            let mut in_layout = tab.layout.panes();
            let mut listed: Vec<u32> = tab.panes.iter().map(|p| p.id).collect();
            in_layout.sort_unstable();
            listed.sort_unstable();
            if in_layout != listed || in_layout.is_empty() {
                return bad(format!("tab t{}: layout and pane list disagree", tab.id));
            }
            if !in_layout.contains(&tab.focused) {
                return bad(format!(
                    "tab t{}: focused pane p{} is not in it",
                    tab.id, tab.focused
                ));
            }
            check_ratios(&tab.layout)?;
            for p in &tab.panes {
                if !seen_pane.insert(p.id) || p.id > s.counters.pane {
                    return bad(format!("pane id {} repeated or above its counter", p.id));
                }
            }
        }
    }
    Ok(())
}

fn check_ratios(l: &LayoutSnap) -> Result<(), LoadError> {
    if let LayoutSnap::Split {
        ratio,
        first,
        second,
        ..
    } = l
    {
        if !(ratio.is_finite() && *ratio > 0.0 && *ratio < 1.0) {
            return Err(LoadError::Corrupt(format!(
                "split ratio {ratio} out of (0, 1)"
            )));
        }
        check_ratios(first)?;
        check_ratios(second)?;
    }
    Ok(())
}

/// The first schema, kept only to read old files.
mod v1 {
    use super::*;

    #[derive(Deserialize)]
    pub struct SessionV1 {
        #[serde(default)]
        pub active: usize,
        pub workspaces: Vec<WorkspaceV1>,
    }

    #[derive(Deserialize)]
    pub struct WorkspaceV1 {
        pub name: String,
        #[serde(default)]
        pub active_tab: usize,
        pub tabs: Vec<TabV1>,
    }

    #[derive(Deserialize)]
    pub struct TabV1 {
        #[serde(default)]
        pub zoomed: bool,
        /// Index of the focused pane in layout order.
        #[serde(default)]
        pub focused: usize,
        pub layout: NodeV1,
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub enum NodeV1 {
        // Split first: untagged enums take the first variant that fits, and a leaf's only
        // field is optional, so every object would fit `Pane`.
        Split {
            split: DirSnap,
            ratio: f32,
            first: Box<NodeV1>,
            second: Box<NodeV1>,
        },
        Pane {
            cwd: Option<String>,
        },
    }

    /// Numbers workspaces, tabs and panes in order, as a v2 writer would have.
    pub fn migrate(old: SessionV1) -> SessionSnapshot {
        let mut c = Counters::default();
        let mut workspaces = Vec::new();
        for ws in old.workspaces {
            c.workspace += 1;
            let mut tabs = Vec::new();
            for tab in ws.tabs {
                c.tab += 1;
                let mut panes = Vec::new();
                let layout = convert(tab.layout, &mut c, &mut panes);
                let focused = panes
                    .get(tab.focused)
                    .or(panes.first())
                    .map(|p| p.id)
                    .unwrap_or(0);
                tabs.push(TabSnap {
                    id: c.tab,
                    name: None,
                    zoomed: tab.zoomed,
                    focused,
                    layout,
                    panes,
                });
            }
            let active_tab = ws.active_tab.min(tabs.len().saturating_sub(1));
            workspaces.push(WorkspaceSnap {
                id: c.workspace,
                name: ws.name,
                active_tab,
                tabs,
            });
        }
        SessionSnapshot {
            version: SNAPSHOT_VERSION,
            generation: 0,
            saved_at: 0,
            counters: c,
            active_workspace: old.active.min(workspaces.len().saturating_sub(1)),
            workspaces,
        }
    }

    fn convert(node: NodeV1, c: &mut Counters, panes: &mut Vec<PaneSnap>) -> LayoutSnap {
        match node {
            NodeV1::Pane { cwd } => {
                c.pane += 1;
                panes.push(PaneSnap {
                    id: c.pane,
                    label: None,
                    cwd,
                    argv: vec![],
                    command: None,
                    agent: None,
                    agent_session: None,
                    agent_source: None,
                    agent_flags: Vec::new(),
                });
                LayoutSnap::Pane { pane: c.pane }
            }
            NodeV1::Split {
                split,
                ratio,
                first,
                second,
            } => LayoutSnap::Split {
                split,
                ratio,
                first: Box::new(convert(*first, c, panes)),
                second: Box::new(convert(*second, c, panes)),
            },
        }
    }
}

#[cfg(test)]
mod tests;
