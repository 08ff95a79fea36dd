//! The JSON API served to connections whose hello says `"role":"api"`: one request object
//! per line (`{"id":…, "method":…, "params":{…}}`), one reply per line with the same id and
//! either `result` or `error: {code, message}`; subscribers also receive event lines
//! (`{"event":…, …}`). Each line is decoded once into its id and a typed request
//! (`protocol::api`), which `dispatch` matches once; a malformed request gets an error
//! reply and never affects another connection. A peer that stops reading is disconnected once its queue is full, so
//! server memory stays bounded.

mod agent_report;
mod agent_route;
mod agents;
mod conns;
mod events;
mod handoff;
mod io;
mod layout;
mod sampling;
mod streams;
mod targets;
mod waits;

use std::collections::BTreeMap;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::conn::{ApiWriter, API_QUEUE_TOTAL_BYTES, MAX_API_REPLY};
use super::{ClientId, Server};
use crate::model::ids::TerminalId;
use crate::protocol::api::Request;
use crate::protocol::{version, PROTOCOL_VERSION};

pub use crate::protocol::api::ApiError;

pub(crate) use agents::Activity;
pub use events::Summary;
pub(crate) use sampling::Sampling;
pub(crate) use waits::PendingWait;

/// `pane.output` is announced at most this often per pane (leading and trailing edge).
const ACTIVITY_INTERVAL: Duration = Duration::from_millis(100);

/// What a method produced: a result now, or a reply that will be sent later (a wait).
pub enum Outcome {
    Now(Value),
    /// A result now, already written as JSON text (a long list, made without values).
    Json(String),
    Later,
}

pub type ApiResult = Result<Outcome, ApiError>;

pub fn now(v: Value) -> ApiResult {
    Ok(Outcome::Now(v))
}

pub(crate) struct ApiConn {
    writer: ApiWriter,
    subscribed: bool,
    /// The peer sent its last request (its read side ended); the connection stays until
    /// its pending waits are answered, as `printf … | nc -N` style scripts expect.
    draining: bool,
    peer_pid: i32,
}

#[derive(Default)]
pub(crate) struct ApiState {
    conns: BTreeMap<ClientId, ApiConn>,
    pub waits: Vec<PendingWait>,
    /// Per terminal with output waits: its lines (hashed) when they were last checked.
    wait_lines: BTreeMap<TerminalId, Vec<u64>>,
    /// The structure as last announced to subscribers.
    last: Option<Summary>,
    /// Per terminal: when `pane.output` was last announced, and whether more output came
    /// since (announced when the interval has passed).
    activity: BTreeMap<TerminalId, (Instant, bool)>,
    /// Replies owed to a connection by another part (calls forwarded to a machine), by
    /// number: like a wait, each keeps a connection that stopped writing until it is given.
    owed: BTreeMap<ClientId, usize>,
    /// Panes mirrored to connections (`pane.stream`).
    pub(crate) streams: streams::Streams,
}

/// The error for a reply that finds the budget of queued replies in all spent.
fn budget_spent() -> ApiError {
    ApiError::new(
        "busy",
        format!(
            "the server's {} MiB for replies in all is taken by replies other connections \
             have not read yet; retry in a moment, or ask for less",
            API_QUEUE_TOTAL_BYTES >> 20
        ),
    )
}

/// The error for a reply of `bytes` bytes, over [`MAX_API_REPLY`]; `lines`: how many
/// lines the request asked for, when it did, so the message can say how many would do.
pub fn too_large_reply(bytes: usize, lines: Option<usize>) -> ApiError {
    let limit = MAX_API_REPLY >> 20;
    let size = bytes.div_ceil(1 << 20);
    let advice = match lines {
        // Proportionally fewer, with a margin for lines longer than the average.
        Some(n) => {
            let fit = (n as u128 * MAX_API_REPLY as u128 * 9 / 10 / bytes.max(1) as u128) as usize;
            format!("ask for fewer lines: at most about {fit} (\"lines\": {fit}, or --lines {fit})")
        }
        None => "ask for less".to_string(),
    };
    ApiError::new(
        "too_large",
        format!("the reply would be {size} MiB, over the {limit} MiB limit of a reply; {advice}"),
    )
}

/// The length of `text` as a JSON string's contents (escapes included; serde_json writes
/// other control characters as `\u00XX` and everything else as it is).
pub fn json_text_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

