//! The actor's thread: the loop that holds a terminal's master — control messages, input
//! written at an offset, output read and fed to the emulator, the program's end. The
//! order it keeps with direct writes and lent reads is `pty::master`'s invariants.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

use super::*;
use crate::pty::SharedEmulator;
use crate::sys::{self, WakePipe};

pub(super) struct Actor {
    /// Inputs taken from the queue (or answers added) since `pending` was last empty:
    /// what direct writes wait behind until they are all written.
    pub(super) taken: usize,
    pub(super) master: Master,
    pub(super) program: Program,
    pub(super) emulator: SharedEmulator,
    pub(super) notify: Notify,
    pub(super) wake: WakePipe,
    pub(super) input: InputRx,
    pub(super) control: crate::queue::Rx<Control>,
    /// Input not yet written; `offset` bytes of the front chunk are already written.
    pub(super) pending: VecDeque<Chunk>,
    pub(super) offset: usize,
    /// Bytes in `pending` not yet written.
    pub(super) pending_len: usize,
    /// A submit's pause: nothing more is written before this instant.
    pub(super) hold_until: Option<Instant>,
    /// A submit waiting for its text to show: how much the program had written when the
    /// text was, and the pause to make once it wrote more.
    pub(super) echo: Option<(u64, Duration)>,
    /// No reading or writing until `Resume`.
    pub(super) paused: bool,
    /// A size that arrived while paused, and how many did (each holds direct writes).
    pub(super) deferred_resize: Option<(u16, u16)>,
    pub(super) deferred_resizes: usize,
    /// Someone else reads the terminal (the server, for the pane being typed in).
    pub(super) lent: bool,
    /// While lent, the terminal hung up: the borrower will see it and give it back.
    pub(super) lent_hup: bool,
    /// In the background after a small read: the next read waits until then.
    pub(super) read_after: Option<Instant>,
    /// This thread's stack, and whether it was given back since the last thing happened
    /// (see `IDLE_TRIM`).
    pub(super) stack: Option<sys::stack::Stack>,
    pub(super) trimmed: bool,
    /// The read buffer for bulk output (`READ_CHUNK`), from the first read that filled
    /// the small one until the terminal is next idle.
    pub(super) bulk: Option<Box<[u8]>>,
    /// The name of the actor's thread (each thread it runs on when it leaves the lot).
    pub(super) name: String,
    /// Dropped with the actor: its handle's `shutdown_and_join` waits for that.
    pub(super) _finished: crate::queue::Tx<()>,
}

/// A terminal with nothing happening for this long waits in the lot without a thread
/// (`lot`), or when it cannot (see `Actor::parkable`) gives back the stack pages its
/// thread touched (`sys::stack`): one wake-up after each burst of activity, none while
/// idle.
const IDLE_TRIM: Duration = Duration::from_secs(1);

/// Output is fed to the emulator in pieces, so that whoever waits for its lock (a frame,
/// an API read) waits for at most one piece beyond `LOCK_HOLD`. The costliest sequences
/// (an erase of the whole screen in a colour: 4 bytes, a write of every cell) make 1 KiB
/// take about 1 ms on a 160 × 47 pane; on a larger one the pieces are smaller in
/// proportion, down to 64 bytes.
pub(in crate::pty) fn feed_piece(rows: u16, cols: u16) -> usize {
    const CELLS: usize = 160 * 47;
    (1024 * CELLS / (usize::from(rows) * usize::from(cols)).max(1)).clamp(64, 1024)
}

/// How often a submit waiting for its text to show looks at the emulator.
const ECHO_LOOK: Duration = Duration::from_millis(10);

/// The lock is handed to a waiter once feeding has held it this long.
const LOCK_HOLD: Duration = Duration::from_millis(2);

