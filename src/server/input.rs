//! What wakes the server: events other threads queue (each also writes a wake pipe), and
//! the interactive clients' sockets, which the server thread reads itself — a keystroke
//! wakes it directly, with no reader thread in between.
//!
//! What a client sends is handled in order, a bounded amount per turn (`INPUT_PER_TURN`):
//! the rest waits in the client's backlog and is taken on the next turns, which come at
//! once, so a huge paste costs one client's patience, not everybody's. A client whose
//! backlog is full is not read until it shrinks, so the kernel holds back the rest.

use crate::log;
use std::collections::VecDeque;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use super::{ClientId, Event, Server};
use crate::protocol::frame::ClientMsg;

/// Bytes of one client's input handled per turn of the server thread: 64 KiB of a paste
/// cost well under a millisecond, and even input that is all control keys (a token
/// each) stays within a few, so other clients and API requests keep being served.
const INPUT_PER_TURN: usize = 64 * 1024;
/// How long a client's input waits for the focused pane to make room while its program
/// reads none of it: after that, what does not fit is refused ("input dropped") rather than
/// holding back the keys behind it (the prefix, to close a pane that stopped reading).
const INPUT_STALL: std::time::Duration = std::time::Duration::from_secs(2);
/// What one other message (resize, ping…) counts against that budget.
const MESSAGE_COST: usize = 1024;
/// What each byte that may begin the prefix key counts against that budget, beside
/// itself: what follows it may be a binding, and a binding (a new pane, say) costs far
/// more than a byte, so a turn takes at most 16 of them.
const PREFIX_COST: usize = 4 * 1024;
/// A client with this much input waiting is not read from until it is taken in (its
/// terminal or socket holds the rest); one frame may still bring up to 16 MiB.
const BACKLOG_MAX: usize = 1024 * 1024;

/// What a client sent that is not handled yet, oldest first.
#[derive(Default)]
pub(super) struct Backlog {
    msgs: VecDeque<Queued>,
    /// Bytes of the front `Input` already handled.
    offset: usize,
    /// Input bytes waiting.
    bytes: usize,
    /// Its end is queued: nothing more is read from it.
    gone: bool,
}

enum Queued {
    Msg(ClientMsg),
    /// The connection ended (with the reason when it was malformed).
    Gone(Option<String>),
}

impl Backlog {
    pub(super) fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Whether to read more from the client now.
    fn wants_more(&self) -> bool {
        !self.gone && self.bytes < BACKLOG_MAX
    }

    fn push(&mut self, msg: ClientMsg) {
        if let ClientMsg::Input(b) = &msg {
            self.bytes += b.len();
        }
        self.msgs.push_back(Queued::Msg(msg));
    }

    fn push_gone(&mut self, reason: Option<String>) {
        self.gone = true;
        self.msgs.push_back(Queued::Gone(reason));
    }

    /// The next thing to handle, within `budget`; what it cost. Input costs a byte a byte
    /// and `PREFIX_COST` more for each `prefix` byte (the first byte of the prefix key).
    fn next(&mut self, budget: usize, prefix: u8) -> Option<(Queued, usize)> {
        let Some(Queued::Msg(ClientMsg::Input(bytes))) = self.msgs.front() else {
            return self.msgs.pop_front().map(|q| (q, MESSAGE_COST));
        };
        let rest = bytes.get(self.offset..).unwrap_or_default();
        let mut limit = budget;
        for (k, at) in memchr::memchr_iter(prefix, rest).enumerate() {
            if at + 1 + (k + 1) * PREFIX_COST > budget {
                // Up to this one; or this one and what may follow it (the rest of an
                // escape sequence), if it is the first thing left.
                limit = if at > 0 {
                    at
                } else {
                    memchr::memchr(prefix, &rest[1..])
                        .map_or(rest.len(), |p| p + 1)
                        .min(8)
                };
                break;
            }
        }
        let n = cut(rest, limit);
        let cost = n + PREFIX_COST * memchr::memchr_iter(prefix, &rest[..n]).count();
        let piece = if n < rest.len() {
            let piece = rest.get(..n).unwrap_or_default().to_vec();
            self.offset += n;
            piece
        } else {
            let whole = match self.msgs.pop_front() {
                Some(Queued::Msg(ClientMsg::Input(b))) => b,
                _ => Vec::new(),
            };
            let offset = std::mem::take(&mut self.offset);
            if offset == 0 {
                whole
            } else {
                whole.get(offset..).unwrap_or_default().to_vec()
            }
        };
        self.bytes -= piece.len();
        Some((Queued::Msg(ClientMsg::Input(piece)), cost))
    }
}

