//! Mirrors of panes (`pane.stream`): another server shows one of this session's panes in
//! a terminal of its own (a saved machine's pane opened there). The connection gets the
//! bytes that make a terminal of the asked size show the pane as it is, then the
//! program's own bytes as they come, each as a `pane.data` line (base64) with the
//! position it brings the mirror to; the pane is laid out at the mirror's size while it
//! is mirrored. Keys come back as `pane.write`.
//!
//! The program's bytes are kept in a ring in the emulator (`term::mirror`, 4 MiB at
//! most), and each mirror is sent them from where it stands: one whose connection is
//! behind (more than [`STREAM_BEHIND`] queued) waits and is tried again; one that is
//! paused (nobody looks at it) is sent nothing until it goes on; one that comes back
//! after its connection dropped names its position (`resume`) and is sent only what came
//! since. One that fell further behind than the ring reaches is started again from the
//! pane's state, so a flood to a slow mirror costs the state, not the backlog.
//!
//! When a pane's last mirror goes, the pane stays at its size and its ring is kept for
//! [`LINGER`], for the mirror to come back to.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ApiError, ApiResult, Outcome};
use crate::model::ids::TerminalId;
use crate::protocol::api::{PaneStream, PaneWrite};
use crate::protocol::base64;
use crate::pty::lock;
use crate::server::{ClientId, Server, MAX_COLS, MAX_ROWS};
use crate::term::MirrorPos;

/// Bytes queued on a mirror's connection past which the program's bytes wait.
const STREAM_BEHIND: usize = 1 << 20;
/// How soon bytes that waited for a connection are tried again.
const STREAM_RETRY: Duration = Duration::from_millis(50);
/// Raw bytes in one `pane.data` line.
const DATA_PIECE: usize = 192 << 10;
/// How long a pane whose last mirror went keeps its mirror's size and its ring.
const LINGER: Duration = Duration::from_secs(300);

/// One pane mirrored to one connection.
pub(crate) struct Stream {
    conn: ClientId,
    terminal: TerminalId,
    /// The pane's public number, as the lines name it.
    pane: String,
    /// Nobody looks at the mirror: nothing is sent to it.
    paused: bool,
    /// Where the mirror stands: what it was sent last brings it here.
    pos: MirrorPos,
}

#[derive(Default)]
pub(crate) struct Streams {
    list: Vec<Stream>,
    /// When a connection behind is tried again.
    retry_at: Option<Instant>,
    /// Panes whose last mirror went: until when they keep its size and their ring.
    linger: Vec<(TerminalId, Instant)>,
    /// Per pane: mirrors that came back to where they stood (sent only what came since).
    resumed: std::collections::BTreeMap<TerminalId, u64>,
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
        let resumed = self.resumed.get(&tid).copied().unwrap_or(0);
        (live + paused > 0).then(|| json!({ "live": live, "paused": paused, "resumed": resumed }))
    }

    /// When [`Server::mirrors_due`] has something to do.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let linger = self.linger.iter().map(|(_, t)| *t).min();
        [self.retry_at, linger].into_iter().flatten().min()
    }
}

fn data_line(pane: &str, piece: &[u8], pos: MirrorPos) -> String {
    json!({
        "event": "pane.data",
        "id": pane,
        "data": base64::encode(piece),
        "run": pos.run.to_string(),
        "at": pos.at,
    })
    .to_string()
}

