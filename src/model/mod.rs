//! Pure state: workspaces → tabs → layout → panes, and the facts about each terminal.
//! No fds, no threads, no locks, no I/O: everything here is unit-testable.

pub mod copy;
pub mod ids;
pub mod layout;
pub mod state;

pub use copy::Scroll;
pub use state::{AppState, PaneState, Tab, TerminalState, Workspace};
