//! The PTY subsystem, in layers: the fd layer (`crate::sys`), the master of each PTY and
//! the order kept between its users (`master`), one I/O actor per terminal (`actor`), and
//! the spawn backend (`spawn`). A [`TerminalRuntime`] ties them together for the server;
//! the registry maps `TerminalId → TerminalRuntime`.
//!
//! Ownership: the actor thread holds the PTY master, and `master` makes and ends every
//! duplicate of it (direct writes, a [`Lent`] reader, a handoff's copy); the runtime owns
//! the actor handle; the registry owns the runtimes. Dropping a runtime shuts its actor
//! down, which closes the master and ends the child (unless the program is preserved for
//! a live handoff).

pub mod actor;
mod master;
pub mod proc;
pub mod spawn;

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::model::ids::TerminalId;
use crate::term::Emulator;

pub use actor::{Paused, Program, PtyEvent, PtyHandle, WriteError, MAX_INPUT_BYTES};
pub use master::{Lent, LentRead, DRAINED_BELOW};

/// The shared emulator of one terminal: the actor feeds it, renderers read it. A
/// `parking_lot` mutex, so a feeder that held it long can hand it straight to a waiting
/// renderer (`MutexGuard::bump`), and a panicked holder does not poison it.
pub type SharedEmulator = Arc<Mutex<Emulator>>;

pub fn shared(emu: Emulator) -> SharedEmulator {
    Arc::new(Mutex::new(emu))
}

pub fn lock(emu: &SharedEmulator) -> MutexGuard<'_, Emulator> {
    emu.lock()
}

pub struct TerminalRuntime {
    pub handle: PtyHandle,
    pub emulator: SharedEmulator,
    pub pid: Option<u32>,
    pub size: (u16, u16),
    /// When the size last changed (a program's redraw after it is not new work).
    pub resized_at: Option<std::time::Instant>,
    /// The emulator sequence number of the title the session state holds (see
    /// `PtyEvent::Title`).
    pub title_seq: u64,
    /// What listings keep of the process in front, to describe it again cheaply (its
    /// command-line file held open: a cache, dropped whenever descriptors run short).
    pub foreground_kept: Option<proc::Kept>,
}

impl TerminalRuntime {
    pub fn resize(&mut self, rows: u16, cols: u16) {
        if self.size != (rows, cols) {
            self.size = (rows, cols);
            self.resized_at = Some(std::time::Instant::now());
            self.handle.resize(rows, cols);
        }
    }

    /// The process in front in this terminal (the leader of its foreground process
    /// group), asked of the terminal; from the leader's record in /proc if that fails.
    pub fn foreground_pid(&self) -> Option<i32> {
        self.handle
            .foreground_pgrp()
            .or_else(|| proc::foreground_pid(self.pid?))
    }

    /// [`TerminalRuntime::foreground_pid`] with its command line and working directory.
    pub fn foreground(&self) -> Option<proc::Foreground> {
        self.foreground_pid().map(proc::describe)
    }
}

#[derive(Default)]
pub struct TerminalRuntimeRegistry {
    /// (Boxed: the table keeps room for up to twice its entries.)
    map: crate::model::ids::IdMap<TerminalId, Box<TerminalRuntime>>,
}

impl TerminalRuntimeRegistry {
    pub fn insert(&mut self, id: TerminalId, rt: TerminalRuntime) {
        self.map.insert(id, Box::new(rt));
    }

    pub fn get(&self, id: TerminalId) -> Option<&TerminalRuntime> {
        self.map.get(&id).map(|rt| &**rt)
    }

    pub fn get_mut(&mut self, id: TerminalId) -> Option<&mut TerminalRuntime> {
        self.map.get_mut(&id).map(|rt| &mut **rt)
    }

    pub fn remove(&mut self, id: TerminalId) -> Option<TerminalRuntime> {
        self.map.remove(&id).map(|rt| *rt)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn ids(&self) -> Vec<TerminalId> {
        self.map.keys().copied().collect()
    }

    /// How many command-line files the runtimes keep open.
    pub fn kept_files(&self) -> usize {
        self.map
            .values()
            .filter(|rt| rt.foreground_kept.is_some())
            .count()
    }

    /// Closes every kept command-line file: descriptors are short (a new pane, a live
    /// handoff), and a cache must never be what refuses them.
    pub fn release_kept_files(&mut self) {
        for rt in self.map.values_mut() {
            rt.foreground_kept = None;
        }
    }

    /// Takes every runtime out (server shutdown: the caller stops them all in parallel).
    pub fn drain(&mut self) -> Vec<(TerminalId, TerminalRuntime)> {
        self.map.drain().map(|(id, rt)| (id, *rt)).collect()
    }
}
