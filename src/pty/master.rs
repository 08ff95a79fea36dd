//! One terminal's PTY master. [`Master`] holds the descriptor itself and is the only maker
//! of duplicates of it; every way bytes go into or out of the PTY is a method here, and the
//! order between them is kept here. Three parties use the master:
//!
//! - the terminal's actor thread (`pty::actor`), which holds the [`Master`]: it reads the
//!   program's output, writes the input queued for it, applies sizes;
//! - whoever writes input ([`Shared::try_write`], through `PtyHandle`): straight into the
//!   PTY from the caller's thread when nothing waits ahead, so a keystroke costs no hop to
//!   the actor;
//! - a borrower of the reads ([`Lent`]): the server thread reads the pane being typed in
//!   itself, so the echo is read, parsed and drawn in one wake-up of that thread.
//!
//! Invariants:
//!
//! 1. *One writer at a time.* Every write into the PTY is made holding the write lock (the
//!    actor's [`Master::writing`], a direct write's `try_lock`), so no two writes overlap.
//! 2. *Nothing overtakes.* `busy` counts what direct writes must wait behind: each input
//!    entry handed to the actor, until it and everything taken with it are written (the
//!    actor lowers it inside the write lock); each size sent and not yet applied; a pause.
//!    A direct write goes only when `busy` is zero, looked at again inside the write lock,
//!    so it never passes queued input, and input sent after a resize reaches the program
//!    after the new size (a shell asked `tput cols` right after sees it). The rest of a
//!    partial direct write is queued, raising `busy`, before the lock is let go: nothing
//!    can be written between its two parts.
//! 3. *Bounded.* `queued` counts the bytes accepted and not yet written: room is reserved
//!    for a write whole or the write is refused (`MAX_INPUT_BYTES`), and each byte written,
//!    by either writer, gives its room back.
//! 4. *Lent reads never race the actor.* The actor lends only between its bursts, so all
//!    it read is in the emulator before the borrower's first read; it reads nothing while
//!    lent; the reads come back when the [`Lent`] is dropped, which closes the borrower's
//!    duplicate in the same step, so every lent read is in the emulator before the actor
//!    reads again. A lend the caller stopped waiting for is taken back at once (the return
//!    is queued behind the lend). A hangup while lent is the borrower's to see
//!    ([`LentRead::Ended`]); once it gives the reading back, the actor reads the end
//!    itself and reports the exit.
//! 5. *Closed means closed.* A terminal hangs up only when the last descriptor of its
//!    master goes, so every duplicate has an end: the direct writes' one is taken away when
//!    the actor ends ([`Master::end_direct_writes`]); a lent one lives exactly as long as
//!    its [`Lent`]; the one a live handoff sends ([`Master::dup_for_handoff`]) belongs to
//!    the next server from then on. The actor's own closes when the actor ends.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::TrySendError;
use std::sync::{Arc, Mutex, MutexGuard};

use super::actor::{absorb, feed_piece, Control, Input, InputTx};
use super::{PtyEvent, SharedEmulator, WriteError, MAX_INPUT_BYTES};
use crate::sys::{self, Waker};

/// Bytes a lent read takes at most: what the line discipline holds, and (with the pane's
/// emulator pieces, `feed_piece`: four of them) little enough that the costliest output
/// takes a few ms at most before the borrower looks at its turn budget again.
const LENT_READ: usize = 4096;
/// A read of fewer bytes than this found all there was for now. (Not "fewer than its
/// room": a terminal hands out at most its line discipline's 4 KiB buffer a read, so bulk
/// output comes in reads that do not fill a 4 KiB room either, and must be read on.)
pub const DRAINED_BELOW: usize = 512;

/// The master descriptor itself: the actor thread's.
pub(super) struct Master {
    fd: OwnedFd,
    pub(super) shared: Arc<Shared>,
}

/// What the actor, its handle and a borrower of the reads share of the master.
pub(super) struct Shared {
    /// The duplicate for direct writes (and foreground lookups); its lock is the write
    /// lock. `None` once the actor ended (invariant 5).
    direct: Mutex<Option<OwnedFd>>,
    /// What direct writes wait behind (invariant 2).
    busy: AtomicUsize,
    /// Bytes accepted and not yet written (invariant 3).
    queued: AtomicUsize,
    /// Bytes of input taken, all told (the echo of what was typed is not the program's own
    /// work: `agent::activity`).
    typed: AtomicU64,
    /// Output was taken into the emulator since the renderer last looked.
    dirty: AtomicBool,
    /// Set: closing the terminal leaves its program running (another server owns it).
    pub(super) preserve: AtomicBool,
    /// Set while nobody sees the terminal (see `BACKGROUND_READ_DELAY`).
    pub(super) background: AtomicBool,
    /// The actor's input queue, and its wake-up.
    input: InputTx,
    waker: Waker,
}

