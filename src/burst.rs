//! A burst of changes, known by the moments of its first and its last change, and when
//! work that waits for a burst to end is due: a while after the last change, but no later
//! than a bound after the first (steady changes must not put it off for good). The
//! session's saves and the heaps' trims wait so.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    first: Instant,
    last: Instant,
}

impl Burst {
    pub fn at(t: Instant) -> Self {
        Burst { first: t, last: t }
    }

    /// Both bursts as one. (min/max rather than assuming order: callers may stamp
    /// changes on other threads.)
    pub fn merge(self, other: Burst) -> Burst {
        Burst {
            first: self.first.min(other.first),
            last: self.last.max(other.last),
        }
    }

    /// `quiet` after the last change, but at the latest `bound` after the first.
    pub fn due(&self, quiet: Duration, bound: Duration) -> Instant {
        later(self.last, quiet).min(later(self.first, bound))
    }
}

/// Either burst, or both as one.
pub fn merge(a: Option<Burst>, b: Option<Burst>) -> Option<Burst> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.merge(b)),
        (a, b) => a.or(b),
    }
}

/// `t + d`; on overflow (only with absurd instants) `t`, i.e. "due at once" rather than
/// never.
pub fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).unwrap_or(t)
}
