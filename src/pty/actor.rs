//! The per-terminal I/O actor: one thread owns the PTY master and serialises every read,
//! write, resize and shutdown of it. Callers never block: input goes through a bounded
//! queue (`try_write` → `WouldBlock` when full), and a wake pipe interrupts the actor's
//! `poll`. An idle terminal costs nothing: the thread sleeps in `poll` with no timeout.
//!
//! Writes are resumed at an offset after a partial write, so large pastes arrive intact
//! and in order while output keeps being read (a program that does not read its input
//! must not stop us from draining its output).

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use portable_pty::Child;

use super::SharedEmulator;
use crate::sys::{self, WakePipe, Waker};

/// Queued input chunks per terminal before `try_write` reports `WouldBlock`.
const INPUT_QUEUE_CHUNKS: usize = 1024;
/// Read buffer size; one read never exceeds this.
const READ_CHUNK: usize = 64 * 1024;
/// Bytes read in one burst before the actor services its queues again, so a flood of
/// output cannot starve input or a shutdown request.
const READ_BURST: usize = 1024 * 1024;
/// How long a closing terminal's child gets after SIGHUP before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

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
    /// The program ended (EOF on the master). Exit code when the child was ours to reap.
    Exited(Option<i32>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("the pane's input queue is full; try again shortly")]
    WouldBlock,
    #[error("the pane's program has exited")]
    Closed,
}

enum Control {
    Resize { rows: u16, cols: u16 },
    Shutdown,
}

pub type Notify = Box<dyn Fn(PtyEvent) + Send + 'static>;