/// The write lock, held by the actor while it writes what is queued.
pub(super) struct Writing<'a> {
    _lock: MutexGuard<'a, Option<OwnedFd>>,
    fd: BorrowedFd<'a>,
    shared: &'a Shared,
}

impl Master {
    /// Takes the master. `paused`: direct writes wait until the actor resumes.
    pub(super) fn new(
        fd: OwnedFd,
        paused: bool,
        preserve: bool,
        input: InputTx,
        waker: Waker,
    ) -> io::Result<Master> {
        let direct = sys::dup_cloexec(fd.as_fd())?;
        let shared = Arc::new(Shared {
            direct: Mutex::new(Some(direct)),
            busy: AtomicUsize::new(usize::from(paused)),
            queued: AtomicUsize::new(0),
            typed: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            preserve: AtomicBool::new(preserve),
            background: AtomicBool::new(false),
            input,
            waker,
        });
        Ok(Master { fd, shared })
    }

    /// The shared part of a master that is gone (a pane whose program ended, moved by a
    /// live handoff): no direct writes, and a queue nobody reads, so every write is
    /// refused as it is once an actor ends.
    pub(super) fn ended(waker: Waker) -> Arc<Shared> {
        let (input, _) = super::actor::input_queue();
        Arc::new(Shared {
            direct: Mutex::new(None),
            busy: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            typed: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            preserve: AtomicBool::new(false),
            background: AtomicBool::new(false),
            input,
            waker,
        })
    }

    /// For the actor's poll and its size ioctl.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A non-blocking read of the program's output (never while lent: invariant 4).
    pub(super) fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        sys::read_nb(self.fd.as_fd(), buf)
    }

    /// The write lock, for the actor to write what is queued (invariant 1).
    pub(super) fn writing(&self) -> Writing<'_> {
        Writing {
            _lock: self.shared.direct.lock().unwrap_or_else(|e| e.into_inner()),
            fd: self.fd.as_fd(),
            shared: &self.shared,
        }
    }

    /// A duplicate for a borrower of the reads; the handle wraps it in a [`Lent`].
    pub(super) fn dup_for_lending(&self) -> io::Result<OwnedFd> {
        sys::dup_cloexec(self.fd.as_fd())
    }

    /// A duplicate for a live handoff to send to the next server, which owns it then.
    pub(super) fn dup_for_handoff(&self) -> io::Result<OwnedFd> {
        sys::dup_cloexec(self.fd.as_fd())
    }

    /// The actor is ending: no more direct writes, and its own descriptor is then the last
    /// one this side holds but a lent one (invariant 5).
    pub(super) fn end_direct_writes(&self) {
        *self.shared.direct.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Writing<'_> {
    /// A non-blocking write; what was written gives its room back (invariant 3).
    pub(super) fn write(&self, bytes: &[u8]) -> io::Result<Option<usize>> {
        let n = sys::write_nb(self.fd, bytes)?;
        if let Some(n) = n {
            self.shared.queued.fetch_sub(n, Ordering::AcqRel);
        }
        Ok(n)
    }

    /// Everything the actor took is written: lowers `busy` under the lock (invariant 2).
    pub(super) fn release(&self, n: usize) {
        self.shared.release(n);
    }
}