pub fn reply_line(id: &Value, result: Result<Value, ApiError>) -> String {
    match result {
        // Moved in, not through `json!` (which would copy a large result, such as the list
        // of every pane, value by value).
        Ok(r) => {
            let mut reply = serde_json::Map::new();
            reply.insert("id".into(), id.clone());
            reply.insert("result".into(), r);
            Value::Object(reply).to_string()
        }
        Err(e) => {
            json!({ "id": id, "error": { "code": e.code, "message": e.message } }).to_string()
        }
    }
}

impl Server {
    pub(crate) fn api_request(&mut self, conn: ClientId, line: &str) {
        let (id, request) = match crate::protocol::api::decode(line) {
            Ok(r) => r,
            Err((id, err)) => return self.api.send(conn, reply_line(&id, Err(err))),
        };
        if matches!(request, Request::PaneRead(_)) && !self.api.room_for_big_reply(conn) {
            return self.api.reply(conn, &id, Err(budget_spent()));
        }
        match self.dispatch(conn, &id, request) {
            Ok(Outcome::Now(v)) => self.api.reply(conn, &id, Ok(v)),
            Ok(Outcome::Json(text)) => self.api.reply_json(conn, &id, &text),
            Ok(Outcome::Later) => {}
            Err(e) => self.api.reply(conn, &id, Err(e)),
        }
        self.publish_structure();
    }

    fn dispatch(&mut self, conn: ClientId, id: &Value, request: Request) -> ApiResult {
        match request {
            Request::Ping(_) => {
                now(json!({ "pong": true, "protocol": PROTOCOL_VERSION, "version": version() }))
            }
            Request::ServerStatus(_) => now(self.status()),
            Request::ServerStop(_) => {
                self.stop("server stopped");
                now(json!({ "stopping": true }))
            }
            Request::LiveHandoff(p) => self.api_live_handoff(conn, id, p),
            Request::ReloadConfig(_) => now(self.reload_config().to_json()),
            Request::ServerRename(p) => self.rename_session(&p.name).and_then(now),
            Request::EventsSubscribe(_) => {
                if let Some(c) = self.api.conns.get_mut(&conn) {
                    c.subscribed = true;
                }
                // Subscribers are told about changes from now on.
                self.api.last = Some(self.summary());
                now(json!({ "subscribed": true }))
            }
            Request::WorkspaceList(_) => now(self.workspace_list()),
            Request::WorkspaceCreate(p) => self.workspace_create(p),
            Request::WorkspaceClose(p) => self.workspace_close(p),
            Request::WorkspaceRename(p) => self.workspace_rename(p),
            Request::WorkspaceFocus(p) => self.workspace_focus(p),
            Request::TabList(p) => self.tab_list(p),
            Request::TabCreate(p) => self.tab_create(p),
            Request::TabClose(p) => self.tab_close(p),
            Request::TabRename(p) => self.tab_rename(p),
            Request::TabFocus(p) => self.tab_focus(p),
            Request::PaneList(p) => self.pane_list(p),
            Request::PaneGet(p) => self.pane_get(p),
            Request::PaneSplit(p) => self.pane_split(p),
            Request::PaneClose(p) => self.pane_close(p),
            Request::PaneFocus(p) => self.pane_focus(p),
            Request::PaneZoom(p) => self.pane_zoom(p),
            Request::PaneResize(p) => self.pane_resize(p),
            Request::PaneRename(p) => self.pane_rename(p),
            Request::PaneSend(p) => self.pane_send(p),
            Request::PaneWrite(p) => self.pane_write(p),
            Request::PaneStream(p) => self.pane_stream(conn, id, p),
            Request::PanePaste(p) => self.pane_paste(p),
            Request::PaneKeys(p) => self.pane_keys(p),
            Request::PaneSubmit(p) => self.pane_submit(p),
            Request::PaneRead(p) => self.pane_read(p),
            Request::PaneSignals(p) => self.pane_signals_api(p),
            Request::PaneWait(p) => self.pane_wait(conn, id, p),
            Request::AgentList(p) => self.agent_list(p),
            Request::MachineList(_) => self.machine_list(),
            Request::MachineReload(_) => {
                self.machines_reload();
                self.machine_list()
            }
            Request::MachineReconnect(p) => self.machine_reconnect(&p.machine),
            Request::MachineCall(p) => self.machine_call(conn, id, &p.machine, p.request),
            Request::MachineOpen(p) => self.machine_open(p),
            Request::AgentReport(p) => {
                let peer = self.api.conns.get(&conn).map_or(0, |c| c.peer_pid);
                self.agent_report(peer, p)
            }
        }
    }

