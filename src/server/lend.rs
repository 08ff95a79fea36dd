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

use std::os::fd::{AsFd, BorrowedFd};
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

/// The server's lending: one field of `Server`, so it moves as one.
#[derive(Default)]
pub(crate) struct Lending {
    /// The terminal whose output this thread reads itself (the pane being typed in).
    loan: Option<Loan>,
    /// A terminal that hung up while lent: never lent again.
    refused: Option<TerminalId>,
    /// No lending while a handoff moves the terminals.
    off: bool,
    /// No lending before then (an actor that did not answer, bulk output).
    after: Option<Instant>,
}

struct Loan {
    tid: TerminalId,
    reads: crate::pty::Lent,
    /// Turns in a row that read a whole `READ_BURST`.
    full_turns: u8,
}

impl Lending {
    pub(crate) fn is_lent(&self) -> bool {
        self.loan.is_some()
    }

    /// The lent terminal's descriptor, for the server's poll.
    pub(crate) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.loan.as_ref().map(|l| l.reads.as_fd())
    }

    /// Gives the lent terminal's reads back to its actor (dropping the `pty::Lent` does).
    pub(crate) fn unlend(&mut self) {
        self.loan = None;
    }

    /// No lending until [`Lending::resume`] (a handoff moves the terminals: their actors
    /// read them again before they are paused).
    pub(crate) fn suspend(&mut self) {
        self.off = true;
        self.unlend();
    }

    pub(crate) fn resume(&mut self) {
        self.off = false;
    }
}

impl Server {
    /// Lends the focused terminal's reads to this thread (and gives back the previous
    /// one's) when that changed.
    pub(crate) fn update_lending(&mut self) {
        let lend = &self.clients.lend;
        let want = if self.clients.by_id.is_empty() || lend.off {
            None
        } else {
            self.session.state.focused_terminal()
        }
        .filter(|t| Some(*t) != lend.refused && self.session.runtimes.get(*t).is_some())
        .filter(|_| lend.after.is_none_or(|t| Instant::now() >= t));
        if want == lend.loan.as_ref().map(|l| l.tid) {
            return;
        }
        self.clients.lend.unlend();
        let Some(tid) = want else {
            return;
        };
        match self
            .session
            .runtimes
            .get(tid)
            .and_then(|rt| rt.handle.lend_reads(LEND_TIMEOUT))
        {
            Some(reads) => {
                self.clients.lend.loan = Some(Loan {
                    tid,
                    reads,
                    full_turns: 0,
                })
            }
            None => self.clients.lend.after = Some(Instant::now() + LEND_BACKOFF),
        }
    }

    /// Tells the terminals whether anybody sees them (output nobody sees is read in
    /// batches; see `PtyHandle::set_background`), when that changed.
    pub(crate) fn update_background(&mut self) {
        let mut shown: Vec<TerminalId> = Vec::new();
        if !self.clients.by_id.is_empty() {
            if let Some(tab) = self.session.state.active_tab() {
                let panes = if tab.zoomed {
                    vec![tab.focused]
                } else {
                    tab.layout.panes()
                };
                shown.extend(
                    panes
                        .iter()
                        .filter_map(|p| self.session.state.panes.get(p).map(|ps| ps.terminal)),
                );
            }
        }
        shown.sort_unstable();
        if shown == self.session.shown && self.session.shown_count == self.session.runtimes.len() {
            return;
        }
        for tid in self.session.runtimes.ids() {
            if let Some(rt) = self.session.runtimes.get(tid) {
                let hidden = shown.binary_search(&tid).is_err();
                rt.handle.set_background(hidden);
                // A machine's pane mirrored here is told to look again (a SIGWINCH, which
                // a process that has no handler for it yet ignores): its host holds back
                // what it prints while nobody here sees it.
                let was_hidden = self.session.shown.binary_search(&tid).is_err();
                let view = (self.session.state.terminals.get(&tid))
                    .is_some_and(|t| crate::machine::is_view(&t.argv));
                if view && hidden != was_hidden {
                    if let Some(pid) = rt.pid {
                        crate::sys::signal_pid(pid as i32, nix::sys::signal::Signal::SIGWINCH);
                    }
                }
            }
        }
        self.session.shown = shown;
        self.session.shown_count = self.session.runtimes.len();
    }

    /// Reads what the lent terminal's program wrote and handles it as its actor would.
    pub(crate) fn read_lent(&mut self) {
        let Some(loan) = self.clients.lend.loan.as_mut() else {
            return;
        };
        let tid = loan.tid;
        if self.session.runtimes.get(tid).is_none() {
            return;
        }
        let mut events = Vec::new();
        let mut ended = false;
        let mut total = 0;
        let start = Instant::now();
        let mut slow = false;
        while total < READ_BURST && !slow {
            match loan.reads.read(&mut events) {
                LentRead::Ended => {
                    ended = true;
                    break;
                }
                LentRead::Took { n, drained } => {
                    total += n;
                    slow = start.elapsed() > TURN_BUDGET;
                    if drained {
                        break;
                    }
                }
                LentRead::Nothing => break,
            }
        }
        loan.full_turns = if total >= READ_BURST {
            loan.full_turns.saturating_add(1)
        } else {
            0
        };
        let bulk = loan.full_turns >= BULK_TURNS || slow;
        if ended {
            // The program is gone (or going): its actor sees the end and reports it.
            self.clients.lend.unlend();
            self.clients.lend.refused = Some(tid);
        } else if bulk {
            self.clients.lend.unlend();
            self.clients.lend.after = Some(Instant::now() + LEND_BACKOFF);
        }
        for ev in events {
            self.handle_guarded(Event::Pty(tid, ev));
        }
    }
}
