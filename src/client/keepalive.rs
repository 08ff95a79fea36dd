//! Keeping a link over a network honest: the server is pinged, a link that stays silent is
//! ended, and the events that strand a connection without a word — a wake from sleep, a
//! SIGCONT after the process was stopped, this machine's addresses or routes changing (a
//! new Wi-Fi, a VPN) — are noticed at once: the link is probed (a ping that must be
//! answered soon) and a reconnection waiting for its next attempt makes it now.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a watched link is pinged, and how long it may stay silent before it is
/// taken for dead (a network that went away).
const PING_EVERY: Duration = Duration::from_secs(2);
const SILENT_FOR: Duration = Duration::from_secs(6);
/// How soon a link is pinged while its round trip is not known yet.
const FIRST_PING: Duration = Duration::from_millis(200);
/// After a jolt (a wake, a SIGCONT, a network change): how long the link has to answer
/// the ping sent then — PROBE_RTTS round trips as measured by the pings, and never less
/// than PROBE_MIN (a loaded host answers a little late; a live link must not be cut).
const PROBE_MIN: Duration = Duration::from_millis(500);
const PROBE_RTTS: u32 = 4;
/// How often the watchdog looks (and reads the clocks: two cheap calls).
const TICK: Duration = Duration::from_millis(250);
/// Time suspended that grew by this much since the last look: the machine slept.
const SLEPT: Duration = Duration::from_millis(500);

/// What the keepalive threads watch: the current link's breaker, when it last heard from
/// the server, since when a probe waits for an answer, and the round trip of the pings.
#[derive(Default)]
pub(crate) struct Watch {
    breaker: Option<Box<dyn Fn() + Send>>,
    heard: Option<Instant>,
    probe: Option<Instant>,
    /// When the latest ping still unanswered went out.
    pinged: Option<Instant>,
    /// The smoothed round trip and its variation (as TCP's SRTT and RTTVAR); kept
    /// across links.
    rtt: Option<Duration>,
    rttvar: Duration,
}

impl Watch {
    /// A link just made (or none), heard from now; the round trip measured so far stays.
    pub(crate) fn attach(&mut self, breaker: Option<Box<dyn Fn() + Send>>) {
        *self = Watch {
            breaker,
            heard: Some(Instant::now()),
            rtt: self.rtt,
            rttvar: self.rttvar,
            ..Watch::default()
        };
    }

    /// Ends the watched link's watch and gives back how to end the link itself.
    pub(crate) fn breaker_take(&mut self) -> Option<Box<dyn Fn() + Send>> {
        self.breaker.take()
    }

    /// No link any more: nothing may watch (or kill) it.
    pub(crate) fn detach(&mut self) {
        self.attach(None);
        self.heard = None;
    }

    /// How long a probe waits for its answer on this link.
    fn probe_wait(&self) -> Duration {
        // (More on a link whose round trip varies: a jittery Wi-Fi must not be cut while
        // it works.)
        self.rtt.map_or(PROBE_MIN, |rtt| {
            (rtt * PROBE_RTTS).max(rtt + self.rttvar * 4).max(PROBE_MIN)
        })
    }

    /// Whether the link is to be taken for dead now.
    fn dead(&self, now: Instant) -> bool {
        let Some(heard) = self.heard else {
            return false;
        };
        let unanswered = self
            .probe
            .is_some_and(|p| heard < p && now.duration_since(p) > self.probe_wait());
        unanswered || now.duration_since(heard) > SILENT_FOR
    }

    /// When the watchdog must look next: at its tick, or sooner when a probe's time ends.
    fn next_look(&self, now: Instant) -> Duration {
        match self.probe {
            Some(p) => {
                (p + self.probe_wait())
                    .saturating_duration_since(now)
                    .min(TICK)
                    + Duration::from_millis(1)
            }
            None => TICK,
        }
    }

    /// A pong came: one more sample of the round trip.
    fn ponged(&mut self, now: Instant) {
        if let Some(sent) = self.pinged.take() {
            let sample = now.duration_since(sent);
            self.rtt = Some(match self.rtt {
                Some(rtt) => {
                    self.rttvar = (self.rttvar * 3 + rtt.abs_diff(sample)) / 4;
                    (rtt * 7 + sample) / 8
                }
                None => {
                    self.rttvar = sample / 2;
                    sample
                }
            });
        }
    }
}

pub(crate) type SharedWatch = Arc<Mutex<Watch>>;

pub(crate) fn watch(w: &SharedWatch) -> std::sync::MutexGuard<'_, Watch> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes that bytes came over the link.
pub(crate) fn heard(w: &SharedWatch) {
    let mut w = watch(w);
    w.heard = Some(Instant::now());
    w.probe = None;
}

/// Notes that the server answered a ping.
pub(crate) fn ponged(w: &SharedWatch) {
    watch(w).ponged(Instant::now());
}

/// The link's round trip as the pings measured it (smoothed), if they did.
pub(crate) fn rtt(w: &SharedWatch) -> Option<Duration> {
    watch(w).rtt
}

/// What the threads that notice jolts share: the link watched, a waiting reconnection's
/// nudge, the ping thread's and the watchdog's wake-ups.
#[derive(Clone)]
struct Jolts {
    watched: SharedWatch,
    nudged: Arc<AtomicBool>,
    ping_now: mpsc::Sender<()>,
    look_now: mpsc::Sender<()>,
}

impl Jolts {
    /// Something may have stranded the link: a reconnection waiting tries now, and a live
    /// link is probed (unless a probe is under way already).
    fn jolt(&self) {
        self.nudged.store(true, Ordering::Release);
        let mut w = watch(&self.watched);
        if w.breaker.is_some() && w.probe.is_none() {
            w.probe = Some(Instant::now());
            let _ = self.ping_now.send(());
            let _ = self.look_now.send(());
        }
    }
}

