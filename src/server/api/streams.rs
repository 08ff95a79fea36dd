//! Mirrors of panes (`pane.stream`): another server shows one of this session's panes in
//! a terminal of its own (a saved machine's pane opened there). The connection gets the
//! bytes that make a terminal of the asked size show the pane as it is, then the
//! program's own bytes as they come, each as a `pane.data` line (base64); the pane is
//! laid out at the mirror's size while it is mirrored. Keys come back as `pane.write`.
//!
//! A mirror nobody looks at is paused (`"paused": true`): nothing is sent to it, and
//! what the program prints waits as below; going on, it gets what waited, or is started
//! again when that was lost or went to other mirrors meanwhile.
//!
//! Bounded: the program's bytes are kept in the emulator (`term::mirror`, 4 MiB at
//! most) until they are sent; while a mirror's connection has more than
//! [`STREAM_BEHIND`] queued they wait there, and past the bound the mirror is started
//! again from the pane's state, so a flood to a slow mirror costs the state, not the
//! backlog.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ApiError, ApiResult, Outcome};
use crate::model::ids::TerminalId;
use crate::protocol::api::{PaneStream, PaneWrite};
use crate::protocol::base64;
use crate::pty::lock;
use crate::server::{ClientId, Server, MAX_COLS, MAX_ROWS};
use crate::term::Mirrored;

/// Bytes queued on a mirror's connection past which the program's bytes wait.
const STREAM_BEHIND: usize = 1 << 20;
/// How soon bytes that waited for a connection are tried again.
const STREAM_RETRY: Duration = Duration::from_millis(50);
/// Raw bytes in one `pane.data` line.
const DATA_PIECE: usize = 192 << 10;

/// One pane mirrored to one connection.
pub(crate) struct Stream {
    conn: ClientId,
    terminal: TerminalId,
    /// The pane's public number, as the lines name it.
    pane: String,
    /// Nobody looks at the mirror: nothing is sent to it.
    paused: bool,
    /// Bytes were sent to other mirrors of the pane while this one was paused: it is
    /// started again when it goes on.
    stale: bool,
}

#[derive(Default)]
pub(crate) struct Streams {
    list: Vec<Stream>,
    /// Terminals whose bytes wait for a connection that is behind, and when they are
    /// tried again.
    held: Vec<TerminalId>,
    retry_at: Option<Instant>,
}

impl Streams {
    pub(crate) fn mirrors(&self, tid: TerminalId) -> bool {
        self.list.iter().any(|s| s.terminal == tid)
    }

    /// How many mirrors of `tid` stream and how many are paused (`pane.get`'s
    /// `mirrors`); None when it has none.
    pub(crate) fn mirrors_of(&self, tid: TerminalId) -> Option<Value> {
        let of = || self.list.iter().filter(|s| s.terminal == tid);
        let paused = of().filter(|s| s.paused).count();
        let live = of().count() - paused;
        (live + paused > 0).then(|| json!({ "live": live, "paused": paused }))
    }

    pub(crate) fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }
}

fn data_lines(pane: &str, bytes: &[u8]) -> Vec<String> {
    bytes
        .chunks(DATA_PIECE)
        .map(|piece| {
            json!({ "event": "pane.data", "id": pane, "data": base64::encode(piece) }).to_string()
        })
        .collect()
}

impl Server {
    pub(super) fn pane_stream(&mut self, conn: ClientId, id: &Value, p: PaneStream) -> ApiResult {
        if !(1..=MAX_ROWS).contains(&p.rows) || !(1..=MAX_COLS).contains(&p.cols) {
            return Err(ApiError::params(format!(
                "\"rows\" must be 1 to {MAX_ROWS} and \"cols\" 1 to {MAX_COLS}, got {}x{}",
                p.rows, p.cols
            )));
        }
        let pane = self.target_pane(p.pane)?;
        let tid = self.target_terminal(p.pane)?;
        let no = self.pane_no(pane);
        let size = (p.rows, p.cols);
        let rt = self
            .session
            .runtimes
            .get_mut(tid)
            .ok_or_else(|| ApiError::new("pane_exited", "the pane has no running program"))?;
        self.session.mirror_sizes.insert(tid, size);
        rt.resize(size.0, size.1);
        // At that size before anything is taken from it (the program is told by the
        // pane's actor, which then finds the emulator resized already).
        lock(&rt.emulator).resize(size.0, size.1);
        let result = json!({ "id": no, "rows": size.0, "cols": size.1, "paused": p.paused });
        let mine = |s: &&mut Stream| s.conn == conn && s.terminal == tid;
        if let Some(stream) = self.api.streams.list.iter_mut().find(mine) {
            let was = std::mem::replace(&mut stream.paused, p.paused);
            let going_on = was && !p.paused;
            if !(going_on && std::mem::take(&mut stream.stale)) {
                // (Going on: what was held back comes now.)
                if going_on {
                    self.pump_mirrors(tid);
                }
                self.request_render();
                return Ok(Outcome::Now(result));
            }
            // Others were sent what it missed: it starts again, from the state.
            self.api
                .streams
                .list
                .retain(|s| !(s.conn == conn && s.terminal == tid));
        }
        // Mirrors already there get what came before this one starts.
        self.pump_mirrors(tid);
        let start = match self.session.runtimes.get(tid) {
            Some(rt) => lock(&rt.emulator).start_mirror(),
            None => {
                return Err(ApiError::new(
                    "pane_exited",
                    "the pane has no running program",
                ))
            }
        };
        self.api.streams.list.push(Stream {
            conn,
            terminal: tid,
            pane: no.clone(),
            paused: p.paused,
            stale: false,
        });
        self.api.reply(conn, id, Ok(result));
        for line in data_lines(&no, &start) {
            self.api.send(conn, line);
        }
        self.request_render();
        Ok(Outcome::Later)
    }

