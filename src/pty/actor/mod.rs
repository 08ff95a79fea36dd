//! The per-terminal I/O actor: one thread owns the PTY master and serialises every read,
//! write, resize and shutdown of it. Callers never block: input goes through a queue
//! bounded in bytes and in entries (`try_write` → `WouldBlock` when full, and then none of
//! that write is taken), and a wake pipe interrupts the actor's `poll`. An idle terminal
//! costs nothing: the thread sleeps in `poll` with no timeout.
//!
//! Writes are resumed at an offset after a partial write, so large pastes arrive intact
//! and in order while output keeps being read (a program that does not read its input
//! must not stop us from draining its output).
//!
//! Here: the handle and the messages; `run.rs`: the thread's loop.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

mod program;
mod run;

pub use program::Program;
pub use run::feed_piece;
use run::{absorb, Actor};

use super::SharedEmulator;
use crate::sys::{self, WakePipe, Waker};

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
/// Read buffer size; one read never exceeds this.
const READ_CHUNK: usize = 64 * 1024;
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
enum Input {
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

enum Control {
    Resize {
        rows: u16,
        cols: u16,
    },
    Shutdown,
    /// Stop reading and writing and report (live handoff); wait for `Resume`, or for
    /// `Shutdown` (which then respects the preserve flag).
    Pause(SyncSender<Result<Paused, String>>),
    Resume,
    /// Stop reading the terminal (after what was read is processed) and answer with a
    /// duplicate of the master for the borrower to read from; `None` while paused.
    Lend(SyncSender<Option<OwnedFd>>),
    /// Read it again.
    Return,
}

/// What a paused actor hands over: a duplicate of its master and the input it had not
/// written yet (it keeps its own copy, to go on if the handoff is rolled back).
pub struct Paused {
    pub master: OwnedFd,
    pub pending_input: Vec<u8>,
}

pub type Notify = Box<dyn Fn(PtyEvent) + Send + 'static>;

/// Lets the caller's thread write input straight into the PTY when nothing is queued
/// ahead of it, so a keystroke costs no hop to the actor thread. Whoever writes holds the
/// lock (the actor too), so bytes never interleave.
struct Direct {
    /// A duplicate of the master; taken away when the actor ends, so a closed terminal is
    /// really closed (its hangup depends on the last descriptor going).
    fd: std::sync::Mutex<Option<OwnedFd>>,
    /// Inputs (and query answers) not yet completely written by the actor.
    busy: std::sync::atomic::AtomicUsize,
    /// Bytes accepted and not yet written (queued, or pending in the actor): reserved
    /// before a write is taken, released as the actor writes them.
    queued: std::sync::atomic::AtomicUsize,
    /// Bytes of input taken, all told (the echo of what was typed is not the program's
    /// own work: `agent::activity`).
    typed: std::sync::atomic::AtomicU64,
}

pub struct PtyHandle {
    direct: Arc<Direct>,
    input: SyncSender<Input>,
    control: mpsc::Sender<Control>,
    waker: Waker,
    dirty: Arc<AtomicBool>,
    /// Set: closing the terminal leaves its program running (another server owns it).
    preserve: Arc<AtomicBool>,
    /// Set while nobody sees the terminal (see `BACKGROUND_READ_DELAY`).
    background: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
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
pub struct PauseTicket(Receiver<Result<Paused, String>>);

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
    Failed(String),
}

impl PtyHandle {
    pub fn start(parts: ActorParts) -> std::io::Result<PtyHandle> {
        let wake = WakePipe::new()?;
        let waker = wake.waker();
        let (input_tx, input_rx) = mpsc::sync_channel(INPUT_QUEUE_CHUNKS);
        let (control_tx, control_rx) = mpsc::channel();
        let dirty = Arc::new(AtomicBool::new(false));
        let preserve = Arc::new(AtomicBool::new(parts.preserve));
        let background = Arc::new(AtomicBool::new(false));
        let direct = Arc::new(Direct {
            fd: std::sync::Mutex::new(Some(sys::dup_cloexec(parts.master.as_fd())?)),
            // A paused terminal takes no direct writes (see `Control::Pause`).
            busy: std::sync::atomic::AtomicUsize::new(usize::from(parts.paused)),
            queued: std::sync::atomic::AtomicUsize::new(0),
            typed: std::sync::atomic::AtomicU64::new(0),
        });
        let mut actor = Actor {
            direct: direct.clone(),
            taken: 0,
            master: parts.master,
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
            dirty: dirty.clone(),
            preserve: preserve.clone(),
            paused: parts.paused,
            deferred_resize: None,
            deferred_resizes: 0,
            lent: false,
            lent_hup: false,
            background: background.clone(),
            read_after: None,
        };
        if !parts.pending_input.is_empty() {
            actor.push_counted(parts.pending_input);
        }
        let thread = std::thread::Builder::new()
            .name(parts.name)
            .spawn(move || actor.run())?;
        Ok(PtyHandle {
            direct,
            input: input_tx,
            control: control_tx,
            waker,
            dirty,
            preserve,
            background,
            thread: Some(thread),
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
        self.preserve.store(on, Ordering::Release);
    }

    /// Writes bytes for the program: at once if the PTY takes them and nothing is queued
    /// ahead, else queued for the actor; never blocks. All or nothing: refused writes
    /// (`WouldBlock`: more than `MAX_INPUT_BYTES` would wait) leave no byte behind.
    pub fn try_write(&self, bytes: Vec<u8>) -> Result<(), WriteError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.reserve(bytes.len())?;
        match self.write_direct(&bytes) {
            Some(n) if n == bytes.len() => Ok(()),
            Some(n) => self.enqueue_reserved(Input::Bytes(bytes[n..].to_vec()), bytes.len() - n),
            None => {
                let len = bytes.len();
                self.enqueue_reserved(Input::Bytes(bytes), len)
            }
        }
    }

    /// Bytes of input the terminal would still take now.
    pub fn input_room(&self) -> usize {
        MAX_INPUT_BYTES.saturating_sub(self.direct.queued.load(Ordering::Acquire))
    }

    /// Takes room for `len` more bytes of input, or says the terminal has no room left.
    fn reserve(&self, len: usize) -> Result<(), WriteError> {
        let before = self.direct.queued.fetch_add(len, Ordering::AcqRel);
        if before.saturating_add(len) > MAX_INPUT_BYTES {
            self.direct.queued.fetch_sub(len, Ordering::AcqRel);
            return Err(WriteError::WouldBlock);
        }
        self.direct.typed.fetch_add(len as u64, Ordering::AcqRel);
        Ok(())
    }

    /// Bytes of input taken for the program so far (typed, pasted, sent through the API).
    pub fn typed(&self) -> u64 {
        self.direct.typed.load(Ordering::Acquire)
    }

    /// How much of `bytes` (reserved by the caller) went straight into the PTY; `None`
    /// when it must be queued (input is queued ahead, the actor is writing, or the PTY is
    /// full or closed). What was written is released from the reservation.
    fn write_direct(&self, bytes: &[u8]) -> Option<usize> {
        if self.direct.busy.load(Ordering::Acquire) != 0 {
            return None;
        }
        let guard = self.direct.fd.try_lock().ok()?;
        let fd = guard.as_ref()?;
        if self.direct.busy.load(Ordering::Acquire) != 0 {
            return None;
        }
        match sys::write_nb(fd.as_fd(), bytes) {
            Ok(Some(n)) if n > 0 => {
                self.direct.queued.fetch_sub(n, Ordering::AcqRel);
                if n < bytes.len() {
                    // The rest goes to the queue before the lock is let go, so nothing
                    // can be written between the two parts.
                    self.direct.busy.fetch_add(1, Ordering::AcqRel);
                    let rest = Input::Bytes(bytes[n..].to_vec());
                    if self.input.try_send(rest).is_err() {
                        self.direct.busy.fetch_sub(1, Ordering::AcqRel);
                        return Some(n); // the caller queues it (and hears why not)
                    }
                    self.waker.wake();
                    return Some(bytes.len());
                }
                Some(n)
            }
            _ => None,
        }
    }

    /// Queues `text`, a pause of `delay`, then `enter`, as one unit; never blocks.
    pub fn try_submit(
        &self,
        text: Vec<u8>,
        enter: Vec<u8>,
        delay: Duration,
    ) -> Result<(), WriteError> {
        let len = text.len() + enter.len();
        self.reserve(len)?;
        self.enqueue_reserved(Input::Submit { text, enter, delay }, len)
    }

    /// Queues input whose `len` bytes are already reserved (released again if refused).
    fn enqueue_reserved(&self, input: Input, len: usize) -> Result<(), WriteError> {
        self.direct.busy.fetch_add(1, Ordering::AcqRel);
        match self.input.try_send(input) {
            Ok(()) => {
                self.waker.wake();
                Ok(())
            }
            Err(e) => {
                self.direct.busy.fetch_sub(1, Ordering::AcqRel);
                self.direct.queued.fetch_sub(len, Ordering::AcqRel);
                match e {
                    TrySendError::Full(_) => Err(WriteError::WouldBlock),
                    TrySendError::Disconnected(_) => Err(WriteError::Closed),
                }
            }
        }
    }

    /// Input sent after a resize reaches the program after it: until the actor has
    /// applied the size, input is queued behind it rather than written directly (a shell
    /// asked `tput cols` right after must see the new size).
    pub fn resize(&self, rows: u16, cols: u16) {
        self.direct.busy.fetch_add(1, Ordering::AcqRel);
        if self.control.send(Control::Resize { rows, cols }).is_err() {
            self.direct.busy.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        self.waker.wake();
    }

    /// Lends the reading of the terminal: the actor stops reading (what it read is in the
    /// emulator by then) and a duplicate of the master comes back to read from, with
    /// [`PtyHandle::absorb`]. `None` if the actor is paused, gone, or slow to answer.
    pub fn lend_reads(&self, timeout: Duration) -> Option<OwnedFd> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.control.send(Control::Lend(tx)).ok()?;
        self.waker.wake();
        match rx.recv_timeout(timeout) {
            Ok(fd) => fd,
            Err(_) => {
                // It may still lend after we stopped waiting: taking it back, next in its
                // queue, leaves it reading either way.
                self.return_reads();
                None
            }
        }
    }

    /// Gives the reading back to the actor.
    pub fn return_reads(&self) {
        if self.control.send(Control::Return).is_ok() {
            self.waker.wake();
        }
    }

    /// What the borrower of the reads read: into the emulator, as the actor would (answers
    /// queued back to the program, the dirty flag set); the events to handle, `Output`
    /// among them when the renderer had seen everything before.
    pub fn absorb(&self, emulator: &SharedEmulator, bytes: &[u8]) -> Vec<PtyEvent> {
        let (responses, mut events) = absorb(emulator, bytes);
        // Answers for a program that does not read its input are dropped past the limit
        // (a terminal would block instead; we must not).
        if !responses.is_empty() && self.reserve(responses.len()).is_ok() {
            let len = responses.len();
            let _ = self.enqueue_reserved(Input::Bytes(responses), len);
        }
        if !self.dirty.swap(true, Ordering::AcqRel) {
            events.push(PtyEvent::Output);
        }
        events
    }

    /// Whether anybody sees the terminal: output nobody sees is read in batches.
    pub fn set_background(&self, background: bool) {
        if self.background.swap(background, Ordering::AcqRel) && !background {
            // Shown again: whatever waits is read now, not after the delay.
            self.waker.wake();
        }
    }

    /// The terminal's foreground process group, asked of the terminal itself (one ioctl on
    /// the master; no /proc). None once the terminal is closed.
    pub fn foreground_pgrp(&self) -> Option<i32> {
        let fd = self.direct.fd.lock().unwrap_or_else(|e| e.into_inner());
        fd.as_ref()
            .and_then(|fd| sys::foreground_pgrp(fd.as_fd()))
            .filter(|p| *p > 0)
    }

    /// Marks the output as seen by the renderer; the next output sends a new `Output`.
    pub fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
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
        if let Some(t) = self.thread.take() {
            let _ = t.join();
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
