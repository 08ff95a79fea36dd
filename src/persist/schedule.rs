//! When to save the session: a pure state machine fed with `Instant`s — no sleeps, no I/O,
//! so the server loop asks it for a deadline and tests drive it with synthetic time.
//!
//! Invariant: at most one save is in flight, and while one is, nothing is due. Otherwise
//! pending changes are due `QUIET` after the last of them (so a burst coalesces into one
//! save) but never later than `MAX_DELAY` after the first (so steady typing still loses at
//! most about a second). The one exception is after failed saves: a retry then waits for a
//! backoff growing from `QUIET` to `MAX_BACKOFF`, so a full disk is not hammered.

use crate::burst::{self, later, Burst};
use std::time::{Duration, Instant};

/// Save this long after the last change…
pub const QUIET: Duration = Duration::from_millis(200);
/// …but never later than this after the first unsaved change.
pub const MAX_DELAY: Duration = Duration::from_millis(1000);
/// The longest wait before retrying after failed saves.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait after `failures` consecutive failed saves: QUIET, doubling up to MAX_BACKOFF.
fn retry_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    QUIET.saturating_mul(1 << doublings).min(MAX_BACKOFF)
}

/// A running save, with the changes it is writing (`None` when it was started with
/// nothing pending, e.g. a final save at shutdown).
#[derive(Debug)]
struct Flight {
    changes: Option<Burst>,
}

/// Decides when the server saves; fed by the server loop, which does the actual writing.
#[derive(Debug, Default)]
pub struct SaveSchedule {
    /// Changes not yet being written.
    pending: Option<Burst>,
    flight: Option<Flight>,
    /// Consecutive failed saves; 0 after a success.
    failures: u32,
    /// After a failure: no save before this.
    retry_at: Option<Instant>,
}

impl SaveSchedule {
    /// Something worth saving changed at `now`.
    pub fn changed(&mut self, now: Instant) {
        self.pending = burst::merge(self.pending, Some(Burst::at(now)));
    }

    /// When the next save should start; `None` if nothing is pending or a save is in flight.
    pub fn due_at(&self) -> Option<Instant> {
        if self.flight.is_some() {
            return None;
        }
        let due = self.pending?.due(QUIET, MAX_DELAY);
        Some(self.retry_at.map_or(due, |retry| due.max(retry)))
    }

    /// Whether a save should start now.
    pub fn is_due(&self, now: Instant) -> bool {
        self.due_at().is_some_and(|due| now >= due)
    }

    /// A save began: the pending changes are now being written. Call it right after
    /// taking the snapshot, on the thread that records changes: everything pending then
    /// counts as written whatever its stamp, since a change stamped after `now` (a clock
    /// read later in the same loop turn) is still in that snapshot. (Calling this while a
    /// save is in flight is a caller bug; the two are then treated as one save, ended by
    /// one `finished`.)
    pub fn start(&mut self, _now: Instant) {
        let taken = self.pending.take();
        let earlier = self.flight.take().and_then(|flight| flight.changes);
        self.flight = Some(Flight {
            changes: burst::merge(earlier, taken),
        });
    }

    /// The save ended at `now`. Changes made during the flight stay pending, with deadlines
    /// counted from when they happened. A failed save re-marks its changes pending and
    /// holds the retry back by a backoff (QUIET, doubling, at most MAX_BACKOFF).
    pub fn finished(&mut self, ok: bool, now: Instant) {
        // No save running: nothing to end (a stray call must not invent pending changes).
        let Some(flight) = self.flight.take() else {
            return;
        };
        if ok {
            self.failures = 0;
            self.retry_at = None;
        } else {
            self.failures = self.failures.saturating_add(1);
            self.pending = burst::merge(self.pending, flight.changes);
            self.retry_at = Some(later(now, retry_delay(self.failures)));
        }
    }

    /// Whether changes are waiting that no running save covers.
    pub fn pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether a save is running (between `start` and `finished`).
    pub fn in_flight(&self) -> bool {
        self.flight.is_some()
    }