impl Shared {
    /// Writes bytes for the program: at once if the PTY takes them and nothing waits
    /// ahead, else queued for the actor; never blocks. All or nothing: refused writes
    /// (`WouldBlock`: more than `MAX_INPUT_BYTES` would wait) leave no byte behind.
    pub(super) fn try_write(&self, bytes: Vec<u8>) -> Result<(), WriteError> {
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

    /// How much of `bytes` (reserved by the caller) went straight into the PTY; `None`
    /// when it must be queued (input waits ahead, the actor is writing, or the PTY is full
    /// or closed). What was written is released from the reservation.
    fn write_direct(&self, bytes: &[u8]) -> Option<usize> {
        if self.busy.load(Ordering::Acquire) != 0 {
            return None;
        }
        let guard = self.direct.try_lock().ok()?;
        let fd = guard.as_ref()?;
        // Again inside the lock, where the actor lowers it (invariant 2).
        if self.busy.load(Ordering::Acquire) != 0 {
            return None;
        }
        match sys::write_nb(fd.as_fd(), bytes) {
            Ok(Some(n)) if n > 0 => {
                self.queued.fetch_sub(n, Ordering::AcqRel);
                if n < bytes.len() {
                    // The rest goes to the queue before the lock is let go.
                    self.hold();
                    let rest = Input::Bytes(bytes[n..].to_vec());
                    if self.input.try_send(rest).is_err() {
                        self.release(1);
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

    /// Takes room for `len` more bytes of input, or says the terminal has no room left.
    pub(super) fn reserve(&self, len: usize) -> Result<(), WriteError> {
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        if before.saturating_add(len) > MAX_INPUT_BYTES {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return Err(WriteError::WouldBlock);
        }
        self.typed.fetch_add(len as u64, Ordering::AcqRel);
        Ok(())
    }

    /// Queues input whose `len` bytes are already reserved (released again if refused).
    pub(super) fn enqueue_reserved(&self, input: Input, len: usize) -> Result<(), WriteError> {
        self.hold();
        match self.input.try_send(input) {
            Ok(()) => {
                self.waker.wake();
                Ok(())
            }
            Err(e) => {
                self.release(1);
                self.queued.fetch_sub(len, Ordering::AcqRel);
                match e {
                    TrySendError::Full(_) => Err(WriteError::WouldBlock),
                    TrySendError::Disconnected(_) => Err(WriteError::Closed),
                }
            }
        }
    }

    /// Bytes of the actor's own (answers, handed-over input) ahead of later direct writes;
    /// they count against the input limit like any other.
    pub(super) fn count_own(&self, len: usize) {
        self.hold();
        self.queued.fetch_add(len, Ordering::AcqRel);
    }

    /// One more thing direct writes wait behind (invariant 2).
    pub(super) fn hold(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    /// `n` of them are done.
    pub(super) fn release(&self, n: usize) {
        if n > 0 {
            self.busy.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Bytes accepted and not yet written.
    pub(super) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub(super) fn typed(&self) -> u64 {
        self.typed.load(Ordering::Acquire)
    }

    /// Sets the dirty flag; `true` when it was clear (the output is to be announced).
    pub(super) fn mark_dirty(&self) -> bool {
        !self.dirty.swap(true, Ordering::AcqRel)
    }

    pub(super) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// The terminal's foreground process group (one ioctl on the master); `None` once the
    /// terminal is closed.
    pub(super) fn foreground_pgrp(&self) -> Option<i32> {
        let fd = self.direct.lock().unwrap_or_else(|e| e.into_inner());
        fd.as_ref()
            .and_then(|fd| sys::foreground_pgrp(fd.as_fd()))
            .filter(|p| *p > 0)
    }
}

/// The reading of a terminal, lent by its actor (invariant 4). Dropping it gives the
/// reading back and closes its duplicate of the master.
pub struct Lent {
    fd: OwnedFd,
    shared: Arc<Shared>,
    emulator: SharedEmulator,
    control: crate::queue::Tx<Control>,
    buf: Box<[u8]>,
}

/// What one [`Lent::read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LentRead {
    /// `n` bytes, now in the emulator. `drained`: that was all there was (a read of a few
    /// bytes, a keystroke's echo or a prompt), so reading again at once would find nothing
    /// (what comes later, `poll` tells); otherwise there may be more.
    Took { n: usize, drained: bool },
    /// Nothing to read now.
    Nothing,
    /// The terminal hung up (or the read failed): its actor sees the end once the reading
    /// is given back, and reports it.
    Ended,
}

impl Lent {
    pub(super) fn new(
        fd: OwnedFd,
        shared: Arc<Shared>,
        emulator: SharedEmulator,
        control: crate::queue::Tx<Control>,
    ) -> Lent {
        Lent {
            fd,
            shared,
            emulator,
            control,
            buf: vec![0u8; LENT_READ].into_boxed_slice(),
        }
    }

    /// Reads once (`LENT_READ` bytes at most, fewer on a large pane) and takes it into the
    /// emulator as the actor would: answers queued back to the program, the dirty flag set.
    /// The events to handle go to `events`, `Output` among them when the renderer had seen
    /// everything before.
    pub fn read(&mut self, events: &mut Vec<PtyEvent>) -> LentRead {
        let (rows, cols) = super::lock(&self.emulator).size();
        let want = LENT_READ.min(4 * feed_piece(rows, cols));
        let n = match sys::read_nb(self.fd.as_fd(), &mut self.buf[..want]) {
            Ok(Some(0)) | Err(_) => return LentRead::Ended,
            Ok(None) => return LentRead::Nothing,
            Ok(Some(n)) => n,
        };
        let (responses, read_events) = absorb(&self.emulator, &self.buf[..n]);
        events.extend(read_events);
        // Answers for a program that does not read its input are dropped past the limit (a
        // terminal would block instead; we must not).
        if !responses.is_empty() && self.shared.reserve(responses.len()).is_ok() {
            let len = responses.len();
            let _ = self.shared.enqueue_reserved(Input::Bytes(responses), len);
        }
        if self.shared.mark_dirty() {
            events.push(PtyEvent::Output);
        }
        // (A large pane reads less than `DRAINED_BELOW` at a time: a read that filled its
        // room may have left more.)
        LentRead::Took {
            n,
            drained: n < want.min(DRAINED_BELOW),
        }
    }
}

/// For the borrower's poll.
impl AsFd for Lent {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if self.control.send(Control::Return).is_ok() {
            self.shared.waker.wake();
        }
    }
}
