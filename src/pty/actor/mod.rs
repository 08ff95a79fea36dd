//! The per-terminal I/O actor: one thread holds the PTY master (`pty::master`, where the
//! order between it, direct writes and lent reads is kept) and serialises every read,
//! queued write, resize and shutdown of it. Callers never block: input goes through a
//! queue bounded in bytes and in entries (`try_write` → `WouldBlock` when full, and then
//! none of that write is taken), and a wake pipe interrupts the actor's `poll`. An idle
//! terminal costs no CPU: its thread sleeps in `poll` with no timeout, and after a second
//! it gives up the thread and waits in the lot (see below).
//!
//! Writes are resumed at an offset after a partial write, so large pastes arrive intact
//! and in order while output keeps being read (a program that does not read its input
//! must not stop us from draining its output).
//!
//! A terminal with nothing happening for a second gives up its thread and waits in the
//! lot (`lot.rs`), which starts one again for it when output or a message comes: the
//! actor owns the master either way, only the thread it runs on changes.
//!
//! Here: the handle and the messages; `run.rs`: the thread's loop.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::time::Duration;

mod lot;
mod program;
mod run;

pub use program::Program;
use run::Actor;
pub(super) use run::{absorb, feed_piece};

use super::master::{Lent, Master, Shared};
use super::SharedEmulator;
use crate::sys::{WakePipe, Waker};

/// Queued input entries per terminal before `try_write` reports `WouldBlock`; the actor
/// also holds at most this many not yet written (so tiny writes cannot pile up either).
const INPUT_QUEUE_CHUNKS: usize = 1024;
/// Input bytes one terminal holds, queued and not yet written, before `try_write` reports
/// `WouldBlock`: a program that does not read its input costs at most this much memory.
/// 4 MiB: a few big pastes, or a script's bulk `pane.send`, fit; anything beyond is
/// refused whole, never half written.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;
// A paste reaches a pane in pieces of `PASTE_PIECE`; each must fit the queue on its own,
// or even a pane with nothing queued would refuse it whole.
const _: () = assert!(crate::input::parse::PASTE_PIECE <= MAX_INPUT_BYTES);
/// The sending end of a terminal's input queue: at most `INPUT_QUEUE_CHUNKS` entries wait
/// in it. (A `sync_channel` would allocate and write all its slots up front: 80 KiB per
/// pane, most of an idle pane's memory; this holds only what is queued.)
pub(super) struct InputTx(crate::queue::Tx<Input>);

/// The actor's end of the input queue.
pub(super) struct InputRx(crate::queue::Rx<Input>);

pub(super) fn input_queue() -> (InputTx, InputRx) {
    let (tx, rx) = crate::queue::queue();
    (InputTx(tx), InputRx(rx))
}

impl InputTx {
    pub(super) fn try_send(&self, input: Input) -> Result<(), TrySendError<Input>> {
        self.0.send_within(input, INPUT_QUEUE_CHUNKS)
    }
}

impl InputRx {
    pub(super) fn try_recv(&self) -> Result<Input, TryRecvError> {
        self.0.try_recv()
    }

    pub(super) fn release(&self) {
        self.0.release()
    }
}

/// Read buffer size; one read never exceeds this.
const READ_CHUNK: usize = 64 * 1024;
/// The read buffer a burst starts with, on the actor's stack: a read that fills it has
/// the burst go on in a `READ_CHUNK` one, kept until the terminal is idle again. A pane
/// that only prints a prompt now and then holds no read buffer while it waits (a zeroed
/// 64 KiB one each was 50 KiB of RSS per idle pane).
const FIRST_READ: usize = 4 * 1024;
/// Bytes read in one burst before the actor services its queues again, so a flood of
/// output cannot starve input or a shutdown request.
const READ_BURST: usize = 1024 * 1024;
/// How long a closing terminal's child gets after SIGHUP before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// A terminal nobody sees reads its output in batches: after a small read it waits this
/// long before reading again, so a program printing a line at a time wakes us a few
/// times a second, not once per line (its renderer looks at most 20 times a second).
const BACKGROUND_READ_DELAY: Duration = Duration::from_millis(50);
/// A read at least this big means bulk output: read on at once, never throttle it.
const BACKGROUND_BULK: usize = 16 * 1024;

