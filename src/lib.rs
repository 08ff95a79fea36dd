//! herdr: a terminal multiplexer built as the runtime coding agents live in.
//!
//! Processes: one **server** per session owns every PTY, child process, emulator and the
//! layout; **clients** attach over a unix socket (0600 in a 0700 folder, peer uid
//! checked), send input and sizes, and write the frames the server renders for them; the
//! **CLI** and scripts speak a JSON API over the same socket.
//!
//! Ownership: the server thread owns `AppState` (pure facts, `model`) and the
//! `TerminalRuntimeRegistry` (`pty`); each terminal's I/O actor thread owns its PTY master
//! fd; each client connection has a reader thread and a writer thread that own its socket
//! halves. Every `unsafe` line lives in `sys`.
//!
//! A keystroke: client stdin → `Input` frame → server tokenizes (`input`) → prefix/binding
//! or the focused terminal's input queue → actor writes the PTY. Output: actor reads the
//! PTY → emulator (`term`) → dirty notification → server composes each client's view
//! (`render::ui`) → diff against that client's last frame (`render::diff`) → `Output`.
#![deny(unsafe_code)]

pub mod agent;
pub mod bindings;
pub mod burst;
pub mod cli;
pub mod client;
pub mod config;
pub mod input;
pub mod log;
pub mod machine;
pub mod model;
pub mod paths;
pub mod persist;
pub mod protocol;
pub mod pty;
pub mod queue;
pub mod remote;
pub mod render;
pub mod say;
pub mod server;
pub mod suggest;
pub mod sys;
pub mod term;
pub mod update;
pub mod worktree;