/// How much of `bytes` to take with room for `budget`: all if it fits, else at most
/// `budget`, but never cut right after an ESC (or `ESC ]`, `ESC P`, `ESC _`), where the
/// tokenizer decides at once instead of waiting for the rest (see `input::parse`).
fn cut(bytes: &[u8], budget: usize) -> usize {
    if bytes.len() <= budget {
        return bytes.len();
    }
    let esc = crate::input::parse::ESC_BYTE;
    let after_introducer = |n: usize| {
        let last = bytes.get(n.wrapping_sub(1)).copied();
        let before = n.checked_sub(2).and_then(|i| bytes.get(i)).copied();
        last == Some(esc) || (before == Some(esc) && matches!(last, Some(b']' | b'P' | b'_')))
    };
    let mut n = budget;
    while n > 0 && after_introducer(n) {
        n -= 1;
    }
    // Nothing but introducers (hostile input): cut anywhere rather than never.
    if n == 0 {
        budget.max(1)
    } else {
        n
    }
}

/// The way into the server's event queue from other threads: every event also wakes the
/// server's `poll`, which watches the interactive clients' sockets itself.
#[derive(Clone)]
pub struct EventTx {
    tx: Sender<Event>,
    waker: crate::sys::Waker,
}

impl EventTx {
    pub(super) fn new(tx: Sender<Event>, waker: crate::sys::Waker) -> EventTx {
        EventTx { tx, waker }
    }

    pub fn send(&self, ev: Event) -> Result<(), mpsc::SendError<Event>> {
        self.tx.send(ev)?;
        self.waker.wake();
        Ok(())
    }
}