/// What the actor tells its owner. Delivered through a callback so this module does not
/// depend on the server's event types.
#[derive(Debug)]
pub enum PtyEvent {
    /// New output was parsed into the emulator (coalesced: sent only when the dirty flag
    /// was clear).
    Output,
    Bell,
    /// A complete OSC 52 sequence to pass to clients.
    Clipboard(Vec<u8>),
    /// The window title changed (OSC 0/2): the title, and the emulator's sequence number
    /// when it was read (events from the actor and from a borrower's reads may arrive out
    /// of order; the later number wins).
    Title {
        title: String,
        seq: u64,
    },
    /// The program ended (EOF on the master). Exit code when the child was ours to reap.
    Exited(Option<i32>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error(
        "the pane's program is not reading its input ({} MiB wait for it already); \
         try again once it reads",
        MAX_INPUT_BYTES >> 20
    )]
    WouldBlock,
    #[error("the pane's program has exited")]
    Closed,
}

/// One entry of a terminal's input queue.
pub(super) enum Input {
    Bytes(Vec<u8>),
    /// Text, then — once the program has shown something since (it read the text), or
    /// `ECHO_WAIT` at most — a pause, then Enter: the Enter lands after the text and
    /// before any input queued later. Programs that tell typing from a paste by time
    /// (Codex, Claude Code) take an Enter read with the text, or soon after, for a new
    /// line in a paste: on a loaded machine a pause counted from our write can be gone
    /// by the time they read.
    Submit {
        text: Vec<u8>,
        enter: Vec<u8>,
        delay: Duration,
    },
}

/// Input waiting to be written: bytes, or a pause that holds everything behind it.
enum Chunk {
    Bytes(Vec<u8>),
    Pause(Duration),
    /// A pause that starts once the program showed something (see `Input::Submit`).
    PauseAfterEcho(Duration),
}

/// How long a submit's Enter waits for the program to show its text, at most (a program
/// that does not echo, reading a password, gets it then).
const ECHO_WAIT: Duration = Duration::from_secs(1);

pub(super) enum Control {
    Resize {
        rows: u16,
        cols: u16,
    },
    Shutdown,
    /// Stop reading and writing and report (live handoff); wait for `Resume`, or for
    /// `Shutdown` (which then respects the preserve flag).
    Pause(SyncSender<std::io::Result<Paused>>),
    Resume,
    /// Stop reading the terminal (after what was read is processed) and answer with a
    /// duplicate of the master for a [`Lent`] to read from; `None` while paused.
    Lend(SyncSender<Option<OwnedFd>>),
    /// Read it again (a [`Lent`] was dropped, or a lend not waited for).
    Return,
}

/// What a paused actor hands over: a duplicate of its master and the input it had not
/// written yet (it keeps its own copy, to go on if the handoff is rolled back).
pub struct Paused {
    pub master: OwnedFd,
    pub pending_input: Vec<u8>,
}

pub type Notify = Box<dyn Fn(PtyEvent) + Send + 'static>;

pub struct PtyHandle {
    /// The direct writes, the input queue and the counters (`pty::master`).
    shared: Arc<Shared>,
    control: crate::queue::Tx<Control>,
    waker: Waker,
    /// For a [`Lent`] to take its reads into.
    emulator: SharedEmulator,
    /// Disconnected once the actor has ended (whichever thread it ended on).
    finished: Option<crate::queue::Rx<()>>,
}

