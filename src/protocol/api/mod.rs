//! The API's requests as typed values: one [`Request`] variant per method, each carrying
//! its params struct (one file per area: `server`, `workspace`, `tab`, `pane`, `agent`).
//! The server decodes each line once into its id and a `Request` ([`decode`]); the CLI
//! builds the same values and sends them ([`encode`]). The wire is docs/api.md's:
//! `{"id":…,"method":"pane.split","params":{…}}`, params absent or null meaning `{}`.
//!
//! Invariants: decoding never panics, whatever the line; an error says the line is not
//! JSON (`parse_error`), not a request (`invalid_request`), names a method that does not
//! exist (`unknown_method`) or names the param that is wrong (`invalid_params`); params a
//! method does not know are ignored and a null param is as if it were absent, as they
//! always were. The variants and [`Request::METHODS`] come from one list, so they cannot
//! drift, and a test holds docs/api.md to it.

mod agent;
mod decode;
mod machine;
mod pane;
mod server;
mod tab;
mod values;
mod workspace;

pub use agent::{AgentList, AgentReport};
pub use machine::{MachineCall, MachineOpen, MachineTarget};
pub use pane::{
    Edge, PaneKeys, PaneList, PaneRead, PaneRename, PaneResize, PaneSend, PaneSplit, PaneStream,
    PaneSubmit, PaneTarget, PaneWait, PaneWrite, PaneZoom, SplitDirection,
};
pub use server::{LiveHandoff, NoParams, ServerRename};
pub use tab::{TabCreate, TabList, TabRename, TabTarget};
pub use values::{PublicId, Strings};
pub use workspace::{WorkspaceCreate, WorkspaceRename, WorkspaceTarget};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An API error: a stable machine-readable code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn params(message: impl Into<String>) -> ApiError {
        ApiError::new("invalid_params", message)
    }
}

/// Declares [`Request`] from the list of methods: each wire name once, giving the
/// variant's serde name, [`Request::METHODS`] and [`Request::method`] alike.
macro_rules! requests {
    ($($(#[$doc:meta])* $name:literal => $variant:ident($params:ty),)*) => {
        /// One API request, by method; its params are the variant's struct.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "method", content = "params")]
        pub enum Request {
            $($(#[$doc])* #[serde(rename = $name)] $variant($params),)*
        }

        impl Request {
            /// Every method's name, in the order of the list.
            pub const METHODS: &'static [&'static str] = &[$($name),*];

            /// The method's name on the wire.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Request::$variant(_) => $name,)*
                }
            }
        }
    };
}

requests! {
    "ping" => Ping(NoParams),
    "server.status" => ServerStatus(NoParams),
    "server.stop" => ServerStop(NoParams),
    /// Hands the session to a new server process (docs/handoff.md).
    "server.live_handoff" => LiveHandoff(LiveHandoff),
    /// Re-reads the config file and applies it (docs/api.md).
    "server.reload_config" => ReloadConfig(NoParams),
    /// Renames the running session (docs/api.md).
    "server.rename" => ServerRename(ServerRename),
    /// From now on the connection also receives event lines.
    "events.subscribe" => EventsSubscribe(NoParams),
    "workspace.list" => WorkspaceList(NoParams),
    "workspace.create" => WorkspaceCreate(WorkspaceCreate),
    "workspace.close" => WorkspaceClose(WorkspaceTarget),
    "workspace.rename" => WorkspaceRename(WorkspaceRename),
    "workspace.focus" => WorkspaceFocus(WorkspaceTarget),
    "tab.list" => TabList(TabList),
    "tab.create" => TabCreate(TabCreate),
    "tab.close" => TabClose(TabTarget),
    "tab.rename" => TabRename(TabRename),
    "tab.focus" => TabFocus(TabTarget),
    "pane.list" => PaneList(PaneList),
    "pane.get" => PaneGet(PaneTarget),
    "pane.split" => PaneSplit(PaneSplit),
    "pane.close" => PaneClose(PaneTarget),
    "pane.focus" => PaneFocus(PaneTarget),
    "pane.zoom" => PaneZoom(PaneZoom),
    "pane.resize" => PaneResize(PaneResize),
    "pane.rename" => PaneRename(PaneRename),
    "pane.send" => PaneSend(PaneSend),
    /// Bytes as a terminal sends them, base64 (a mirror's keys and mouse).
    "pane.write" => PaneWrite(PaneWrite),
    /// The pane's output mirrored to this connection (`pane.data` lines).
    "pane.stream" => PaneStream(PaneStream),
    /// What copy mode copied last, pasted into the pane (tmux's paste-buffer).
    "pane.paste" => PanePaste(PaneTarget),
    "pane.keys" => PaneKeys(PaneKeys),
    "pane.submit" => PaneSubmit(PaneSubmit),
    "pane.read" => PaneRead(PaneRead),
    /// What the any-agent classifier reads of a pane.
    "pane.signals" => PaneSignals(PaneTarget),
    "pane.wait" => PaneWait(PaneWait),
    "agent.list" => AgentList(AgentList),
    /// What an agent's hook says it is doing.
    "agent.report" => AgentReport(AgentReport),
    /// The saved machines and their links' states.
    "machine.list" => MachineList(NoParams),
    /// Reads the saved machines again (after `herdr machine add`, …).
    "machine.reload" => MachineReload(NoParams),
    /// Makes a machine's link connect again now.
    "machine.reconnect" => MachineReconnect(MachineTarget),
    /// An API request for a machine's server, through its link.
    "machine.call" => MachineCall(MachineCall),
    /// One of a machine's panes, mirrored in a new tab here.
    "machine.open" => MachineOpen(MachineOpen),
}

/// Splits a request line into its id and its request; on failure, the id to answer (if
/// one could be read) and the error.
pub fn decode(line: &str) -> Result<(Value, Request), (Value, ApiError)> {
    let mut request: Value = serde_json::from_str(line).map_err(|e| {
        (
            Value::Null,
            ApiError::new("parse_error", format!("request is not JSON: {e}")),
        )
    })?;
    let Some(fields) = request.as_object_mut() else {
        return Err((
            Value::Null,
            ApiError::new("invalid_request", "a request must be a JSON object"),
        ));
    };
    let id = fields.remove("id").unwrap_or(Value::Null);
    // Taken out, not copied: params may hold a megabyte of text to send.
    let params = fields.remove("params");
    let Some(method) = fields.get("method").and_then(Value::as_str) else {
        return Err((
            id,
            ApiError::new("invalid_request", "missing \"method\" (a string)"),
        ));
    };
    let params = match params {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err((id, ApiError::params("\"params\" must be an object"))),
    };
    if !Request::METHODS.contains(&method) {
        let err = ApiError::new(
            "unknown_method",
            format!("unknown method {method:?}; see docs/api.md for the list"),
        );
        return Err((id, err));
    }
    match decode::request(method, &params) {
        Ok(request) => Ok((id, request)),
        Err(e) => Err((id, e)),
    }
}

/// The line (without its newline) that sends `request` with `id`. Params left unset are
/// left out rather than sent as null: an older server took a null for a wrong type in
/// some params (`server.live_handoff`'s `binary`).
pub fn encode(id: u64, request: &Request) -> Result<String, serde_json::Error> {
    let mut line = Map::new();
    line.insert("id".into(), Value::from(id));
    if let Value::Object(fields) = serde_json::to_value(request)? {
        for (key, mut value) in fields {
            if let Value::Object(params) = &mut value {
                params.retain(|_, v| !v.is_null());
            }
            line.insert(key, value);
        }
    }
    Ok(Value::Object(line).to_string())
}

#[cfg(test)]
mod tests;
