//! Rate limits: token buckets per key (a pane) and for all keys together, so a pane that
//! flaps between states, or rings its bell a million times, costs a bounded number of
//! notifications, bells and processes. Pure: the caller passes the time.
//!
//! Invariant: memory is bounded: at most [`MAX_KEYS`] buckets are kept; full ones (which
//! a missing bucket equals) are dropped first.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Buckets kept at most (a session has far fewer panes).
const MAX_KEYS: usize = 4096;

/// Up to `capacity` events at once, then one per `refill`.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub capacity: u32,
    pub refill: Duration,
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: u32,
    /// When the tokens were last counted.
    at: Instant,
}

impl Bucket {
    fn full(rate: Rate, now: Instant) -> Bucket {
        Bucket {
            tokens: rate.capacity,
            at: now,
        }
    }

    /// Adds the tokens earned since `at` (the rest of an interval is kept for the next).
    fn refill(&mut self, rate: Rate, now: Instant) {
        if self.tokens >= rate.capacity || rate.refill.is_zero() {
            self.tokens = rate.capacity;
            self.at = now;
            return;
        }
        let elapsed = now.saturating_duration_since(self.at);
        let earned = (elapsed.as_nanos() / rate.refill.as_nanos()).min(u128::from(u32::MAX));
        let earned = earned as u32;
        self.tokens = self.tokens.saturating_add(earned).min(rate.capacity);
        self.at = match self.tokens >= rate.capacity {
            true => now,
            false => self.at + rate.refill * earned,
        };
    }
}

/// A bucket per key and one for all of them.
#[derive(Debug)]
pub struct Limiter<K> {
    per_key: Rate,
    global_rate: Rate,
    keys: BTreeMap<K, Bucket>,
    global: Option<Bucket>,
}

impl<K: Ord + Copy> Limiter<K> {
    pub fn new(per_key: Rate, global: Rate) -> Limiter<K> {
        Limiter {
            per_key,
            global_rate: global,
            keys: BTreeMap::new(),
            global: None,
        }
    }

    /// Whether an event of `key` may happen now; if so it is counted against both.
    pub fn allow(&mut self, key: K, now: Instant) -> bool {
        let (rate, global_rate) = (self.per_key, self.global_rate);
        if !self.keys.contains_key(&key) && self.keys.len() >= MAX_KEYS {
            self.prune(now);
            if self.keys.len() >= MAX_KEYS {
                return false;
            }
        }
        let global = self
            .global
            .get_or_insert_with(|| Bucket::full(global_rate, now));
        global.refill(global_rate, now);
        let bucket = self
            .keys
            .entry(key)
            .or_insert_with(|| Bucket::full(rate, now));
        bucket.refill(rate, now);
        if bucket.tokens == 0 || global.tokens == 0 {
            return false;
        }
        bucket.tokens -= 1;
        global.tokens -= 1;
        true
    }

    /// A key gone (its pane closed) leaves nothing behind.
    pub fn forget(&mut self, key: K) {
        self.keys.remove(&key);
    }

    /// Drops the buckets that have refilled: a fresh one would be the same.
    fn prune(&mut self, now: Instant) {
        let rate = self.per_key;
        self.keys.retain(|_, b| {
            b.refill(rate, now);
            b.tokens < rate.capacity
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn limiter() -> Limiter<u32> {
        Limiter::new(
            Rate {
                capacity: 2,
                refill: 10 * S,
            },
            Rate {
                capacity: 3,
                refill: S,
            },
        )
    }

    #[test]
    fn a_burst_per_key_then_one_per_interval() {
        let mut l = limiter();
        let t = Instant::now();
        assert!(l.allow(1, t));
        assert!(l.allow(1, t));
        assert!(!l.allow(1, t), "the key's burst is spent");
        assert!(!l.allow(1, t + 9 * S));
        assert!(l.allow(1, t + 10 * S), "one earned");
        assert!(!l.allow(1, t + 11 * S));
        assert!(l.allow(1, t + 40 * S));
        assert!(l.allow(1, t + 40 * S), "refilled to its capacity, no more");
        assert!(!l.allow(1, t + 40 * S));
    }

    #[test]
    fn all_keys_together_are_bounded_too() {
        let mut l = limiter();
        let t = Instant::now();
        let allowed = (0..100).filter(|k| l.allow(*k, t)).count();
        assert_eq!(allowed, 3, "the global burst");
        assert!(l.allow(200, t + S), "one per second for all");
        assert!(!l.allow(201, t + S));
        // A flood of a million events costs the same as a few.
        let flood = (0..1_000_000).filter(|_| l.allow(7, t + 2 * S)).count();
        assert_eq!(flood, 1);
    }

    #[test]
    fn memory_is_bounded_whatever_the_keys() {
        let mut l = Limiter::new(
            Rate {
                capacity: 1,
                refill: S,
            },
            Rate {
                capacity: u32::MAX,
                refill: Duration::ZERO,
            },
        );
        let t = Instant::now();
        for k in 0..10_000u32 {
            l.allow(k, t);
        }
        assert!(l.keys.len() <= MAX_KEYS);
        assert!(l.allow(20_000, t + 2 * S), "refilled buckets make room");
        l.forget(20_000);
        assert!(!l.keys.contains_key(&20_000));
    }
}
