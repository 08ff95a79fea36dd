//! Keeping a link over a network honest: the server is pinged, a link that stays silent is
//! ended, and the events that strand a connection without a word — a wake from sleep, a
//! SIGCONT after the process was stopped — are noticed at once: the link is probed (a ping
//! that must be answered soon) and a reconnection waiting for its next attempt makes it
//! now.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{send, SharedWriter};
use crate::protocol::frame::ClientMsg;

/// How often a watched link is pinged, and how long it may stay silent before it is
/// taken for dead (a network that went away).
const PING_EVERY: Duration = Duration::from_secs(2);
const SILENT_FOR: Duration = Duration::from_secs(6);
/// After a wake or SIGCONT: how long the link has to answer the ping sent then.
const PROBE_WAIT: Duration = Duration::from_millis(1500);
/// How often the watchdog looks (and reads the clocks: two cheap calls).
const TICK: Duration = Duration::from_millis(250);
/// Time suspended that grew by this much since the last look: the machine slept.
const SLEPT: Duration = Duration::from_millis(500);

/// What the keepalive threads watch: the current link's breaker, when it last heard from
/// the server, and since when a probe waits for an answer.
#[derive(Default)]
pub(super) struct Watch {
    breaker: Option<Box<dyn Fn() + Send>>,
    heard: Option<Instant>,
    probe: Option<Instant>,
}

impl Watch {
    /// A link just made (or none), heard from now.
    pub(super) fn new(breaker: Option<Box<dyn Fn() + Send>>) -> Watch {
        Watch {
            breaker,
            heard: Some(Instant::now()),
            probe: None,
        }
    }

    /// Whether the link is to be taken for dead now.
    fn dead(&self, now: Instant) -> bool {
        let Some(heard) = self.heard else {
            return false;
        };
        let unanswered = self
            .probe
            .is_some_and(|p| heard < p && now.duration_since(p) > PROBE_WAIT);
        unanswered || now.duration_since(heard) > SILENT_FOR
    }
}

pub(super) type SharedWatch = Arc<Mutex<Watch>>;

pub(super) fn watch(w: &SharedWatch) -> std::sync::MutexGuard<'_, Watch> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes that bytes came over the link.
pub(super) fn heard(w: &SharedWatch) {
    let mut w = watch(w);
    w.heard = Some(Instant::now());
    w.probe = None;
}

/// Pings the server over a watched link (one thread, which a full pipe may block) and
/// ends the link once it stays silent (another, which never writes, so it cannot be).
/// The second one also watches for a wake or SIGCONT: then it has the link probed, and
/// sets `nudged` for a reconnection that waits.
pub(super) fn spawn(
    writer: SharedWriter,
    watched: SharedWatch,
    done: Arc<AtomicBool>,
    nudged: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let (ping_now, pings) = mpsc::channel::<()>();
    let (w, d) = (watched.clone(), done.clone());
    std::thread::Builder::new()
        .name("herdr-ping".into())
        .spawn(move || {
            while !d.load(Ordering::Acquire) {
                if let Err(mpsc::RecvTimeoutError::Disconnected) = pings.recv_timeout(PING_EVERY) {
                    break;
                }
                if watch(&w).breaker.is_some() {
                    send(&writer, ClientMsg::Ping);
                }
            }
        })?;
    let continued = crate::sys::clock::sigcont_flag()?;
    std::thread::Builder::new()
        .name("herdr-watchdog".into())
        .spawn(move || {
            let mut suspended = crate::sys::clock::time_suspended();
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(TICK);
                let now_suspended = crate::sys::clock::time_suspended();
                let slept = match (suspended, now_suspended) {
                    (Some(a), Some(b)) => b.saturating_sub(a) >= SLEPT,
                    _ => false,
                };
                suspended = now_suspended;
                let woke = continued.swap(false, Ordering::AcqRel) || slept;
                let now = Instant::now();
                let mut w = watch(&watched);
                if woke {
                    nudged.store(true, Ordering::Release);
                    if w.breaker.is_some() && w.probe.is_none() {
                        w.probe = Some(now);
                        let _ = ping_now.send(());
                    }
                }
                if w.dead(now) {
                    if let Some(brk) = w.breaker.take() {
                        brk();
                    }
                }
            }
        })
        .map(drop)
}

/// When the next reconnection attempt may start. Each attempt bounds its own time (the
/// transport's connect timeout), so attempts follow each other closely while the link is
/// down — a link that returns waits about a second at most — but never more often than
/// every RETRY_EVERY (an attempt that fails at once, say with no network at all, does not
/// spin), and less often once an outage lasts.
#[derive(Default)]
pub(super) struct Pace {
    /// The first attempt of this outage, and the latest.
    since: Option<Instant>,
    last: Option<Instant>,
}

/// The shortest time between the starts of two attempts, and after a long outage.
const RETRY_EVERY: Duration = Duration::from_millis(500);
const RETRY_EVERY_LATER: Duration = Duration::from_secs(1);
const LATER: Duration = Duration::from_secs(120);

impl Pace {
    /// The link is back: the next outage starts afresh.
    pub(super) fn reset(&mut self) {
        *self = Pace::default();
    }

    /// How long to wait before the next attempt (zero for the first of an outage).
    pub(super) fn wait(&self, now: Instant) -> Duration {
        let every = if self.since.is_some_and(|s| now.duration_since(s) > LATER) {
            RETRY_EVERY_LATER
        } else {
            RETRY_EVERY
        };
        match self.last {
            Some(last) => (last + every).saturating_duration_since(now),
            None => Duration::ZERO,
        }
    }

    /// An attempt starts now.
    pub(super) fn attempt(&mut self, now: Instant) {
        self.since.get_or_insert(now);
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_follow_closely_but_never_spin() {
        let t0 = Instant::now();
        let mut pace = Pace::default();
        assert_eq!(pace.wait(t0), Duration::ZERO, "the first one at once");
        pace.attempt(t0);
        // One that failed at once waits for its turn; one that took its time does not.
        assert_eq!(
            pace.wait(t0 + Duration::from_millis(10)),
            Duration::from_millis(490)
        );
        assert_eq!(pace.wait(t0 + Duration::from_secs(2)), Duration::ZERO);
        // A long outage spaces them out, but never beyond a second.
        let late = t0 + LATER + Duration::from_secs(1);
        pace.attempt(late);
        assert_eq!(pace.since, Some(t0));
        assert_eq!(pace.wait(late), Duration::from_secs(1));
        pace.reset();
        assert_eq!(pace.wait(Instant::now()), Duration::ZERO);
    }

    #[test]
    fn a_probe_unanswered_ends_the_link_sooner_than_silence() {
        let t0 = Instant::now();
        let mut w = Watch::new(None);
        w.heard = Some(t0);
        assert!(!w.dead(t0 + Duration::from_secs(2)));
        w.probe = Some(t0 + Duration::from_secs(1));
        assert!(!w.dead(t0 + Duration::from_secs(2)));
        assert!(w.dead(t0 + Duration::from_secs(3)));
        // Answered: only silence counts again.
        w.heard = Some(t0 + Duration::from_secs(2));
        assert!(!w.dead(t0 + Duration::from_secs(3)));
        assert!(w.dead(t0 + Duration::from_secs(9)));
    }
}