/// Output of the program, into the emulator: the answers it wants written back to the
/// program, and what to tell the server (clipboard, bell, title).
pub(in crate::pty) fn absorb(emulator: &SharedEmulator, bytes: &[u8]) -> (Vec<u8>, Vec<PtyEvent>) {
    let mut emu = crate::pty::lock(emulator);
    let mut held = Instant::now();
    let mut responses = Vec::new();
    let mut events = Vec::new();
    let (mut bell, mut title) = (false, false);
    let (rows, cols) = emu.size();
    for piece in bytes.chunks(feed_piece(rows, cols)) {
        let effects = emu.process(piece);
        if responses.is_empty() {
            responses = effects.responses;
        } else {
            responses.extend_from_slice(&effects.responses);
        }
        events.extend(effects.clipboard.into_iter().map(PtyEvent::Clipboard));
        bell |= effects.bell;
        title |= effects.title_changed;
        if held.elapsed() >= LOCK_HOLD {
            parking_lot::MutexGuard::bump(&mut emu);
            held = Instant::now();
        }
    }
    if bell {
        events.push(PtyEvent::Bell);
    }
    if title {
        events.push(PtyEvent::Title {
            title: emu.title().to_string(),
            seq: emu.seq(),
        });
    }
    (responses, events)
}

enum Step {
    Continue,
    /// Nothing to do but wait for output or a message: the thread may end (`lot`).
    Park,
    Eof,
    Shutdown,
}

impl Actor {
    /// The actor's loop, on the thread it runs on until the terminal ends or waits in
    /// the lot.
    pub(super) fn run(mut self) {
        self.stack = sys::stack::Stack::current();
        self.trimmed = false;
        let outcome = loop {
            match self.step() {
                Ok(Step::Continue) => {}
                Ok(Step::Park) => {
                    // (The stack is this thread's, which ends.)
                    self.stack = None;
                    match super::lot::park(Box::new(self)) {
                        Ok(()) => return,
                        Err(actor) => {
                            // (`parkable` saw the lot: not reached.) Idle on this thread.
                            self = *actor;
                            self.stack = sys::stack::Stack::current();
                            self.trimmed = true;
                        }
                    }
                }
                Ok(Step::Eof) => break Step::Eof,
                Ok(Step::Shutdown) => break Step::Shutdown,
                Err(_) => break Step::Eof,
            }
        };
        // No more direct writes; and our master is then the last descriptor we hold.
        self.master.end_direct_writes();
        match outcome {
            Step::Shutdown if self.master.shared.preserve.load(Ordering::Acquire) => {}
            Step::Shutdown => self.kill_child(),
            _ => {
                let code = self.reap();
                (self.notify)(PtyEvent::Exited(code));
            }
        }
    }

