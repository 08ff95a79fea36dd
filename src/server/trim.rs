//! When the heaps' free pages are given back to the system: a burst of new panes,
//! requests or clients frees much of what it made on the way, in holes between what
//! stays, and the allocator keeps those pages resident until asked. Asking walks every
//! free block on the server thread, so it is done once a burst is over, not during it,
//! and not again and again while a script polls or a client types.

use crate::burst::{self, later, Burst};
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
    /// The changes not yet trimmed after.
    pending: Option<Burst>,
    /// The last trim.
    last: Option<Instant>,
}

impl HeapTrim {
    /// The session's structure changed (or a request or input came) at `now`.
    pub(super) fn changed(&mut self, now: Instant) {
        self.pending = burst::merge(self.pending, Some(Burst::at(now)));
    }

    /// When the next trim is due, if one is.
    pub(super) fn due(&self) -> Option<Instant> {
        let due = self.pending?.due(QUIET, LATEST);
        Some(self.last.map_or(due, |last| due.max(later(last, EVERY))))
    }

    /// Whether a trim is due at `now`; if so, it counts as done.
    pub(super) fn take_due(&mut self, now: Instant) -> bool {
        if self.due().is_none_or(|due| due > now) {
            return false;
        }
        *self = HeapTrim {
            pending: None,
            last: Some(now),
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tenths of a second, up to `until`, at which trims came, with a change at each
    /// tenth `changes` names.
    fn trims(until: u64, changes: impl Fn(u64) -> bool) -> Vec<u64> {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        let mut trimmed = Vec::new();
        for tenth in 0..=until {
            let now = t0 + Duration::from_millis(tenth * 100);
            if changes(tenth) {
                trim.changed(now);
            }
            if trim.take_due(now) {
                trimmed.push(tenth);
            }
        }
        trimmed
    }

    #[test]
    fn a_trim_follows_a_burst_once_it_is_over() {
        let t0 = Instant::now();
        let mut trim = HeapTrim::default();
        assert_eq!(trim.due(), None, "nothing changed");
        trim.changed(t0);
        trim.changed(t0 + Duration::from_secs(1));
        assert_eq!(trim.due(), Some(t0 + Duration::from_secs(3)));
        assert!(!trim.take_due(t0 + Duration::from_secs(2)));
        assert!(trim.take_due(t0 + Duration::from_secs(3)));
        assert_eq!(trim.due(), None, "done");
    }

    #[test]
    fn changes_that_keep_coming_put_it_off_only_so_long() {
        // A change every second for two minutes: a poll, a client typing.
        let trimmed = trims(1190, |tenth| tenth % 10 == 0);
        assert_eq!(
            trimmed,
            [10, 21, 32, 43, 54, 65, 76, 87, 98, 109].map(|s| s * 10)
        );
    }

    #[test]
    fn trims_are_spaced_however_the_changes_come() {
        // A change every three seconds: each would be a burst of its own.
        let trimmed = trims(300, |tenth| tenth % 30 == 0);
        assert_eq!(trimmed, [2, 8, 14, 20, 26].map(|s| s * 10));
    }

    #[test]
    fn the_trim_after_a_burst_is_not_put_off_by_one_during_it() {
        // 14 s of changes, then quiet.
        assert_eq!(trims(200, |tenth| tenth <= 140), [100, 160]);
    }
}
