//! API methods that talk to a pane's program: send text or named keys, submit a line,
//! read the screen, wait for output, exit or an agent state.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::targets::{opt_bool, opt_str, opt_str_list, opt_u64, req_str};
use super::{now, reply_line, ApiError, ApiResult, Outcome};
use crate::input::keys::Key;
use crate::model::ids::TerminalId;
use crate::pty::{lock, WriteError};
use crate::server::{ClientId, Server};

/// Pause between a submit's text and its Enter, unless the request says otherwise.
const SUBMIT_DELAY: Duration = Duration::from_millis(80);
/// Lines (history + screen) an output wait searches.
const WAIT_LINES: usize = 1000;
/// Pending waits one connection may hold (each is re-checked on its pane's output).
const MAX_WAITS_PER_CONNECTION: usize = 256;
/// Upper bound of a wait's timeout.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

pub(crate) enum WaitKind {
    Output(regex_lite::Regex),
    Exit,
    AgentState(String),
}

pub(crate) struct PendingWait {
    pub conn: ClientId,
    /// The request's id, echoed in the reply.
    pub id: Value,
    pub terminal: TerminalId,
    pub kind: WaitKind,
    pub deadline: Option<Instant>,
}

fn write_err(e: WriteError) -> ApiError {
    match e {
        WriteError::WouldBlock => ApiError::new("busy", e.to_string()),
        WriteError::Closed => ApiError::new("pane_exited", "the pane's program has exited"),
    }
}