    /// Consecutive failed saves (0 after a success), for the server to report.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn no_change_is_never_due() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        assert_eq!(s.due_at(), None);
        assert!(!s.is_due(base + Duration::from_secs(3600)));
        // A save with nothing pending (shutdown) does not create work, even if it fails.
        s.start(base);
        s.finished(false, base + ms(5));
        assert!(!s.pending());
        assert!(!s.is_due(base + Duration::from_secs(3600)));
        // A stray `finished` is ignored.
        s.finished(false, base + ms(10));
        assert!(!s.pending() && !s.in_flight());
    }

    #[test]
    fn single_change_is_due_after_quiet() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        assert!(s.pending());
        assert_eq!(s.due_at(), Some(base + QUIET));
        assert!(!s.is_due(base + QUIET - ms(1)));
        assert!(s.is_due(base + QUIET));
    }

    #[test]
    fn burst_coalesces_until_quiet() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        for i in 0..5 {
            s.changed(base + ms(i * 50));
        }
        assert_eq!(s.due_at(), Some(base + ms(200) + QUIET));
    }

    #[test]
    fn continuous_changes_are_due_by_max_delay() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        for i in 0..=50 {
            s.changed(base + ms(i * 100));
            assert!(
                s.due_at().is_some_and(|due| due <= base + MAX_DELAY),
                "change {i}"
            );
        }
        assert_eq!(s.due_at(), Some(base + MAX_DELAY));
    }

    /// A server loop ticking every 10 ms: a change every 100 ms for 5 s, saves taking
    /// 50 ms. No change waits more than MAX_DELAY for its save to start, no two saves
    /// overlap, and the burst coalesces into a handful of saves.
    #[test]
    fn server_loop_saves_every_change_within_max_delay() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        let mut oldest_unsaved: Option<Instant> = None;
        let mut save_ends: Option<Instant> = None;
        let mut saves = 0;
        for tick in 0..=700u64 {
            let now = base + ms(tick * 10);
            if tick % 10 == 0 && tick <= 500 {
                s.changed(now);
                oldest_unsaved.get_or_insert(now);
            }
            if save_ends.is_some_and(|end| now >= end) {
                s.finished(true, now);
                save_ends = None;
            }
            if s.is_due(now) {
                assert!(!s.in_flight() && save_ends.is_none());
                let oldest = oldest_unsaved.take().expect("due with nothing unsaved");
                assert!(now - oldest <= MAX_DELAY, "waited {:?}", now - oldest);
                s.start(now);
                save_ends = Some(now + ms(50));
                saves += 1;
            }
        }
        assert!(!s.pending() && !s.in_flight() && oldest_unsaved.is_none());
        assert!((5..=8).contains(&saves), "{saves} saves");
    }

    #[test]
    fn nothing_is_due_while_in_flight() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        s.start(base + QUIET);
        assert!(s.in_flight() && !s.pending());
        s.changed(base + ms(300));
        assert!(s.pending());
        assert_eq!(s.due_at(), None);
        assert!(!s.is_due(base + Duration::from_secs(3600)));
    }

    #[test]
    fn changes_during_flight_keep_their_own_deadlines() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        s.start(base + ms(200));
        s.changed(base + ms(300));
        s.changed(base + ms(400));
        s.finished(true, base + ms(450));
        assert_eq!(s.due_at(), Some(base + ms(600)));

        // A slow save: the change at 700 ms was due by 1700 ms, so it is due at once.
        s.start(base + ms(600));
        s.changed(base + ms(700));
        s.changed(base + ms(1600));
        s.finished(true, base + ms(2500));
        assert_eq!(s.due_at(), Some(base + ms(1700)));
        assert!(s.is_due(base + ms(2500)));
    }

    #[test]
    fn everything_pending_at_start_is_in_the_save() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        s.changed(base + ms(500)); // stamped after the tick's `now`, same loop turn
        s.start(base + ms(300));
        assert!(!s.pending());
        s.finished(true, base + ms(350));
        assert_eq!(s.due_at(), None);
        // A second `start` during the flight merges into it; one failure re-marks both.
        s.changed(base + ms(400));
        s.start(base + ms(400));
        s.changed(base + ms(450));
        s.start(base + ms(450));
        s.finished(false, base + ms(460));
        assert!(!s.in_flight() && s.pending());
        assert_eq!(s.due_at(), Some(base + ms(460) + QUIET));
    }

    #[test]
    fn failed_save_is_retried_with_bounded_growing_backoff() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        let mut last_gap = Duration::ZERO;
        for round in 0..20 {
            let started = s.due_at().expect("failed changes stay pending");
            s.start(started);
            let now = started + ms(10);
            s.finished(false, now);
            assert!(s.pending());
            let retry = s.due_at().expect("pending");
            // New changes do not bring the retry forward.
            s.changed(now + ms(1));
            assert!(s.due_at() >= Some(retry));
            let gap = retry - now;
            if round == 0 {
                assert_eq!(gap, QUIET);
            }
            assert!(
                gap >= last_gap && gap <= MAX_BACKOFF,
                "round {round}: {gap:?}"
            );
            last_gap = gap;
        }
        assert_eq!(last_gap, MAX_BACKOFF);
        assert_eq!(s.failures(), 20);

        // One success ends the backoff: the next change is due after QUIET again.
        let now = s.due_at().expect("pending");
        s.start(now);
        s.finished(true, now + ms(10));
        assert!(!s.pending());
        assert_eq!(s.failures(), 0);
        s.changed(now + ms(20));
        assert_eq!(s.due_at(), Some(now + ms(20) + QUIET));
    }

    #[test]
    fn failure_keeps_the_earliest_deadline_of_flight_and_new_changes() {
        let base = Instant::now();
        let mut s = SaveSchedule::default();
        s.changed(base);
        s.start(base + ms(200));
        s.changed(base + ms(250));
        s.finished(false, base + ms(2000));
        // Both the failed changes and the one from the flight are overdue: retry after QUIET.
        assert_eq!(s.due_at(), Some(base + ms(2000) + QUIET));
        assert_eq!(retry_delay(1), QUIET);
        assert_eq!(retry_delay(u32::MAX), MAX_BACKOFF);
    }
}
