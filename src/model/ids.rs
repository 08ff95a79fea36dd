//! The three kinds of id. They are never interchanged:
//!
//! * [`PaneId`]: process-local, names a slot in a layout tree. Never leaves the server
//!   process and is not stable across restarts or handoffs.
//! * Public ids ([`WorkspaceNo`], [`TabNo`], [`PaneNo`]): what users and scripts type.
//!   Stable within a session and never reused (each has its own monotonic counter).
//! * [`TerminalId`]: opaque identity of a terminal (a PTY plus its emulator and child);
//!   lives as long as the terminal, across layout moves, restores and handoffs.

use std::fmt;

/// Internal layout-slot id (process-local counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PaneId(pub u32);

/// Opaque terminal identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TerminalId(pub u64);

/// Public workspace number (`w1`, `w2`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceNo(pub u32);

/// Public tab number (`t1`, `t2`, ...), unique within a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TabNo(pub u32);

/// Public pane number (`p1`, `p2`, ...), unique within a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PaneNo(pub u32);

impl fmt::Display for WorkspaceNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}

impl fmt::Display for TabNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

impl fmt::Display for PaneNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// A hash map keyed by one of these ids. The ids are the server's own counters, never
/// chosen by a client, so they need no protection from crafted collisions: a multiply
/// mixes them (SipHash, the default, cost ~110 instructions a lookup, and a keystroke's
/// turn looks the focused pane and its terminal up a few dozen times).
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`]: for integer keys.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the high bits, which hashbrown uses for its control bytes,
        // depend on every bit of the id.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher as _;

    #[test]
    fn consecutive_ids_spread_over_the_whole_hash() {
        let build = std::hash::BuildHasherDefault::<IdHasher>::default();
        // hashbrown picks a bucket from the low bits and tells entries apart by the top
        // seven: both must vary from one counter value to the next.
        let hashes: Vec<u64> = (0..1024u64)
            .map(|n| build.hash_one(TerminalId(n)))
            .collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
        assert_eq!(top.len(), 128, "every value of the top seven bits occurs");
        assert!(low.len() > 600, "{} of 1024 buckets", low.len());
        let mut map = IdMap::default();
        for n in 0..10_000u32 {
            map.insert(PaneId(n), n);
        }
        assert!((0..10_000u32).all(|n| map.get(&PaneId(n)) == Some(&n)));
    }
}