impl Server {
    fn target_terminal(&self, p: &Value) -> Result<TerminalId, ApiError> {
        let pane = self.target_pane(p)?;
        self.state
            .panes
            .get(&pane)
            .map(|ps| ps.terminal)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))
    }

    fn send_bytes(&mut self, tid: TerminalId, bytes: Vec<u8>) -> Result<(), ApiError> {
        let rt = self
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        rt.handle.try_write(bytes).map_err(write_err)
    }

    pub(crate) fn pane_send(&mut self, p: &Value) -> ApiResult {
        let tid = self.target_terminal(p)?;
        let text = req_str(p, "text")?;
        self.send_bytes(tid, text.as_bytes().to_vec())?;
        now(json!({ "sent": text.len() }))
    }

    pub(crate) fn pane_keys(&mut self, p: &Value) -> ApiResult {
        let tid = self.target_terminal(p)?;
        let names = opt_str_list(p, "keys")?.ok_or_else(|| {
            ApiError::params("missing \"keys\" (a list like [\"C-c\", \"Up\", \"Enter\"])")
        })?;
        let app_cursor = self
            .runtimes
            .get(tid)
            .is_some_and(|rt| lock(&rt.emulator).screen().application_cursor());
        let mut bytes = Vec::new();
        for name in &names {
            let key = Key::parse(name).map_err(|e| ApiError::params(e.to_string()))?;
            bytes.extend(key_bytes(&key, app_cursor));
        }
        self.send_bytes(tid, bytes)?;
        now(json!({ "sent": names.len() }))
    }

    pub(crate) fn pane_submit(&mut self, p: &Value) -> ApiResult {
        let tid = self.target_terminal(p)?;
        let text = req_str(p, "text")?;
        let delay = opt_u64(p, "delay_ms")?
            .map(Duration::from_millis)
            .unwrap_or(SUBMIT_DELAY)
            .min(Duration::from_secs(10));
        let rt = self
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        rt.handle
            .try_submit(text.as_bytes().to_vec(), b"\r".to_vec(), delay)
            .map_err(write_err)?;
        now(json!({ "submitted": true }))
    }

    pub(crate) fn pane_read(&mut self, p: &Value) -> ApiResult {
        let pane = self.target_pane(p)?;
        let tid = self.target_terminal(p)?;
        let ansi = opt_bool(p, "ansi")?.unwrap_or(false);
        let lines = opt_u64(p, "lines")?;
        let rt = self
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        let emu = lock(&rt.emulator);
        let (rows, cols) = emu.size();
        let text = match lines {
            Some(n) => emu
                .last_lines(usize::try_from(n).unwrap_or(usize::MAX), ansi)
                .join("\n"),
            None if ansi => emu.screen().contents_formatted(),
            None => emu.screen().contents(),
        };
        let (crow, ccol) = emu.screen().cursor_position();
        drop(emu);
        now(json!({
            "id": self.pane_no(pane),
            "text": text,
            "rows": rows,
            "cols": cols,
            "cursor": { "row": crow, "col": ccol },
        }))
    }

    pub(crate) fn pane_wait(&mut self, conn: ClientId, id: &Value, p: &Value) -> ApiResult {
        let tid = self.target_terminal(p)?;
        let output = opt_str(p, "output")?;
        let exit = opt_bool(p, "exit")?.unwrap_or(false);
        let agent = opt_str(p, "agent_state")?;
        let kind = match (output, exit, agent) {
            // ^ and $ anchor at line boundaries: people think of output as lines.
            (Some(re), false, None) => WaitKind::Output(
                regex_lite::RegexBuilder::new(re)
                    .multi_line(true)
                    .build()
                    .map_err(|e| {
                        ApiError::params(format!("\"output\" is not a valid regex: {e}"))
                    })?,
            ),
            (None, true, None) => WaitKind::Exit,
            (None, false, Some(state)) if super::agents::STATES.contains(&state) => {
                WaitKind::AgentState(state.to_string())
            }
            (None, false, Some(state)) => {
                return Err(ApiError::params(format!(
                    "\"agent_state\" must be one of {}, got {state:?}",
                    super::agents::STATES.join(", ")
                )))
            }
            _ => {
                return Err(ApiError::params(
                    "give exactly one of \"output\" (a regex), \"exit\": true, \"agent_state\"",
                ))
            }
        };
        let deadline = opt_u64(p, "timeout_ms")?
            .map(|ms| Instant::now() + Duration::from_millis(ms).min(MAX_WAIT));
        let wait = PendingWait {
            conn,
            id: id.clone(),
            terminal: tid,
            kind,
            deadline,
        };
        // Already true? Answer at once.
        if let Some(result) = self.check_wait(&wait) {
            return now(result);
        }
        if self.api.waits.iter().filter(|w| w.conn == conn).count() >= MAX_WAITS_PER_CONNECTION {
            return Err(ApiError::new(
                "too_many_waits",
                format!("this connection already has {MAX_WAITS_PER_CONNECTION} waits pending"),
            ));
        }
        self.api.waits.push(wait);
        Ok(Outcome::Later)
    }

    /// The reply of a satisfied wait, or None while it must keep waiting.
    fn check_wait(&self, w: &PendingWait) -> Option<Value> {
        let pane = self
            .state
            .pane_of_terminal(w.terminal)
            .map(|p| self.pane_no(p));
        match &w.kind {
            WaitKind::Output(re) => {
                let rt = self.runtimes.get(w.terminal)?;
                let text = lock(&rt.emulator).last_lines(WAIT_LINES, false).join("\n");
                let m = re.find(&text)?;
                let line = text[..m.start()].matches('\n').count();
                let full_line = text.lines().nth(line).unwrap_or("");
                Some(json!({ "id": pane, "matched": m.as_str(), "line": full_line }))
            }
            WaitKind::Exit => {
                let term = self.state.terminals.get(&w.terminal);
                match term.and_then(|t| t.exited) {
                    Some(code) => Some(json!({ "id": pane, "exited": true, "status": code })),
                    None if term.is_none() => {
                        Some(json!({ "id": pane, "exited": true, "status": Value::Null }))
                    }
                    None => None,
                }
            }
            WaitKind::AgentState(want) => {
                let state = self
                    .state
                    .agent_state(self.state.pane_of_terminal(w.terminal)?)?;
                (state == want).then(|| json!({ "id": pane, "agent_state": state }))
            }
        }
    }

    /// Re-checks the waits on one terminal (after output, exit or a state change).
    pub(crate) fn recheck_waits(&mut self, tid: Option<TerminalId>) {
        let now_t = Instant::now();
        let mut done = Vec::new();
        let mut i = 0;
        while i < self.api.waits.len() {
            let w = &self.api.waits[i];
            if tid.is_some_and(|t| t != w.terminal) && w.deadline.is_none_or(|d| d > now_t) {
                i += 1;
                continue;
            }
            let result = match self.check_wait(w) {
                Some(v) => Some(Ok(v)),
                None if w.deadline.is_some_and(|d| d <= now_t) => Some(Err(ApiError::new(
                    "timeout",
                    "the condition did not happen before the timeout",
                ))),
                None if !self.state.terminals.contains_key(&w.terminal)
                    && !matches!(w.kind, WaitKind::Exit) =>
                {
                    Some(Err(ApiError::new(
                        "pane_exited",
                        "the pane closed before the condition happened",
                    )))
                }
                None => None,
            };
            match result {
                Some(r) => {
                    let w = self.api.waits.remove(i);
                    done.push((w.conn, reply_line(&w.id, r)));
                }
                None => i += 1,
            }
        }
        let answered = !done.is_empty();
        for (conn, line) in done {
            self.api_send(conn, line);
        }
        if answered {
            self.api_reap_drained();
        }
    }

    pub(crate) fn next_wait_deadline(&self) -> Option<Instant> {
        self.api.waits.iter().filter_map(|w| w.deadline).min()
    }
}

/// The bytes of a named key, honouring the pane's cursor-key mode (vim and less switch
/// arrows to their application form).
fn key_bytes(key: &Key, app_cursor: bool) -> Vec<u8> {
    let bytes = key.to_bytes();
    if app_cursor
        && bytes.len() == 3
        && bytes.starts_with(b"\x1b[")
        && matches!(bytes[2], b'A'..=b'D' | b'H' | b'F')
    {
        return vec![0x1b, b'O', bytes[2]];
    }
    bytes
}
