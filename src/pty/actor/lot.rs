//! Terminals with nothing happening wait here without a thread of their own. An actor
//! idle for `IDLE_TRIM` with nothing to do but read (not lent, paused or writing, no
//! timer) hands itself to the lot and its thread ends; one thread watches the masters
//! and wake pipes of all parked terminals in one `poll`, and gives a terminal whose
//! master or wake pipe fires a new thread, which runs the actor's loop as before (it
//! finds the output, or the message, still waiting: both are level-triggered). A thread
//! costs an idle pane its stack pages and the thread's own state (~12 KiB resident);
//! 1,000 panes that wait cost one thread.
//!
//! A terminal whose new thread could not be made (the system's thread limit) stays
//! parked and is tried again after `RETRY`, its descriptors not watched meanwhile.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::run::Actor;
use crate::sys::{self, WakePipe, Waker};

/// How long a terminal whose thread could not be made waits before the next try.
const RETRY: Duration = Duration::from_millis(100);

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
    let lot = Lot {
        arriving: Mutex::new(Vec::new()),
        waker: wake.waker(),
    };
    std::thread::Builder::new()
        .name("herdr-lot".into())
        .stack_size(256 << 10)
        .spawn(move || watch(wake))
        .ok()?;
    Some(lot)
}

/// A parked actor, and when its thread may be tried again after a failed start.
struct Parked {
    actor: Box<Actor>,
    retry_at: Option<Instant>,
}

fn watch(wake: WakePipe) {
    let mut parked: Vec<Parked> = Vec::new();
    loop {
        if let Some(lot) = LOT.get().and_then(Option::as_ref) {
            let mut arriving = lot.arriving.lock().unwrap_or_else(|e| e.into_inner());
            parked.extend(arriving.drain(..).map(|actor| Parked {
                actor: Box::new(actor),
                retry_at: None,
            }));
        }
        #[cfg(test)]
        PARKED.store(parked.len(), std::sync::atomic::Ordering::Release);
        let now = Instant::now();
        let watched: Vec<usize> = (0..parked.len())
            .filter(|&i| parked[i].retry_at.is_none())
            .collect();
        let timeout = parked
            .iter()
            .filter_map(|p| p.retry_at)
            .min()
            .map(|t| t.saturating_duration_since(now));
        let ready = {
            let mut fds = vec![wake.fd()];
            for &i in &watched {
                let actor = &parked[i].actor;
                fds.push(actor.master.fd());
                fds.push(actor.wake.fd());
            }
            match sys::poll_readable(&fds, timeout) {
                Ok(ready) => ready,
                Err(e) => {
                    // Not expected (every descriptor is open while its actor is here);
                    // every terminal gets its thread back rather than wait unwatched.
                    crate::log::error!("pty", "the idle terminals' poll failed: {e}");
                    vec![true; fds.len()]
                }
            }
        };
        if ready[0] {
            wake.drain();
        }
        let now = Instant::now();
        let mut due: Vec<usize> = watched
            .iter()
            .enumerate()
            .filter(|&(k, _)| ready[1 + 2 * k] || ready[2 + 2 * k])
            .map(|(_, &i)| i)
            .collect();
        due.extend((0..parked.len()).filter(|&i| parked[i].retry_at.is_some_and(|t| t <= now)));
        due.sort_unstable();
        // From the back, so the indices still to take stay valid.
        for &i in due.iter().rev() {
            let p = parked.swap_remove(i);
            if let Err(actor) = resume(p.actor) {
                parked.push(Parked {
                    actor,
                    retry_at: Some(now + RETRY),
                });
            }
        }
        #[cfg(test)]
        PARKED.store(parked.len(), std::sync::atomic::Ordering::Release);
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
