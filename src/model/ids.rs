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
