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
    /// Nobody looks at the mirror: nothing is sent to it (and it sizes nothing).
    paused: bool,
    /// The size of its terminal.
    size: (u16, u16),
    /// Where the mirror stands: what it was sent last brings it here.
    pos: MirrorPos,
    /// It is to be sent the pane's state next (it is new, or what it stands on no longer
    /// matches the pane: a resize, another size, a new program in the pane).
    restart: bool,
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

fn data_line(pane: &str, piece: &[u8], pos: Option<MirrorPos>, start: bool) -> String {
    let mut line = json!({ "event": "pane.data", "id": pane, "data": base64::encode(piece) });
    if let Some(pos) = pos {
        line["run"] = json!(pos.run.to_string());
        line["at"] = json!(pos.at);
    }
    if start {
        line["start"] = json!(true);
    }
    line.to_string()
}

/// The lines of a state (`term::mirror`'s start): the first says the mirror starts
/// over, only the last says where that brings it (a mirror cut off in the middle has no
/// position to come back to).
fn state_lines(pane: &str, state: &[u8], pos: MirrorPos) -> Vec<String> {
    let pieces: Vec<&[u8]> = state.chunks(DATA_PIECE).collect();
    let last = pieces.len().saturating_sub(1);
    (pieces.iter().enumerate())
        .map(|(i, piece)| data_line(pane, piece, (i == last).then_some(pos), i == 0))
        .collect()
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
        let now_size = match self.session.runtimes.get(tid) {
            Some(rt) => lock(&rt.emulator).size(),
            None => {
                return Err(ApiError::new(
                    "pane_exited",
                    "the pane has no running program",
                ))
            }
        };
        self.api.streams.linger.retain(|(t, _)| *t != tid);
        let result = json!({ "id": no, "rows": size.0, "cols": size.1, "paused": p.paused });
        let streams = &mut self.api.streams.list;
        let live_elsewhere =
            (streams.iter()).any(|s| s.terminal == tid && s.conn != conn && !s.paused);
        // A paused mirror sizes nothing while another is looked at.
        let sizes = !p.paused || !live_elsewhere;
        let existing = streams
            .iter()
            .position(|s| s.conn == conn && s.terminal == tid);
        let resumed = match existing {
            Some(i) => {
                streams[i].paused = p.paused;
                streams[i].size = size;
                false
            }
            None => {
                // Coming back to where it stood: only at the size it left at.
                let resume = (p.resume.as_ref())
                    .and_then(resume_pos)
                    .filter(|_| !sizes || size == now_size);
                let rt = self.session.runtimes.get(tid);
                let resume = resume.filter(|pos| {
                    rt.is_some_and(|rt| lock(&rt.emulator).mirrored_since(*pos).is_some())
                });
                streams.push(Stream {
                    conn,
                    terminal: tid,
                    pane: no.clone(),
                    paused: p.paused,
                    size,
                    pos: resume.unwrap_or(MirrorPos { run: 0, at: 0 }),
                    restart: resume.is_none(),
                });
                resume.is_some()
            }
        };
        if sizes {
            self.size_mirrored(tid, size);
        }
        if existing.is_none() {
            let mut result = result;
            result["resumed"] = json!(resumed);
            if resumed {
                *self.api.streams.resumed.entry(tid).or_default() += 1;
            }
            self.api.reply(conn, id, Ok(result));
            self.pump_mirrors(tid);
            self.request_render();
            return Ok(Outcome::Later);
        }
        self.pump_mirrors(tid);
        self.request_render();
        Ok(Outcome::Now(result))
    }

    /// Lays a mirrored pane out at `size`. When that changes its size, the bytes its
    /// mirrors have not been sent yet were drawn at the old one, and a mirror of another
    /// size does not fit it: those are started again from the state.
    fn size_mirrored(&mut self, tid: TerminalId, size: (u16, u16)) {
        self.session.mirror_sizes.insert(tid, size);
        let Some(rt) = self.session.runtimes.get_mut(tid) else {
            return;
        };
        rt.resize(size.0, size.1);
        let mut emu = lock(&rt.emulator);
        if emu.size() == size {
            return;
        }
        let end = emu.start_mirror_pos();
        // At that size before anything is taken from it (the program is told by the
        // pane's actor, which then finds the emulator resized already).
        emu.resize(size.0, size.1);
        drop(emu);
        for s in self
            .api
            .streams
            .list
            .iter_mut()
            .filter(|s| s.terminal == tid)
        {
            if Some(s.pos) != end || s.size != size {
                s.restart = true;
            }
        }
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
            let queued = conns.get(&s.conn).map_or(0, |c| c.writer.queued());
            if queued > STREAM_BEHIND {
                streams
                    .retry_at
                    .get_or_insert(Instant::now() + STREAM_RETRY);
                continue;
            }
            let emu = emu.get_or_insert_with(|| lock(&rt.emulator));
            let since = (!s.restart)
                .then(|| emu.mirrored_since(s.pos))
                .flatten()
                .map(|(bytes, _)| bytes);
            let Some(bytes) = since else {
                let (state, pos) = emu.start_mirror();
                lines.extend(
                    state_lines(&s.pane, &state, pos)
                        .into_iter()
                        .map(|l| (s.conn, l)),
                );
                (s.pos, s.restart) = (pos, false);
                continue;
            };
            // As much as the connection has room for now; the rest soon.
            let room = (STREAM_BEHIND - queued).max(DATA_PIECE);
            if bytes.len() > room {
                streams
                    .retry_at
                    .get_or_insert(Instant::now() + STREAM_RETRY);
            }
            for piece in bytes[..bytes.len().min(room)].chunks(DATA_PIECE) {
                s.pos.at += piece.len() as u64;
                lines.push((s.conn, data_line(&s.pane, piece, Some(s.pos), false)));
            }
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
            tids.sort_unstable();
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
            self.api.streams.resumed.remove(&tid);
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
        // A pane whose program was run again has a new terminal: its mirrors go on with
        // it, from its state.
        let session = &mut self.session;
        for s in self.api.streams.list.iter_mut() {
            if session.runtimes.get(s.terminal).is_some() {
                continue;
            }
            let no = s.pane.trim_start_matches('p').parse().ok();
            let now = no.and_then(|n| session.terminal_of_pane_no(n));
            if let Some(tid) = now.filter(|t| session.runtimes.get(*t).is_some()) {
                if let Some(size) = session.mirror_sizes.remove(&s.terminal) {
                    session.mirror_sizes.insert(tid, size);
                }
                (s.terminal, s.restart) = (tid, true);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_start_says_where_it_brings_the_mirror_only_on_its_last_line() {
        let pos = MirrorPos { run: 7, at: 40 };
        let state = vec![b'x'; DATA_PIECE * 2 + 5];
        let lines: Vec<Value> = state_lines("p3", &state, pos)
            .iter()
            .map(|l| parse(l))
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["start"], true);
        assert!(lines[0].get("at").is_none() && lines[1].get("at").is_none());
        assert!(lines[1].get("start").is_none() && lines[2].get("start").is_none());
        assert_eq!(
            (&lines[2]["run"], &lines[2]["at"]),
            (&json!("7"), &json!(40))
        );
        let data: Vec<u8> = lines
            .iter()
            .flat_map(|l| base64::decode(l["data"].as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(data, state);
        // A position given back comes back as it was given.
        assert_eq!(resume_pos(&json!({ "run": "7", "at": 40 })), Some(pos));
        assert_eq!(resume_pos(&json!({ "run": 7, "at": 40 })), None);
    }
}