    pub(super) fn pane_write(&mut self, p: PaneWrite) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let bytes = base64::decode(&p.data)
            .ok_or_else(|| ApiError::params("\"data\" must be base64 (RFC 4648, with padding)"))?;
        let n = bytes.len();
        self.send_bytes(tid, bytes)?;
        super::now(json!({ "written": n }))
    }

    /// Sends the mirrors of `tid` what its program wrote since they were last sent
    /// anything (or, after too much, the pane's state again); holds it while one of
    /// their connections is behind.
    pub(crate) fn pump_mirrors(&mut self, tid: TerminalId) {
        let conns: Vec<(ClientId, String)> = self
            .api
            .streams
            .list
            .iter()
            .filter(|s| s.terminal == tid && !s.paused)
            .map(|s| (s.conn, s.pane.clone()))
            .collect();
        // (All paused: what the program prints waits in the emulator, bounded.)
        if conns.is_empty() {
            return;
        }
        let behind = conns.iter().any(|(c, _)| {
            self.api
                .conns
                .get(c)
                .is_some_and(|c| c.writer.queued() > STREAM_BEHIND)
        });
        if behind {
            let streams = &mut self.api.streams;
            if !streams.held.contains(&tid) {
                streams.held.push(tid);
            }
            streams
                .retry_at
                .get_or_insert(Instant::now() + STREAM_RETRY);
            return;
        }
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let bytes = {
            let mut emu = lock(&rt.emulator);
            match emu.take_mirrored() {
                None => return,
                Some(Mirrored::Bytes(b)) => b,
                Some(Mirrored::Lost) => emu.start_mirror(),
            }
        };
        for (conn, pane) in conns {
            for line in data_lines(&pane, &bytes) {
                self.api.send(conn, line);
            }
        }
        for s in &mut self.api.streams.list {
            if s.terminal == tid && s.paused {
                s.stale = true;
            }
        }
    }

    /// Tries the mirrors whose bytes waited for their connection again.
    pub(crate) fn retry_mirrors(&mut self, now: Instant) {
        if self.api.streams.retry_at.is_none_or(|t| t > now) {
            return;
        }
        self.api.streams.retry_at = None;
        for tid in std::mem::take(&mut self.api.streams.held) {
            self.pump_mirrors(tid);
        }
    }

    /// Ends the mirrors whose connection or pane is gone: the pane is laid out in its
    /// place again, and a mirror of a pane that closed is told so.
    pub(crate) fn prune_mirrors(&mut self) {
        if self.api.streams.list.is_empty() {
            return;
        }
        let (conns, runtimes) = (&self.api.conns, &self.session.runtimes);
        let mut ended = Vec::new();
        self.api.streams.list.retain(|s| {
            let keep = conns.contains_key(&s.conn) && runtimes.get(s.terminal).is_some();
            if !keep {
                ended.push((s.conn, s.terminal, s.pane.clone()));
            }
            keep
        });
        if ended.is_empty() {
            return;
        }
        for (conn, tid, pane) in ended {
            if self.session.runtimes.get(tid).is_none() {
                self.api.send(
                    conn,
                    json!({ "event": "pane.closed", "id": pane }).to_string(),
                );
            }
            if !self.api.streams.mirrors(tid) {
                self.session.mirror_sizes.remove(&tid);
                if let Some(rt) = self.session.runtimes.get(tid) {
                    lock(&rt.emulator).stop_mirror();
                }
            }
        }
        self.session.relayout();
        self.request_render();
    }
}
