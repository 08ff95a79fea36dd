//! API methods that talk to a pane's program: send text or named keys, submit a line,
//! read the screen (waits are in `waits.rs`).

use std::time::Duration;

use serde_json::json;

use super::{now, ApiError, ApiResult};
use crate::input::keys::Key;
use crate::model::ids::{PaneNo, TerminalId};
use crate::protocol::api::{PaneKeys, PaneRead, PaneSend, PaneSubmit, PaneTarget};
use crate::pty::{lock, WriteError};
use crate::server::Server;

/// Pause between a submit's text and its Enter, unless the request says otherwise.
const SUBMIT_DELAY: Duration = Duration::from_millis(80);

fn write_err(e: WriteError) -> ApiError {
    match e {
        WriteError::WouldBlock => ApiError::new("busy", e.to_string()),
        WriteError::Closed => ApiError::new("pane_exited", "the pane's program has exited"),
    }
}

impl Server {
    pub(super) fn target_terminal(&self, pane: Option<PaneNo>) -> Result<TerminalId, ApiError> {
        let pane = self.target_pane(pane)?;
        self.session
            .state
            .panes
            .get(&pane)
            .map(|ps| ps.terminal)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))
    }

    pub(super) fn send_bytes(&mut self, tid: TerminalId, bytes: Vec<u8>) -> Result<(), ApiError> {
        self.before_agent_input(tid);
        let rt = self
            .session
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        rt.handle.try_write(bytes).map_err(write_err)
    }

    pub(crate) fn pane_send(&mut self, p: PaneSend) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let text = p.text;
        self.send_bytes(tid, text.as_bytes().to_vec())?;
        now(json!({ "sent": text.len() }))
    }

    pub(crate) fn pane_paste(&mut self, p: PaneTarget) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let bytes = self.session.buffer_paste(tid).ok_or_else(|| {
            ApiError::new(
                "no_buffer",
                "nothing copied yet: copy in copy mode first (prefix [, then v and y)",
            )
        })?;
        let n = bytes.len();
        self.send_bytes(tid, bytes)?;
        now(json!({ "pasted": n }))
    }

    pub(crate) fn pane_keys(&mut self, p: PaneKeys) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let names = p.keys.0;
        // Encoded as the pane asked (kitty keys, modifyOtherKeys, cursor key mode).
        let mode = self
            .session
            .runtimes
            .get(tid)
            .map(|rt| lock(&rt.emulator).key_mode())
            .unwrap_or_default();
        let mut bytes = Vec::new();
        for name in &names {
            let key = Key::parse(name).map_err(|e| ApiError::params(e.to_string()))?;
            bytes.extend(crate::input::encode::encode(
                &crate::input::event::KeyEvent::from_key(key),
                mode,
            ));
        }
        self.send_bytes(tid, bytes)?;
        now(json!({ "sent": names.len() }))
    }

    pub(crate) fn pane_submit(&mut self, p: PaneSubmit) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let text = p.text;
        let delay = p
            .delay_ms
            .map(Duration::from_millis)
            .unwrap_or(SUBMIT_DELAY)
            .min(Duration::from_secs(10));
        self.before_agent_input(tid);
        let rt = self
            .session
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        rt.handle
            .try_submit(text.as_bytes().to_vec(), b"\r".to_vec(), delay)
            .map_err(write_err)?;
        now(json!({ "submitted": true }))
    }

    pub(crate) fn pane_read(&mut self, p: PaneRead) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let tid = self.target_terminal(p.pane)?;
        let ansi = p.ansi;
        let lines = p.lines;
        let rt = self
            .session
            .runtimes
            .get(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        let emu = lock(&rt.emulator);
        let (rows, cols) = emu.size();
        let text = match lines {
            Some(n) => {
                let lines = emu.last_lines(usize::try_from(n).unwrap_or(usize::MAX), ansi);
                // Refused before the reply is built (it would be a second and third copy).
                let bytes: usize = lines.iter().map(|l| super::json_text_len(l) + 2).sum();
                if bytes >= super::MAX_API_REPLY {
                    return Err(super::too_large_reply(bytes, Some(lines.len())));
                }
                lines.join("\n")
            }
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
}