/// `resume`'s position, as `pane.data` gave it (`run` as a string: it is a 64-bit
/// number, beyond what JSON numbers keep exactly elsewhere).
fn resume_pos(resume: &Value) -> Option<MirrorPos> {
    Some(MirrorPos {
        run: resume.get("run")?.as_str()?.parse().ok()?,
        at: resume.get("at")?.as_u64()?,
    })
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
        self.api.streams.linger.retain(|(t, _)| *t != tid);
        let result = json!({ "id": no, "rows": size.0, "cols": size.1, "paused": p.paused });
        let mine = |s: &&mut Stream| s.conn == conn && s.terminal == tid;
        if let Some(stream) = self.api.streams.list.iter_mut().find(mine) {
            // A new size, or paused or going on: what waited comes now.
            stream.paused = p.paused;
            self.pump_mirrors(tid);
            self.request_render();
            return Ok(Outcome::Now(result));
        }
        // Coming back to where it stood, or started from the state.
        let (start, pos) = {
            let mut emu = lock(&rt.emulator);
            let resumed = (p.resume.as_ref())
                .and_then(resume_pos)
                .filter(|pos| emu.mirrored_since(*pos).is_some());
            match resumed {
                Some(pos) => (Vec::new(), pos),
                None => emu.start_mirror(),
            }
        };
        self.api.streams.list.push(Stream {
            conn,
            terminal: tid,
            pane: no.clone(),
            paused: p.paused,
            pos,
        });
        let mut result = result;
        result["resumed"] = json!(start.is_empty());
        if start.is_empty() {
            *self.api.streams.resumed.entry(tid).or_default() += 1;
        }
        self.api.reply(conn, id, Ok(result));
        for piece in start.chunks(DATA_PIECE) {
            self.api.send(conn, data_line(&no, piece, pos));
        }
        self.pump_mirrors(tid);
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

    /// Sends each mirror of `tid` that is not paused what its program wrote since the
    /// mirror's position (or, when the ring no longer reaches it, the pane's state
    /// again); one whose connection is behind is tried again soon.
    pub(crate) fn pump_mirrors(&mut self, tid: TerminalId) {
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let (conns, streams) = (&self.api.conns, &mut self.api.streams);
        let mut lines: Vec<(ClientId, String)> = Vec::new();
        let mut emu = None;
        for s in streams
            .list
            .iter_mut()
            .filter(|s| s.terminal == tid && !s.paused)
        {
            let behind = conns
                .get(&s.conn)
                .is_some_and(|c| c.writer.queued() > STREAM_BEHIND);
            if behind {
                streams
                    .retry_at
                    .get_or_insert(Instant::now() + STREAM_RETRY);
                continue;
            }
            let emu = emu.get_or_insert_with(|| lock(&rt.emulator));
            let since = emu
                .mirrored_since(s.pos)
                .map(|(bytes, end)| (bytes.to_vec(), end));
            let (bytes, end) = match since {
                Some(sent) => sent,
                None => emu.start_mirror(),
            };
            for piece in bytes.chunks(DATA_PIECE) {
                lines.push((s.conn, data_line(&s.pane, piece, end)));
            }
            s.pos = end;
        }
        drop(emu);
        for (conn, line) in lines {
            self.api.send(conn, line);
        }
    }

    /// Tries the mirrors whose connection was behind again, and lets go of the panes
    /// whose last mirror did not come back in time.
    pub(crate) fn mirrors_due(&mut self, now: Instant) {
        if self.api.streams.retry_at.is_some_and(|t| t <= now) {
            self.api.streams.retry_at = None;
            let mut tids: Vec<TerminalId> =
                self.api.streams.list.iter().map(|s| s.terminal).collect();
            tids.dedup();
            for tid in tids {
                self.pump_mirrors(tid);
            }
        }
        let mut gone = Vec::new();
        self.api.streams.linger.retain(|(tid, until)| {
            let keep = *until > now;
            if !keep {
                gone.push(*tid);
            }
            keep
        });
        if gone.is_empty() {
            return;
        }
        for tid in gone {
            self.session.mirror_sizes.remove(&tid);
            if let Some(rt) = self.session.runtimes.get(tid) {
                lock(&rt.emulator).stop_mirror();
            }
        }
        self.session.relayout();
        self.request_render();
    }

    /// Ends the mirrors whose connection or pane is gone; a mirror of a pane that closed
    /// is told so; a pane left without mirrors lingers (see [`LINGER`]).
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
        for (conn, tid, pane) in ended {
            if self.session.runtimes.get(tid).is_none() {
                self.api.send(
                    conn,
                    json!({ "event": "pane.closed", "id": pane }).to_string(),
                );
                self.session.mirror_sizes.remove(&tid);
                self.api.streams.resumed.remove(&tid);
            } else if !self.api.streams.mirrors(tid) {
                let streams = &mut self.api.streams;
                streams.linger.retain(|(t, _)| *t != tid);
                streams.linger.push((tid, Instant::now() + LINGER));
            }
        }
    }
}
