//! Exit codes of `herdr` commands, kept here because processes read each other's: the
//! client waits on a server it started, `--remote` reads the remote CLI's, an update reads
//! a handoff's. Documented for scripts in docs/cli.md; never renumber one.

/// No server runs for the session (the command needs one).
pub const NO_SERVER: i32 = 3;
/// `pane wait` reached its timeout.
pub const TIMEOUT: i32 = 4;
/// `herdr update` installed the new binary, and a running server still needs a decision
/// (it was left on the old one).
pub const SERVERS_LEFT: i32 = 5;
/// `herdr server run` found another server holding the session (EX_TEMPFAIL): whoever
/// started it waits for that one.
pub const SESSION_BUSY: i32 = 75;