pub struct ActorParts {
    pub master: OwnedFd,
    pub program: Program,
    pub emulator: SharedEmulator,
    pub notify: Notify,
    pub name: String,
    /// Start paused (an imported terminal waits for the handoff to commit).
    pub paused: bool,
    /// Start with the program owned by someone else (see [`PtyHandle::preserve`]).
    pub preserve: bool,
    /// Input to write before anything queued later.
    pub pending_input: Vec<u8>,
}

/// A pause that was asked for; [`PauseTicket::wait`] for the actor's answer.
pub struct PauseTicket(Receiver<std::io::Result<Paused>>);

impl PauseTicket {
    pub fn wait(self, timeout: Duration) -> Result<Paused, PauseError> {
        match self.0.recv_timeout(timeout) {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(e)) => Err(PauseError::Failed(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(PauseError::Timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(PauseError::Closed),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PauseError {
    #[error("the terminal did not pause in time")]
    Timeout,
    #[error("the terminal has closed")]
    Closed,
    /// It could not pause (and went on as before).
    #[error("the terminal could not pause: {0}")]
    Failed(std::io::Error),
}

impl PtyHandle {
    pub fn start(parts: ActorParts) -> std::io::Result<PtyHandle> {
        let wake = WakePipe::new()?;
        let waker = wake.waker();
        let (input_tx, input_rx) = input_queue();
        let (control_tx, control_rx) = crate::queue::queue();
        let (finished_tx, finished) = crate::queue::queue();
        // A paused terminal takes no direct writes (see `Control::Pause`).
        let master = Master::new(
            parts.master,
            parts.paused,
            parts.preserve,
            input_tx,
            waker.clone(),
        )?;
        let shared = master.shared.clone();
        let emulator = parts.emulator.clone();
        let mut actor = Actor {
            taken: 0,
            master,
            program: parts.program,
            emulator: parts.emulator,
            notify: parts.notify,
            wake,
            input: input_rx,
            control: control_rx,
            pending: VecDeque::new(),
            offset: 0,
            pending_len: 0,
            hold_until: None,
            echo: None,
            paused: parts.paused,
            deferred_resize: None,
            deferred_resizes: 0,
            lent: false,
            lent_hup: false,
            read_after: None,
            stack: None,
            trimmed: false,
            bulk: None,
            name: parts.name.clone(),
            _finished: finished_tx,
        };
        if !parts.pending_input.is_empty() {
            actor.push_counted(parts.pending_input);
        }
        std::thread::Builder::new()
            .name(parts.name)
            .spawn(move || actor.run())?;
        Ok(PtyHandle {
            shared,
            control: control_tx,
            waker,
            emulator,
            finished: Some(finished),
        })
    }

    /// The handle of a terminal whose program has ended and whose master is closed, as
    /// that of an actor that ran to its end: writes are refused, pauses fail, resizes and
    /// shutdown do nothing. For a finished pane's screen carried by a live handoff.
    pub fn ended(emulator: SharedEmulator) -> std::io::Result<PtyHandle> {
        let waker = WakePipe::new()?.waker();
        let (control, _) = crate::queue::queue();
        Ok(PtyHandle {
            shared: Master::ended(waker.clone()),
            control,
            waker,
            emulator,
            finished: None,
        })
    }

    /// Stops all I/O on the terminal and hands over what a new owner needs. Bytes the
    /// actor read are all in the emulator by then; bytes it did not read stay in the
    /// kernel for whoever reads next.
    pub fn pause(&self, timeout: Duration) -> Result<Paused, PauseError> {
        self.request_pause()?.wait(timeout)
    }

    /// Asks for a pause without waiting (to pause many terminals at once).
    pub fn request_pause(&self) -> Result<PauseTicket, PauseError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.control
            .send(Control::Pause(tx))
            .map_err(|_| PauseError::Closed)?;
        self.waker.wake();
        Ok(PauseTicket(rx))
    }

    pub fn resume(&self) {
        let _ = self.control.send(Control::Resume);
        self.waker.wake();
    }

    /// From now on, closing this terminal leaves its program running (`true`: another
    /// server owns it) or ends it (`false`: we do).
    pub fn preserve(&self, on: bool) {
        self.shared.preserve.store(on, Ordering::Release);
    }

    /// Writes bytes for the program: at once if the PTY takes them and nothing is queued
    /// ahead, else queued for the actor; never blocks. All or nothing: refused writes
    /// (`WouldBlock`: more than `MAX_INPUT_BYTES` would wait) leave no byte behind.
    pub fn try_write(&self, bytes: Vec<u8>) -> Result<(), WriteError> {
        self.shared.try_write(bytes)
    }

    /// Bytes of input the terminal would still take now.
    pub fn input_room(&self) -> usize {
        MAX_INPUT_BYTES.saturating_sub(self.shared.queued())
    }

    /// Bytes of input taken for the program so far (typed, pasted, sent through the API).
    pub fn typed(&self) -> u64 {
        self.shared.typed()
    }

    /// Queues `text`, a pause of `delay`, then `enter`, as one unit; never blocks.
    pub fn try_submit(
        &self,
        text: Vec<u8>,
        enter: Vec<u8>,
        delay: Duration,
    ) -> Result<(), WriteError> {
        let len = text.len() + enter.len();
        self.shared.reserve(len)?;
        self.shared
            .enqueue_reserved(Input::Submit { text, enter, delay }, len)
    }

    /// Input sent after a resize reaches the program after it: until the actor has
    /// applied the size, input is queued behind it rather than written directly (a shell
    /// asked `tput cols` right after must see the new size).
    pub fn resize(&self, rows: u16, cols: u16) {
        self.shared.hold();
        if self.control.send(Control::Resize { rows, cols }).is_err() {
            self.shared.release(1);
            return;
        }
        self.waker.wake();
    }

    /// Lends the reading of the terminal: the actor stops reading (what it read is in the
    /// emulator by then) and a [`Lent`] comes back to read with; dropping it gives the
    /// reading back. `None` if the actor is paused, gone, or slow to answer.
    pub fn lend_reads(&self, timeout: Duration) -> Option<Lent> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.control.send(Control::Lend(tx)).ok()?;
        self.waker.wake();
        match rx.recv_timeout(timeout) {
            Ok(fd) => Some(Lent::new(
                fd?,
                self.shared.clone(),
                self.emulator.clone(),
                self.control.clone(),
            )),
            Err(_) => {
                // It may still lend after we stopped waiting: taking it back, next in its
                // queue, leaves it reading either way.
                if self.control.send(Control::Return).is_ok() {
                    self.waker.wake();
                }
                None
            }
        }
    }

    /// Whether anybody sees the terminal: output nobody sees is read in batches.
    pub fn set_background(&self, background: bool) {
        if self.shared.background.swap(background, Ordering::AcqRel) != background {
            // Shown again: whatever waits is read now, not after the delay. Hidden: an
            // idle actor looks again, to wait in the lot.
            self.waker.wake();
        }
    }

    /// The terminal's foreground process group, asked of the terminal itself (one ioctl on
    /// the master; no /proc). None once the terminal is closed.
    pub fn foreground_pgrp(&self) -> Option<i32> {
        self.shared.foreground_pgrp()
    }

    /// Marks the output as seen by the renderer; the next output sends a new `Output`.
    pub fn take_dirty(&self) -> bool {
        self.shared.take_dirty()
    }

    /// Asks the actor to close the terminal (SIGHUP, then SIGKILL after a grace period)
    /// without waiting for it.
    pub fn shutdown(&self) {
        let _ = self.control.send(Control::Shutdown);
        self.waker.wake();
    }

    /// Shuts down and waits until the child is reaped (bounded by the kill grace period).
    pub fn shutdown_and_join(mut self) {
        self.shutdown();
        if let Some(finished) = self.finished.take() {
            // Nothing is ever sent: this returns once the actor is dropped.
            let _ = finished.recv();
        }
    }
}

impl Drop for PtyHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests;
