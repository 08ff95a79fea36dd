//! Rendering, pure: `view` is what a frame is made from and where things are on screen;
//! `chrome` draws the sidebar, tab bar, status line and help, `pane` a pane's screen, and
//! `ui` composes them into a client's [`diff::Frame`]; `diff` turns two frames into the
//! terminal bytes between them. Imports run one way: ui → chrome, pane → view; nothing
//! here imports the server or the PTY layer.

mod chrome;
pub mod diff;
pub mod pane;
pub mod ui;
pub mod view;
