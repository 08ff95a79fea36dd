//! When the heaps' free pages are given back to the system: a burst of new panes,
//! requests or clients frees much of what it made on the way, in holes between what
//! stays, and the allocator keeps those pages resident until asked. Asking walks every
//! free block on the server thread, so it is done once a burst is over, not during it,
//! and not again and again while a script polls or a client types.

use std::time::{Duration, Instant};

/// A trim is due this long after the latest change...
const QUIET: Duration = Duration::from_secs(2);
/// ...but changes that keep coming (a poll every second) put it off by this much at most
/// from the first of them...
const LATEST: Duration = Duration::from_secs(10);
/// ...and it comes at most this often. (Short enough that the trim after a burst is
/// not put off by one made during it.)
const EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub(super) struct HeapTrim {
    /// The first and the latest change not yet trimmed after.
    first: Option<Instant>,
    latest: Option<Instant>,
    /// The last trim.
    last: Option<Instant>,
}

impl HeapTrim {
    /// The session's structure changed (or a request or input came) at `now`.
    pub(super) fn changed(&mut self, now: Instant) {
        self.first.get_or_insert(now);
        self.latest = Some(now);
    }

    /// When the next trim is due, if one is.
    pub(super) fn due(&self) -> Option<Instant> {
        let (first, latest) = (self.first?, self.latest?);
        let due = (latest + QUIET).min(first + LATEST);
        Some(self.last.map_or(due, |last| due.max(last + EVERY)))
    }

    /// Whether a trim is due at `now`; if so, it counts as done.
    pub(super) fn take_due(&mut self, now: Instant) -> bool {
        if self.due().is_none_or(|due| due > now) {
            return false;
        }
        *self = HeapTrim {
            first: None,
            latest: None,
            last: Some(now),
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_trim_follows_a_burst_once_it_is_over() {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        assert_eq!(trim.due(), None, "nothing changed");
        trim.changed(t0);
        trim.changed(t0 + secs(1));
        assert_eq!(trim.due(), Some(t0 + secs(3)));
        assert!(!trim.take_due(t0 + secs(2)));
        assert!(trim.take_due(t0 + secs(3)));
        assert_eq!(trim.due(), None, "done");
    }

    #[test]
    fn changes_that_keep_coming_put_it_off_only_so_long() {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        let mut trimmed = Vec::new();
        // A change every second for two minutes: a poll, a client typing.
        for s in 0..120 {
            let now = t0 + secs(s);
            trim.changed(now);
            if trim.take_due(now) {
                trimmed.push(s);
            }
        }
        assert_eq!(trimmed, [10, 21, 32, 43, 54, 65, 76, 87, 98, 109]);
    }

    #[test]
    fn trims_are_spaced_however_the_changes_come() {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        let mut trimmed = Vec::new();
        // A change every three seconds: each would be a burst of its own.
        for s in 0..=30 {
            let now = t0 + secs(s);
            if s % 3 == 0 {
                trim.changed(now);
            }
            if trim.take_due(now) {
                trimmed.push(s);
            }
        }
        assert_eq!(trimmed, [2, 8, 14, 20, 26]);
    }

    #[test]
    fn the_trim_after_a_burst_is_not_put_off_by_one_during_it() {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        let mut trimmed = Vec::new();
        // 14 s of changes, then quiet.
        for tenth in 0..=200 {
            let now = t0 + Duration::from_millis(tenth * 100);
            if tenth <= 140 {
                trim.changed(now);
            }
            if trim.take_due(now) {
                trimmed.push(tenth);
            }
        }
        assert_eq!(trimmed, [100, 160]);
    }
}