    pub(super) fn status(&self) -> Value {
        json!({
            "version": version(),
            "protocol": PROTOCOL_VERSION,
            "pid": std::process::id(),
            "uptime_secs": self.life.started.elapsed().as_secs(),
            "session": self.session.name.as_str(),
            "socket": self.session.socket.display().to_string(),
            "workspaces": self.session.state.workspaces.len(),
            "panes": self.session.state.pane_count(),
            "clients": self.clients.by_id.len(),
            "last_attached": self.clients.attached_at,
            // Agents waiting for the user (blocked), as the sidebar counts them.
            "agents_waiting": self.session.state.agents_waiting(),
            // How each attached client's terminal reports keys (docs/terminal.md).
            "client_keys": self.clients.by_id.values().map(|c| c.keys).collect::<Vec<_>>(),
            "api_clients": self.api.conns.len(),
            "size": { "cols": self.session.size.0, "rows": self.session.size.1 },
            "live_handoff": true,
            "last_save": self.persist.as_ref().and_then(|p| p.last_report.as_ref()).map(|r| json!({
                "bytes": r.bytes,
                "ms": (r.took.as_secs_f64() * 1e4).round() / 10.0,
                "ok": r.result.is_ok(),
            })),
        })
    }

    /// Output happened in a terminal: announce `pane.output`, coalesced per pane.
    pub(crate) fn note_output(&mut self, tid: TerminalId) {
        if !self.api.has_subscribers() {
            self.api.activity.clear();
            return;
        }
        let now = Instant::now();
        match self.api.activity.get_mut(&tid) {
            Some((last, pending)) if now < *last + ACTIVITY_INTERVAL => *pending = true,
            _ => {
                self.api.activity.insert(tid, (now, false));
                self.emit_output(tid);
            }
        }
    }

    pub(crate) fn next_activity_deadline(&self) -> Option<Instant> {
        self.api
            .activity
            .values()
            .filter(|(_, pending)| *pending)
            .map(|(t, _)| *t + ACTIVITY_INTERVAL)
            .min()
    }

    /// Announces output that was held back by the interval.
    pub(crate) fn flush_activity(&mut self) {
        let now = Instant::now();
        let due: Vec<TerminalId> = self
            .api
            .activity
            .iter()
            .filter(|(_, (t, pending))| *pending && now >= *t + ACTIVITY_INTERVAL)
            .map(|(id, _)| *id)
            .collect();
        for tid in due {
            self.api.activity.insert(tid, (now, false));
            self.emit_output(tid);
        }
    }

    fn emit_output(&mut self, tid: TerminalId) {
        if let Some(p) = self.session.state.pane_of_terminal(tid) {
            let id = self.pane_no(p);
            self.emit(json!({ "event": "pane.output", "id": id }));
        } else {
            self.api.activity.remove(&tid);
        }
    }

    /// Sends an event line to every subscriber.
    pub(crate) fn emit(&mut self, event: Value) {
        let ids: Vec<ClientId> = self
            .api
            .conns
            .iter()
            .filter(|(_, c)| c.subscribed)
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
        let line = event.to_string();
        for id in ids {
            self.api.send(id, line.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lengths_match_what_serde_writes() {
        for text in [
            "plain",
            "\x1b[0;31mred\x1b[0m",
            "a\"b\\c\n\t\r\x08\x0c\x01\x7f",
            "é✓",
        ] {
            let written = Value::String(text.into()).to_string();
            assert_eq!(json_text_len(text) + 2, written.len(), "{text:?}");
        }
    }

    #[test]
    fn a_reply_too_large_says_how_many_lines_would_fit() {
        let e = too_large_reply(3 * MAX_API_REPLY, Some(90_000));
        assert_eq!(e.code, "too_large");
        assert!(e.message.contains("--lines 27000"), "{}", e.message);
        assert!(e.message.contains("over the 64 MiB limit"), "{}", e.message);
        assert!(too_large_reply(MAX_API_REPLY, None)
            .message
            .contains("ask for less"));
    }
}