impl Server {
    /// Sleeps until an event is queued, a client sent something, or `timeout` passes; what
    /// clients sent is handled here, on this thread (a keystroke wakes the server
    /// directly, with no reader thread in between).
    pub(super) fn poll_inputs(&mut self, timeout: Option<Duration>) {
        // Each client's connection, and its terminal when it handed that over; then the
        // terminal lent to this thread, if any.
        let mut sources: Vec<(ClientId, bool)> = Vec::new();
        let lent = self.clients.lend.is_lent();
        let ready = {
            use std::os::fd::AsFd;
            let mut fds = vec![self.events.wake.fd()];
            for (id, c) in self
                .clients
                .by_id
                .iter()
                .filter(|(_, c)| c.backlog.wants_more())
            {
                fds.push(c.reader.as_fd());
                sources.push((*id, false));
                if let Some(tty) = &c.tty {
                    fds.push(tty.as_fd());
                    sources.push((*id, true));
                }
            }
            fds.extend(self.clients.lend.fd());
            match crate::sys::poll_readable(&fds, timeout) {
                Ok(r) => r,
                Err(e) => {
                    log::error!("server", "poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            }
        };
        if ready[0] {
            // Before the queue is read, so no event's wake-up is lost.
            self.events.wake.drain();
        }
        // The lent terminal first: its echo is what a keystroke waits for.
        if lent && ready.last().copied().unwrap_or(false) {
            self.read_lent();
        }
        for ((id, tty), _) in sources.into_iter().zip(&ready[1..]).filter(|(_, r)| **r) {
            if tty {
                self.read_tty(id);
            } else {
                self.read_client(id);
            }
        }
        let waiting: Vec<ClientId> = self
            .clients
            .by_id
            .iter()
            .filter(|(_, c)| !c.backlog.is_empty())
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.take_backlog(id);
        }
    }

    /// Whether any client's input was read and is not in the panes yet (in its backlog,
    /// a frame not whole yet, or an escape sequence the tokenizer waits to complete).
    pub(super) fn input_waiting(&self) -> bool {
        self.clients
            .by_id
            .values()
            .any(|c| !c.backlog.is_empty() || c.input_flush_at.is_some() || c.decoder.holds_part())
    }

    /// Handles what a client sent, in order, up to `INPUT_PER_TURN` bytes of input.
    fn take_backlog(&mut self, id: ClientId) {
        if self.input_waits_for_room(id) {
            return;
        }
        let mut budget = INPUT_PER_TURN;
        // A terminal with extended key reporting sends the prefix as an escape sequence.
        let extended = self
            .clients
            .by_id
            .get(&id)
            .is_some_and(|c| c.keys != crate::protocol::terminal::KeyProtocol::Legacy);
        let prefix = match extended {
            true => None,
            false => self.bindings_of(id).prefix.to_bytes().first().copied(),
        }
        .unwrap_or(crate::input::parse::ESC_BYTE);
        while budget > 0 {
            let Some((item, cost)) = self
                .clients
                .by_id
                .get_mut(&id)
                .and_then(|c| c.backlog.next(budget, prefix))
            else {
                return;
            };
            budget = budget.saturating_sub(cost);
            match item {
                Queued::Msg(msg) => self.handle_guarded(Event::ClientMsg(id, msg)),
                Queued::Gone(reason) => {
                    if let Some(c) = self.clients.by_id.get(&id) {
                        c.writer.close();
                    }
                    self.handle_guarded(Event::ClientGone(id, reason));
                    return;
                }
            }
        }
    }

    /// Whether a client's input waits this turn because the focused pane has less room
    /// than a turn of it: typing that arrives at once (a terminal that does not bracket
    /// pastes, a script) reaches a program that reads slowly whole, as a paste does. Not
    /// without end: once the program has read nothing for `INPUT_STALL`, input is taken
    /// again (and refused where it does not fit) until the pane has room.
    ///
    /// A paste in progress waits for its own pane, without that limit
    /// (`paste_waits_for_room`).
    fn input_waits_for_room(&mut self, id: ClientId) -> bool {
        if self.paste_waits_for_room(id) {
            return true;
        }
        let room = self
            .session
            .state
            .focused_terminal()
            .and_then(|tid| self.session.runtimes.get(tid))
            .map(|rt| rt.handle.input_room());
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return false;
        };
        let now = Instant::now();
        match (room, c.room_wait) {
            (Some(room), _) if room >= INPUT_PER_TURN + 64 => {
                c.room_wait = None;
                false
            }
            (None, _) => false,
            (Some(room), None) => {
                c.room_wait = Some((now, room));
                true
            }
            // The program read some since: wait on.
            (Some(room), Some((_, before))) if room > before => {
                c.room_wait = Some((now, room));
                true
            }
            (Some(_), Some((since, _))) => now.duration_since(since) < INPUT_STALL,
        }
    }

    /// When a client whose input waits for room looks again (see `input_waits_for_room`);
    /// `None` when it does not wait.
    pub(super) fn input_retry(&self, id: ClientId) -> Option<Instant> {
        let waits = self.paste_waits_for_room(id)
            || self
                .clients
                .by_id
                .get(&id)
                .and_then(|c| c.room_wait)
                .is_some_and(|(since, _)| since.elapsed() < INPUT_STALL);
        waits.then(|| Instant::now() + super::PASTE_RETRY)
    }

    /// Reads the keys typed into a client's terminal (a bounded amount per turn). A
    /// terminal that is gone ends that client.
    fn read_tty(&mut self, id: ClientId) {
        use std::os::fd::AsFd;
        let Some((tty, known)) = self
            .clients
            .by_id
            .get(&id)
            .and_then(|c| Some((c.tty.clone()?, c.size)))
        else {
            return;
        };
        let mut gone = false;
        let mut typed = Vec::new();
        for _ in 0..16 {
            match crate::sys::read_nb(tty.as_fd(), &mut self.clients.read_buf) {
                Ok(Some(0)) | Err(_) => {
                    gone = true;
                    break;
                }
                Ok(Some(n)) => {
                    typed.extend_from_slice(&self.clients.read_buf[..n]);
                    if n < crate::pty::DRAINED_BELOW {
                        // Typed keys, all there was: another read would only say so
                        // (keys typed meanwhile wake the next poll). A paste reads on.
                        break;
                    }
                }
                Ok(None) => break,
            }
        }
        if !typed.is_empty() {
            // Keys and size changes no longer travel together (the client reports the
            // size on its connection): a key typed after a resize must meet the new size,
            // so the terminal's own size is looked at first.
            let size = crate::sys::get_winsize(tty.as_fd())
                .ok()
                .filter(|(r, c)| *r > 0 && *c > 0)
                .map(|(r, c)| super::panes::sane_size((c, r)));
            if let Some(c) = self.clients.by_id.get_mut(&id) {
                if let Some((cols, rows)) = size.filter(|s| *s != known) {
                    c.backlog.push(ClientMsg::Resize(cols, rows));
                }
                c.backlog.push(ClientMsg::Input(typed));
            }
        }
        if gone {
            if let Some(c) = self.clients.by_id.get_mut(&id) {
                c.backlog.push_gone(None);
            }
        }
    }

    /// Reads what a client sent (a bounded amount per turn) into its backlog.
    fn read_client(&mut self, id: ClientId) {
        let mut gone = None;
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            use std::os::fd::AsFd;
            for _ in 0..16 {
                match crate::sys::recv_nb(c.reader.as_fd(), &mut self.clients.read_buf) {
                    Ok(Some(0)) | Err(_) => {
                        gone = Some(None);
                        break;
                    }
                    Ok(Some(n)) => c.decoder.push(&self.clients.read_buf[..n]),
                    Ok(None) => break,
                }
            }
            loop {
                match c.decoder.next_client() {
                    Ok(Some(msg)) => c.backlog.push(msg),
                    Ok(None) => break,
                    Err(e) => {
                        // A malformed frame ends this client's connection only.
                        gone = Some(Some(e.to_string()));
                        break;
                    }
                }
            }
            if let Some(reason) = gone {
                c.backlog.push_gone(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_cut_within_the_budget_but_never_right_after_an_introducer() {
        assert_eq!(cut(b"abcdef", 10), 6);
        assert_eq!(cut(b"abcdef", 4), 4);
        assert_eq!(cut(b"ab\x1b[A", 3), 2);
        assert_eq!(cut(b"ab\x1b]11;x", 4), 2);
        assert_eq!(cut(b"ab\x1b\x1b[A", 4), 2);
        // All introducers: cut anyway, the budget is the budget.
        assert_eq!(cut(b"\x1b\x1b\x1b\x1b", 2), 2);
    }

    #[test]
    fn the_backlog_gives_input_back_in_order_in_pieces_with_other_messages_between() {
        let mut b = Backlog::default();
        b.push(ClientMsg::Input(b"0123456789".to_vec()));
        b.push(ClientMsg::Ping);
        b.push(ClientMsg::Input(b"ab".to_vec()));
        b.push_gone(None);
        assert!(!b.wants_more());
        let mut got = Vec::new();
        while let Some((item, cost)) = b.next(4, 0x02) {
            assert!(cost <= 4 || matches!(item, Queued::Msg(ClientMsg::Ping) | Queued::Gone(_)));
            got.push(match item {
                Queued::Msg(ClientMsg::Input(bytes)) => String::from_utf8(bytes).unwrap(),
                Queued::Msg(_) => "msg".into(),
                Queued::Gone(_) => "gone".into(),
            });
        }
        assert_eq!(got, ["0123", "4567", "89", "msg", "ab", "gone"]);
        assert_eq!(b.bytes, 0);
        assert!(b.is_empty());
    }

    #[test]
    fn each_prefix_byte_costs_as_a_binding_might() {
        // (64 KiB of "ctrl+b c" would have made 32,768 panes in one turn.)
        let mut b = Backlog::default();
        b.push(ClientMsg::Input(b"\x02c".repeat(100)));
        let Some((Queued::Msg(ClientMsg::Input(piece)), cost)) = b.next(INPUT_PER_TURN, 0x02)
        else {
            panic!("input");
        };
        let prefixes = piece.iter().filter(|&&c| c == 0x02).count();
        assert_eq!(prefixes, INPUT_PER_TURN / PREFIX_COST - 1, "{piece:?}");
        assert!(cost <= INPUT_PER_TURN && cost >= piece.len());
        // With no budget to spare, the first one still goes (and what may follow it).
        let Some((Queued::Msg(ClientMsg::Input(piece)), _)) = b.next(1, 0x02) else {
            panic!("input");
        };
        assert_eq!(piece, b"\x02c");
        // Plain text is not slowed down.
        let mut b = Backlog::default();
        b.push(ClientMsg::Input(vec![b'x'; 100_000]));
        let Some((_, cost)) = b.next(INPUT_PER_TURN, 0x02) else {
            panic!("input");
        };
        assert_eq!(cost, INPUT_PER_TURN);
    }
}