pub struct PtyHandle {
    input: SyncSender<Vec<u8>>,
    control: mpsc::Sender<Control>,
    waker: Waker,
    dirty: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

pub struct ActorParts {
    pub master: OwnedFd,
    pub child: Option<Box<dyn Child + Send + Sync>>,
    pub emulator: SharedEmulator,
    pub notify: Notify,
    pub name: String,
}

impl PtyHandle {
    pub fn start(parts: ActorParts) -> std::io::Result<PtyHandle> {
        let wake = WakePipe::new()?;
        let waker = wake.waker();
        let (input_tx, input_rx) = mpsc::sync_channel(INPUT_QUEUE_CHUNKS);
        let (control_tx, control_rx) = mpsc::channel();
        let dirty = Arc::new(AtomicBool::new(false));
        let actor = Actor {
            master: parts.master,
            child: parts.child,
            emulator: parts.emulator,
            notify: parts.notify,
            wake,
            input: input_rx,
            control: control_rx,
            pending: VecDeque::new(),
            offset: 0,
            dirty: dirty.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(parts.name)
            .spawn(move || actor.run())?;
        Ok(PtyHandle {
            input: input_tx,
            control: control_tx,
            waker,
            dirty,
            thread: Some(thread),
        })
    }

    /// Queues bytes for the program; never blocks.
    pub fn try_write(&self, bytes: Vec<u8>) -> Result<(), WriteError> {
        if bytes.is_empty() {
            return Ok(());
        }
        match self.input.try_send(bytes) {
            Ok(()) => {
                self.waker.wake();
                Ok(())
            }
            Err(TrySendError::Full(_)) => Err(WriteError::WouldBlock),
            Err(TrySendError::Disconnected(_)) => Err(WriteError::Closed),
        }
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        let _ = self.control.send(Control::Resize { rows, cols });
        self.waker.wake();
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

struct Actor {
    master: OwnedFd,
    child: Option<Box<dyn Child + Send + Sync>>,
    emulator: SharedEmulator,
    notify: Notify,
    wake: WakePipe,
    input: Receiver<Vec<u8>>,
    control: Receiver<Control>,
    /// Input not yet written; `offset` bytes of the front chunk are already written.
    pending: VecDeque<Vec<u8>>,
    offset: usize,
    dirty: Arc<AtomicBool>,
}

enum Step {
    Continue,
    Eof,
    Shutdown,
}

impl Actor {
    fn run(mut self) {
        let mut buf = vec![0u8; READ_CHUNK];
        let outcome = loop {
            match self.step(&mut buf) {
                Ok(Step::Continue) => {}
                Ok(Step::Eof) => break Step::Eof,
                Ok(Step::Shutdown) => break Step::Shutdown,
                Err(_) => break Step::Eof,
            }
        };
        match outcome {
            Step::Shutdown => self.kill_child(),
            _ => {
                let code = self.reap();
                (self.notify)(PtyEvent::Exited(code));
            }
        }
    }

    fn step(&mut self, buf: &mut [u8]) -> std::io::Result<Step> {
        loop {
            match self.control.try_recv() {
                Ok(Control::Resize { rows, cols }) => {
                    let _ = sys::set_winsize(self.master.as_fd(), rows, cols, 0, 0);
                    super::lock(&self.emulator).resize(rows, cols);
                    self.mark_dirty();
                }
                Ok(Control::Shutdown) | Err(TryRecvError::Disconnected) => {
                    return Ok(Step::Shutdown)
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        while let Ok(chunk) = self.input.try_recv() {
            self.pending.push_back(chunk);
        }
        self.flush()?;
        let ready = sys::poll_pty_and_wake(
            self.master.as_fd(),
            &self.wake,
            true,
            !self.pending.is_empty(),
            None,
        )?;
        if ready.woken {
            self.wake.drain();
        }
        if ready.readable || ready.hangup {
            return self.read_burst(buf, ready.hangup);
        }
        Ok(Step::Continue)
    }

    fn read_burst(&mut self, buf: &mut [u8], hangup: bool) -> std::io::Result<Step> {
        let mut total = 0;
        while total < READ_BURST {
            match sys::read_nb(self.master.as_fd(), buf)? {
                Some(0) => return Ok(Step::Eof),
                Some(n) => {
                    total += n;
                    self.feed(&buf[..n]);
                }
                None if hangup && total == 0 => return Ok(Step::Eof),
                None => break,
            }
        }
        Ok(Step::Continue)
    }

    fn feed(&mut self, bytes: &[u8]) {
        let effects = super::lock(&self.emulator).process(bytes);
        if !effects.responses.is_empty() {
            self.pending.push_back(effects.responses);
        }
        for seq in effects.clipboard {
            (self.notify)(PtyEvent::Clipboard(seq));
        }
        if effects.bell {
            (self.notify)(PtyEvent::Bell);
        }
        self.mark_dirty();
    }

    fn mark_dirty(&self) {
        if !self.dirty.swap(true, Ordering::AcqRel) {
            (self.notify)(PtyEvent::Output);
        }
    }

    /// Writes as much pending input as the PTY takes without blocking.
    fn flush(&mut self) -> std::io::Result<()> {
        while let Some(front) = self.pending.front() {
            match sys::write_nb(self.master.as_fd(), &front[self.offset..])? {
                None => break,
                Some(n) => {
                    self.offset += n;
                    if self.offset >= front.len() {
                        self.pending.pop_front();
                        self.offset = 0;
                    }
                }
            }
        }
        Ok(())
    }

    fn reap(&mut self) -> Option<i32> {
        let child = self.child.as_mut()?;
        child.wait().ok().map(|s| s.exit_code() as i32)
    }

    /// Closing the master hangs up the terminal (SIGHUP to its session); a child that
    /// ignores it is killed after a grace period. Always reaped: no zombies.
    fn kill_child(mut self) {
        let pid = self.child.as_ref().and_then(|c| c.process_id());
        drop(self.master);
        let Some(child) = self.child.as_mut() else {
            return;
        };
        if let Some(pid) = pid {
            sys::signal_group(pid as i32, nix::sys::signal::Signal::SIGHUP);
        }
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(pid) = pid {
            sys::signal_group(pid as i32, nix::sys::signal::Signal::SIGKILL);
        }
        let _ = child.wait();
    }
}
