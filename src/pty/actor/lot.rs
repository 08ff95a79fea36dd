//! Terminals with nothing happening wait here without a thread of their own. An actor
//! idle for `IDLE_TRIM` with nothing to do but read (not lent, paused or writing, no
//! timer) hands itself to the lot and its thread ends; one thread watches the masters
//! and wake pipes of all parked terminals (registered once with `epoll` as they arrive,
//! so a wake-up costs what is ready, not what is parked: `poll` over 1,000 parked
//! terminals walked all 2,000 descriptors each time one of them printed), and gives a
//! terminal whose master or wake pipe fires a new thread, which runs the actor's loop as
//! before (it finds the output, or the message, still waiting: both are
//! level-triggered). A thread costs an idle pane its stack pages and the thread's own
//! state (~12 KiB resident); 1,000 panes that wait cost one thread.
//!
//! A terminal whose new thread could not be made (the system's thread limit) stays
//! parked and is tried again after `RETRY`, its descriptors not watched meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::run::Actor;
use crate::sys::epoll::Poller;
use crate::sys::{WakePipe, Waker};

/// How long a terminal whose thread could not be made waits before the next try.
const RETRY: Duration = Duration::from_millis(100);
/// The lot's own wake pipe's token; a parked terminal's are `2 * n` (its master) and
/// `2 * n + 1` (its wake pipe), `n` its number in the lot.
const LOT_WAKE: u64 = u64::MAX;
/// Ready descriptors taken per wait.
const READY_PER_WAIT: usize = 64;

struct Lot {
    /// Actors handed over and not yet taken in by the lot's thread.
    arriving: Mutex<Vec<Actor>>,
    waker: Waker,
}

static LOT: OnceLock<Option<Lot>> = OnceLock::new();

/// Whether there is a lot to park in (its thread could be started).
pub(super) fn available() -> bool {
    LOT.get_or_init(start).is_some()
}

/// Parks `actor` (its thread may then end); gives it back when there is no lot (its
/// thread could not be made), for the caller to go on running it.
pub(super) fn park(actor: Box<Actor>) -> Result<(), Box<Actor>> {
    let Some(lot) = LOT.get_or_init(start).as_ref() else {
        return Err(actor);
    };
    lot.arriving
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(*actor);
    lot.waker.wake();
    Ok(())
}

/// How many terminals wait in the lot now (for tests).
#[cfg(test)]
pub(super) fn parked() -> usize {
    PARKED.load(std::sync::atomic::Ordering::Acquire)
}

#[cfg(test)]
static PARKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn start() -> Option<Lot> {
    let wake = WakePipe::new().ok()?;
    let poller = Poller::new(READY_PER_WAIT).ok()?;
    poller.add(wake.fd(), LOT_WAKE).ok()?;
    let lot = Lot {
        arriving: Mutex::new(Vec::new()),
        waker: wake.waker(),
    };
    std::thread::Builder::new()
        .name("herdr-lot".into())
        .stack_size(256 << 10)
        .spawn(move || Watch::new(poller).run(wake))
        .ok()?;
    Some(lot)
}

/// The lot's thread: the parked terminals, watched, and those waiting to try for a
/// thread again, not watched.
struct Watch {
    poller: Poller,
    parked: HashMap<u64, Box<Actor>>,
    /// Terminals whose thread could not be made, and when to try again.
    retrying: Vec<(Instant, Box<Actor>)>,
    next: u64,
}

impl Watch {
    fn new(poller: Poller) -> Watch {
        Watch {
            poller,
            parked: HashMap::new(),
            retrying: Vec::new(),
            next: 0,
        }
    }

    fn run(mut self, wake: WakePipe) {
        let mut ready = Vec::with_capacity(READY_PER_WAIT);
        loop {
            let arriving = match LOT.get().and_then(Option::as_ref) {
                Some(lot) => {
                    std::mem::take(&mut *lot.arriving.lock().unwrap_or_else(|e| e.into_inner()))
                }
                None => Vec::new(),
            };
            for actor in arriving {
                self.watch(Box::new(actor));
            }
            self.count();
            let now = Instant::now();
            let timeout = self
                .retrying
                .iter()
                .map(|(at, _)| *at)
                .min()
                .map(|t| t.saturating_duration_since(now));
            if let Err(e) = self.poller.wait(&mut ready, timeout) {
                // Not expected (the instance and every descriptor in it are open):
                // every terminal gets its thread back rather than wait unwatched.
                crate::log::error!("pty", "the idle terminals' wait failed: {e}");
                std::thread::sleep(RETRY);
                let all: Vec<u64> = self.parked.keys().copied().collect();
                ready = all.into_iter().map(|n| 2 * n).collect();
            }
            for &token in &ready {
                if token == LOT_WAKE {
                    wake.drain();
                } else if let Some(actor) = self.parked.remove(&(token / 2)) {
                    // (Its other descriptor may be in this batch too: it is gone now.)
                    self.unwatch(&actor);
                    self.resume(actor);
                }
            }
            let now = Instant::now();
            let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retrying)
                .into_iter()
                .partition(|(at, _)| *at <= now);
            self.retrying = waiting;
            for (_, actor) in due {
                self.watch(actor);
            }
            self.count();
        }
    }

    /// Takes `actor` in: watched from now on, or given a thread at once if its
    /// descriptors cannot be watched.
    fn watch(&mut self, actor: Box<Actor>) {
        let n = self.next;
        self.next += 1;
        let added = self.poller.add(actor.master.fd(), 2 * n).and_then(|()| {
            self.poller
                .add(actor.wake.fd(), 2 * n + 1)
                .inspect_err(|_| self.unwatch(&actor))
        });
        match added {
            Ok(()) => {
                self.parked.insert(n, actor);
            }
            Err(e) => {
                crate::log::warn!("pty", "an idle terminal cannot be watched: {e}");
                self.resume(actor);
            }
        }
    }

    /// Stops watching `actor`'s descriptors: before its thread takes them (a
    /// registration lives as long as the open file, whichever descriptor keeps it).
    fn unwatch(&self, actor: &Actor) {
        let _ = self.poller.remove(actor.master.fd());
        let _ = self.poller.remove(actor.wake.fd());
    }

    /// Gives `actor` a thread, or keeps it to try again after `RETRY`.
    fn resume(&mut self, actor: Box<Actor>) {
        if let Err(actor) = resume(actor) {
            self.retrying.push((Instant::now() + RETRY, actor));
        }
    }

    fn count(&self) {
        #[cfg(test)]
        PARKED.store(
            self.parked.len() + self.retrying.len(),
            std::sync::atomic::Ordering::Release,
        );
    }
}

/// Runs `actor` on a new thread; gives it back if the thread could not be made.
fn resume(actor: Box<Actor>) -> Result<(), Box<Actor>> {
    let name = actor.name.clone();
    // The thread takes the actor out; a thread that was never made leaves it here.
    let slot = Arc::new(Mutex::new(Some(actor)));
    let theirs = slot.clone();
    let started = std::thread::Builder::new().name(name).spawn(move || {
        let actor = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(actor) = actor {
            actor.run();
        }
    });
    match started {
        Ok(_) => Ok(()),
        Err(e) => {
            crate::log::warn!("pty", "no thread for a terminal with output waiting: {e}");
            let actor = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            actor.map_or(Ok(()), Err)
        }
    }
}
