//! Pure state: workspaces → tabs → layout → panes, and the facts about each terminal.
//! No fds, no threads, no locks, no I/O: everything here is unit-testable.

pub mod ids;
pub mod layout;
pub mod state;

pub use state::{AppState, PaneState, Tab, TerminalState, Workspace};

/// Scroll/copy mode of one terminal (shared by every client looking at it, like tmux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scroll {
    /// The highlighted line, as rows from the top of the visible screen.
    pub cursor: u16,
    /// Where a selection started: (absolute line from the bottom of history).
    pub mark: Option<i64>,
}