    fn step(&mut self) -> std::io::Result<Step> {
        loop {
            let control = if self.paused {
                // Nothing but control messages while paused.
                self.control.recv().map_err(|_| TryRecvError::Disconnected)
            } else {
                self.control.try_recv()
            };
            match control {
                // While paused the terminal is not ours to change (it may be on loan to
                // a handoff that is rolled back): the size is applied on resume.
                Ok(Control::Resize { rows, cols }) if self.paused => {
                    self.deferred_resize = Some((rows, cols));
                    self.deferred_resizes += 1;
                }
                Ok(Control::Resize { rows, cols }) => {
                    self.apply_resize(rows, cols);
                    self.master.shared.release(1);
                }
                Ok(Control::Pause(reply)) => match self.pause_report() {
                    Ok(p) => {
                        if !self.paused {
                            // Direct writes wait too, until resumed.
                            self.master.shared.hold();
                        }
                        self.paused = true;
                        let _ = reply.send(Ok(p));
                    }
                    // Not paused: carry on as if never asked.
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                },
                Ok(Control::Resume) => {
                    if self.paused {
                        self.master.shared.release(1);
                    }
                    self.paused = false;
                    if let Some((rows, cols)) = self.deferred_resize.take() {
                        self.apply_resize(rows, cols);
                    }
                    self.master
                        .shared
                        .release(std::mem::take(&mut self.deferred_resizes));
                    // Output may have waited while we were paused.
                    self.mark_dirty();
                }
                // Between bursts: all we read is in the emulator (`pty::master`, 4).
                Ok(Control::Lend(reply)) => {
                    let fd = if self.paused {
                        None
                    } else {
                        self.master.dup_for_lending().ok()
                    };
                    if fd.is_some() {
                        self.lent = true;
                        self.lent_hup = false;
                    }
                    let _ = reply.send(fd);
                }
                Ok(Control::Return) => self.lent = false,
                Ok(Control::Shutdown) | Err(TryRecvError::Disconnected) => {
                    return Ok(Step::Shutdown)
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        // Take input only while few entries are pending (the bytes are bounded when they
        // are queued): when the program stops reading, the channel fills and callers get
        // `WouldBlock` instead of us buffering without limit. If the limit stopped us and
        // everything was then written, take more now: no wake-up will come for input that
        // is already queued.
        loop {
            while self.pending.len() < INPUT_QUEUE_CHUNKS {
                match self.input.try_recv() {
                    Ok(input) => self.take_input(input),
                    Err(_) => break,
                }
            }
            let hit_limit = self.pending.len() >= INPUT_QUEUE_CHUNKS;
            self.flush()?;
            if !(hit_limit && self.pending.is_empty()) {
                break;
            }
        }
        let now = Instant::now();
        self.echo_seen(now);
        let hold = self.hold_until.map(|t| t.saturating_duration_since(now));
        let want_write = hold.is_none() && !self.pending.is_empty();
        // Reading waits out the background delay (a hangup still wakes us).
        if !self.master.shared.background.load(Ordering::Acquire)
            || self.read_after.is_some_and(|t| t <= now)
        {
            self.read_after = None;
        }
        let rest = self.read_after.map(|t| t.saturating_duration_since(now));
        let timeout = match (hold, rest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // The echo may be read by someone else (a borrower): looked for now and then.
        let timeout = match self.echo {
            Some(_) => Some(timeout.map_or(ECHO_LOOK, |t| t.min(ECHO_LOOK))),
            None => timeout,
        };
        let trim = timeout.is_none() && !self.trimmed;
        let timeout = if trim { Some(IDLE_TRIM) } else { timeout };
        let ready = if !self.lent {
            sys::poll_pty_and_wake(
                self.master.fd(),
                &self.wake,
                rest.is_none(),
                want_write,
                timeout,
            )?
        } else if want_write && !self.lent_hup {
            sys::poll_pty_and_wake(self.master.fd(), &self.wake, false, true, timeout)?
        } else {
            // Lent and nothing to write: only our wake pipe matters (a hangup is the
            // borrower's to see).
            sys::poll_wake(&self.wake, timeout)?
        };
        if ready.woken {
            self.wake.drain();
        }
        let idle = !(ready.woken || ready.readable || ready.writable || ready.hangup);
        if trim && idle {
            self.bulk = None;
            self.input.release();
            self.control.release();
            crate::pty::lock(&self.emulator).idle();
            if self.parkable() {
                // (The thread, stack and all, ends.)
                return Ok(Step::Park);
            }
            if let Some(stack) = &self.stack {
                stack.release_unused();
            }
        }
        self.trimmed = idle && (trim || self.trimmed);
        if self.lent {
            self.lent_hup |= ready.hangup;
            return Ok(Step::Continue);
        }
        if ready.readable || ready.hangup {
            return self.read_burst(ready.hangup);
        }
        Ok(Step::Continue)
    }

    /// Nobody sees the terminal, and nothing but output or a message can give the actor
    /// work: no write waits, no timer runs, nobody else reads the terminal, it is not
    /// paused. (A terminal shown keeps its thread: the pane typed in is lent to the
    /// server at once, and a keystroke's echo waits for no thread to be made.)
    fn parkable(&self) -> bool {
        self.master.shared.background.load(Ordering::Acquire)
            && !self.lent
            && !self.paused
            && self.pending.is_empty()
            && self.hold_until.is_none()
            && self.echo.is_none()
            && self.read_after.is_none()
            && super::lot::available()
    }

    fn apply_resize(&mut self, rows: u16, cols: u16) {
        // The emulator first: the program redraws on SIGWINCH, and that output (read here
        // or by the server, when lent) must meet the new size.
        crate::pty::lock(&self.emulator).resize(rows, cols);
        let _ = sys::set_winsize(self.master.fd(), rows, cols, 0, 0);
        self.mark_dirty();
    }

    /// Takes everything queued into `pending` (kept, to go on after a rollback) and
    /// reports a copy of it, pauses left out, with a duplicate of the master.
    fn pause_report(&mut self) -> std::io::Result<Paused> {
        let master = self.master.dup_for_handoff()?;
        while let Ok(input) = self.input.try_recv() {
            self.take_input(input);
        }
        let mut pending_input = Vec::with_capacity(self.pending_len);
        for (i, chunk) in self.pending.iter().enumerate() {
            if let Chunk::Bytes(b) = chunk {
                let from = if i == 0 { self.offset } else { 0 };
                pending_input.extend_from_slice(&b[from..]);
            }
        }
        Ok(Paused {
            master,
            pending_input,
        })
    }

    /// Reads and feeds up to `READ_BURST`: into a small buffer on this frame (its page is
    /// given back with the stack's when idle), or the bulk one once a read filled that.
    fn read_burst(&mut self, hangup: bool) -> std::io::Result<Step> {
        let mut small = [0u8; FIRST_READ];
        let mut bulk = self.bulk.take();
        let mut total = 0;
        let step = loop {
            if total >= READ_BURST {
                break Step::Continue;
            }
            let buf: &mut [u8] = match &mut bulk {
                Some(b) => b,
                None => &mut small,
            };
            match self.master.read(buf) {
                Ok(Some(0)) => break Step::Eof,
                Ok(Some(n)) => {
                    total += n;
                    let full = n == buf.len();
                    self.feed(&buf[..n]);
                    if full && bulk.is_none() {
                        bulk = Some(vec![0u8; READ_CHUNK].into_boxed_slice());
                    }
                }
                Ok(None) if hangup && total == 0 => break Step::Eof,
                Ok(None) => break Step::Continue,
                Err(e) => {
                    self.bulk = bulk;
                    return Err(e);
                }
            }
        };
        self.bulk = bulk;
        if total < BACKGROUND_BULK && self.master.shared.background.load(Ordering::Acquire) {
            self.read_after = Some(Instant::now() + BACKGROUND_READ_DELAY);
        }
        Ok(step)
    }

    fn feed(&mut self, bytes: &[u8]) {
        let (responses, events) = absorb(&self.emulator, bytes);
        // Answers to queries go back to the program; one that asks without ever reading
        // its input must not make us buffer without limit, so answers beyond the cap
        // are dropped (a terminal would block instead; we must not).
        let queued = self.master.shared.queued();
        if !responses.is_empty() && queued.saturating_add(responses.len()) <= MAX_INPUT_BYTES {
            self.push_counted(responses);
        }
        for ev in events {
            (self.notify)(ev);
        }
        self.mark_dirty();
    }

    fn take_input(&mut self, input: Input) {
        self.taken += 1;
        match input {
            Input::Bytes(chunk) => self.push_pending(chunk),
            Input::Submit { text, enter, delay } => {
                let pause = match text.is_empty() {
                    true => Chunk::Pause(delay),
                    false => Chunk::PauseAfterEcho(delay),
                };
                self.push_pending(text);
                self.pending.push_back(pause);
                self.push_pending(enter);
            }
        }
    }

    /// A submit's text has shown (the program wrote since): its pause starts now, unless
    /// the wait for it ends sooner.
    fn echo_seen(&mut self, now: Instant) {
        let Some((at, pause)) = self.echo else {
            return;
        };
        let shown = crate::pty::lock(&self.emulator).written() != at;
        let gave_up = self.hold_until.is_none_or(|t| now >= t);
        if shown || gave_up {
            self.echo = None;
            if shown {
                let until = now + pause;
                self.hold_until = Some(self.hold_until.map_or(until, |t| t.min(until)));
            }
        }
    }

    /// Bytes of our own (answers, handed-over input) ahead of later direct writes; they
    /// count against the input limit like any other.
    pub(super) fn push_counted(&mut self, chunk: Vec<u8>) {
        self.master.shared.count_own(chunk.len());
        self.taken += 1;
        self.push_pending(chunk);
    }

    fn push_pending(&mut self, chunk: Vec<u8>) {
        self.pending_len += chunk.len();
        self.pending.push_back(Chunk::Bytes(chunk));
    }

    fn mark_dirty(&self) {
        if self.master.shared.mark_dirty() {
            (self.notify)(PtyEvent::Output);
        }
    }

    /// Writes as much pending input as the PTY takes without blocking.
    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(t) = self.hold_until {
            if Instant::now() < t {
                return Ok(());
            }
            self.hold_until = None;
        }
        if self.pending.is_empty() {
            self.master.shared.release(std::mem::take(&mut self.taken));
            return Ok(());
        }
        let writing = self.master.writing();
        while let Some(front) = self.pending.front() {
            let front = match front {
                Chunk::Bytes(b) => b,
                Chunk::Pause(d) => {
                    self.hold_until = Some(Instant::now() + *d);
                    self.pending.pop_front();
                    break;
                }
                Chunk::PauseAfterEcho(d) => {
                    let written = crate::pty::lock(&self.emulator).written();
                    self.echo = Some((written, *d));
                    self.hold_until = Some(Instant::now() + super::ECHO_WAIT);
                    self.pending.pop_front();
                    break;
                }
            };
            match writing.write(&front[self.offset..])? {
                None => break,
                Some(n) => {
                    self.offset += n;
                    self.pending_len -= n;
                    if self.offset >= front.len() {
                        self.pending.pop_front();
                        self.offset = 0;
                    }
                }
            }
        }
        // Everything taken so far is written: direct writes may go again (unless more is
        // queued, which holds them by itself); under the write lock (`pty::master`, 2).
        if self.pending.is_empty() {
            writing.release(std::mem::take(&mut self.taken));
        }
        Ok(())
    }

    /// After EOF: the program has usually exited, but it may have closed its terminal
    /// and kept running. Give it the grace period, then end it like a closed pane, so
    /// this thread (and a `server stop` joining it) never waits forever.
    fn reap(&mut self) -> Option<i32> {
        if self.master.shared.preserve.load(Ordering::Acquire) {
            return None;
        }
        let deadline = Instant::now() + KILL_GRACE;
        loop {
            match self.program.try_wait() {
                Some(code) => return code,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                None => break,
            }
        }
        let pid = self.program.pid()?;
        sys::signal_group(pid, nix::sys::signal::Signal::SIGHUP);
        std::thread::sleep(Duration::from_millis(100));
        if self.program.try_wait().is_none() {
            sys::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        }
        self.program.wait()
    }

    /// Closing the master hangs up the terminal (SIGHUP to its session); a program that
    /// ignores it is killed after a grace period. Our own children are always reaped.
    fn kill_child(mut self) {
        let pid = self.program.pid();
        drop(self.master);
        let Some(pid) = pid else {
            return;
        };
        if self.program.try_wait().is_some() {
            return;
        }
        sys::signal_group(pid, nix::sys::signal::Signal::SIGHUP);
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if self.program.try_wait().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        sys::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        self.program.wait();
    }
}