/// Pings the server over a watched link (one thread, which a full pipe may block) and
/// ends the link once it stays silent (another, which never writes, so it cannot be).
/// The second one also watches for a wake or SIGCONT, and a third for network changes:
/// then the link is probed, and `nudged` set for a reconnection that waits.
pub(crate) fn spawn(
    ping: Box<dyn Fn() + Send>,
    watched: SharedWatch,
    done: Arc<AtomicBool>,
    nudged: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let (ping_now, pings) = mpsc::channel::<()>();
    let (look_now, looks) = mpsc::channel::<()>();
    let jolts = Jolts {
        watched: watched.clone(),
        nudged,
        ping_now,
        look_now,
    };
    let (w, d) = (watched.clone(), done.clone());
    std::thread::Builder::new()
        .name("herdr-ping".into())
        .spawn(move || {
            while !d.load(Ordering::Acquire) {
                // (Until the round trip is known, a link is pinged at once and then soon:
                // prediction waits for it.)
                let every = {
                    let w = watch(&w);
                    match (w.rtt, w.pinged, &w.breaker) {
                        (None, None, Some(_)) => Duration::ZERO,
                        (None, _, Some(_)) => FIRST_PING,
                        // (Known, or no link that answers pings: no hurry.)
                        _ => PING_EVERY,
                    }
                };
                if let Err(mpsc::RecvTimeoutError::Disconnected) = pings.recv_timeout(every) {
                    break;
                }
                let mut watched = watch(&w);
                if watched.breaker.is_some() {
                    watched.pinged.get_or_insert_with(Instant::now);
                    drop(watched);
                    ping();
                }
            }
        })?;
    let (j, d) = (jolts.clone(), done.clone());
    std::thread::Builder::new()
        .name("herdr-netwatch".into())
        .spawn(move || {
            let mut net = crate::sys::netwatch::NetWatch::default();
            while !d.load(Ordering::Acquire) && net.changed().is_ok() {
                j.jolt();
            }
        })?;
    let continued = crate::sys::clock::sigcont_flag()?;
    std::thread::Builder::new()
        .name("herdr-watchdog".into())
        .spawn(move || {
            let mut suspended = crate::sys::clock::time_suspended();
            let mut wait = TICK;
            while !done.load(Ordering::Acquire) {
                // (Woken early by a network change's probe, to judge it on time.)
                let _ = looks.recv_timeout(wait);
                let now_suspended = crate::sys::clock::time_suspended();
                let slept = match (suspended, now_suspended) {
                    (Some(a), Some(b)) => b.saturating_sub(a) >= SLEPT,
                    _ => false,
                };
                suspended = now_suspended;
                if continued.swap(false, Ordering::AcqRel) || slept {
                    jolts.jolt();
                }
                let now = Instant::now();
                let mut w = watch(&watched);
                if w.dead(now) {
                    if let Some(brk) = w.breaker.take() {
                        brk();
                    }
                }
                wait = w.next_look(now);
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
pub(crate) struct Pace {
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
    pub(crate) fn reset(&mut self) {
        *self = Pace::default();
    }

    /// How long to wait before the next attempt (zero for the first of an outage).
    pub(crate) fn wait(&self, now: Instant) -> Duration {
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
    pub(crate) fn attempt(&mut self, now: Instant) {
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
        let mut w = Watch {
            heard: Some(t0),
            ..Watch::default()
        };
        assert!(!w.dead(t0 + Duration::from_secs(2)));
        w.probe = Some(t0 + Duration::from_secs(1));
        assert!(!w.dead(t0 + Duration::from_millis(1400)));
        assert!(
            w.dead(t0 + Duration::from_millis(1600)),
            "half a second at least"
        );
        assert_eq!(
            w.next_look(t0 + Duration::from_millis(1400)),
            Duration::from_millis(101)
        );
        // Answered: only silence counts again.
        w.heard = Some(t0 + Duration::from_secs(2));
        assert!(!w.dead(t0 + Duration::from_secs(3)));
        assert!(w.dead(t0 + Duration::from_secs(9)));
    }

    #[test]
    fn a_slow_link_gets_a_probe_of_a_few_round_trips() {
        let t0 = Instant::now();
        let mut w = Watch {
            pinged: Some(t0),
            ..Watch::default()
        };
        w.ponged(t0 + Duration::from_millis(800));
        assert_eq!(w.rtt, Some(Duration::from_millis(800)));
        assert_eq!(w.probe_wait(), Duration::from_millis(3200));
        // A jittery link: its variation counts.
        let jittery = Watch {
            rtt: Some(Duration::from_millis(100)),
            rttvar: Duration::from_millis(200),
            ..Watch::default()
        };
        assert_eq!(jittery.probe_wait(), Duration::from_millis(900));
        // Smoothed: one fast answer does not make it a fast link.
        w.pinged = Some(t0);
        w.ponged(t0);
        assert_eq!(w.rtt, Some(Duration::from_millis(700)));
        // A pong without a ping out (a probe answered twice) is no sample.
        w.ponged(t0 + Duration::from_secs(9));
        assert_eq!(w.rtt, Some(Duration::from_millis(700)));
        // Across a new link the estimate stays.
        w.attach(None);
        assert_eq!(w.rtt, Some(Duration::from_millis(700)));
        w.rtt = Some(Duration::from_millis(20));
        w.rttvar = Duration::from_millis(5);
        assert_eq!(w.probe_wait(), PROBE_MIN);
    }
}
