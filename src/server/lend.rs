//! The pane being typed in is read by the server thread itself: its actor lends it the
//! reading (`PtyHandle::lend_reads`, a `pty::Lent`), so a keystroke's echo is read, fed to
//! the emulator and drawn in one wake-up of this thread — one hand-off fewer than through
//! the pane's I/O thread, the same path tmux's single loop takes. Here is only the policy:
//! which terminal is lent, when lending starts, stops and backs off, and how much one turn
//! may read; why a lent read keeps every byte in order is `pty::master`'s to say.
//!
//! Invariants: at most one terminal is lent, and only while a client is attached and no
//! handoff runs; the `pty::Lent` is dropped when the lending ends, which gives the reading
//! back and closes its descriptor (so a closed terminal is really closed); a terminal that
//! hung up is given back and never lent again (its actor sees the end and reports the
//! exit).

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use super::{Event, Server};
use crate::model::ids::TerminalId;
use crate::pty::LentRead;

/// How long the actor may take to stop reading. It is normally asleep in `poll` and
/// answers at once; one busy with a burst of output is left alone for `LEND_BACKOFF`.
const LEND_TIMEOUT: Duration = Duration::from_millis(5);
/// No lending for this long after an actor did not answer, or after the lent terminal
/// poured out bulk output (its actor takes that, in parallel with this thread).
const LEND_BACKOFF: Duration = Duration::from_secs(1);
/// Bytes read per turn before other work (other clients' keys, frames) gets its go.
const READ_BURST: usize = 16 * 1024;
/// Turns in a row that read a whole `READ_BURST`: bulk output, given back to the actor.
const BULK_TURNS: u8 = 4;
/// A turn whose output took longer than this to take in (sequences that each redraw the
/// whole screen, say) gives the terminal back to its actor at once: this thread serves
/// every client and must not spend its turns on one program's output.
const TURN_BUDGET: Duration = Duration::from_millis(2);

pub(crate) struct Lent {
    pub tid: TerminalId,
    reads: crate::pty::Lent,
    /// Turns in a row that read a whole `READ_BURST`.
    full_turns: u8,
}

impl Server {
    /// Lends the focused terminal's reads to this thread (and gives back the previous
    /// one's) when that changed.
    pub(crate) fn update_lending(&mut self) {
        let want = if self.clients.is_empty() || self.lending_off {
            None
        } else {
            self.state.focused_terminal()
        }
        .filter(|t| Some(*t) != self.lend_refused && self.runtimes.get(*t).is_some())
        .filter(|_| self.lend_after.is_none_or(|t| Instant::now() >= t));
        if want == self.lent.as_ref().map(|l| l.tid) {
            return;
        }
        self.unlend();
        let Some(tid) = want else {
            return;
        };
        match self
            .runtimes
            .get(tid)
            .and_then(|rt| rt.handle.lend_reads(LEND_TIMEOUT))
        {
            Some(reads) => {
                self.lent = Some(Lent {
                    tid,
                    reads,
                    full_turns: 0,
                })
            }
            None => self.lend_after = Some(Instant::now() + LEND_BACKOFF),
        }
    }

    /// Tells the terminals whether anybody sees them (output nobody sees is read in
    /// batches; see `PtyHandle::set_background`), when that changed.
    pub(crate) fn update_background(&mut self) {
        let mut shown: Vec<TerminalId> = Vec::new();
        if !self.clients.is_empty() {
            if let Some(tab) = self.state.active_tab() {
                let panes = if tab.zoomed {
                    vec![tab.focused]
                } else {
                    tab.layout.panes()
                };
                shown.extend(
                    panes
                        .iter()
                        .filter_map(|p| self.state.panes.get(p).map(|ps| ps.terminal)),
                );
            }
        }
        shown.sort_unstable();
        if shown == self.shown && self.shown_count == self.runtimes.len() {
            return;
        }
        for tid in self.runtimes.ids() {
            if let Some(rt) = self.runtimes.get(tid) {
                rt.handle.set_background(shown.binary_search(&tid).is_err());
            }
        }
        self.shown = shown;
        self.shown_count = self.runtimes.len();
    }

    /// Gives the lent terminal's reads back to its actor (dropping the `pty::Lent` does).
    pub(crate) fn unlend(&mut self) {
        self.lent = None;
    }

    /// The lent terminal's descriptor, for the server's poll.
    pub(crate) fn lent_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.lent.as_ref().map(|l| l.reads.as_fd())
    }

    /// Reads what the lent terminal's program wrote and handles it as its actor would.
    pub(crate) fn read_lent(&mut self) {
        let Some(lent) = self.lent.as_mut() else {
            return;
        };
        let tid = lent.tid;
        if self.runtimes.get(tid).is_none() {
            return;
        }
        let mut events = Vec::new();
        let mut ended = false;
        let mut total = 0;
        let start = Instant::now();
        let mut slow = false;
        while total < READ_BURST && !slow {
            match lent.reads.read(&mut events) {
                LentRead::Ended => {
                    ended = true;
                    break;
                }
                LentRead::Took(n) => {
                    total += n;
                    slow = start.elapsed() > TURN_BUDGET;
                }
                LentRead::Nothing => break,
            }
        }
        lent.full_turns = if total >= READ_BURST {
            lent.full_turns.saturating_add(1)
        } else {
            0
        };
        let bulk = lent.full_turns >= BULK_TURNS || slow;
        if ended {
            // The program is gone (or going): its actor sees the end and reports it.
            self.unlend();
            self.lend_refused = Some(tid);
        } else if bulk {
            self.unlend();
            self.lend_after = Some(Instant::now() + LEND_BACKOFF);
        }
        for ev in events {
            self.handle_guarded(Event::Pty(tid, ev));
        }
    }
}
