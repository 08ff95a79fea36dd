//! The open-file limit (RLIMIT_NOFILE). A server holds several descriptors per pane, far
//! more than the 1024 a login's soft limit usually allows, so it raises its soft limit to
//! the hard one at start; the programs it starts in panes get back the soft limit the user
//! had, since many programs (every `select()` user among them) misbehave with a huge one.
//!
//! Invariant: [`user_soft_limit`] is the soft limit of the user's login, also in a server
//! started by a live handoff: that one inherits the raised limit and is told the original
//! in [`ORIGINAL_ENV`].

use std::io;
use std::sync::OnceLock;

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Tells a server started by a live handoff the soft limit the user had. An environment
/// variable, not an argument, so that an older binary taking over simply ignores it.
pub const ORIGINAL_ENV: &str = "HERDR_NOFILE_SOFT";

static USER_SOFT: OnceLock<u64> = OnceLock::new();

/// What [`raise`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The soft limit the user had: what the programs in panes get.
    pub user_soft: u64,
    /// This process's soft limit now.
    pub soft: u64,
    pub hard: u64,
}

/// This process's (soft, hard) open-file limits.
pub fn current() -> io::Result<(u64, u64)> {
    getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| io::Error::from_raw_os_error(e as i32))
}

/// Remembers the user's soft limit (`told`, when a live handoff passed it on, else the
/// current one) and raises this process's soft limit to the hard one. The error says what
/// stayed as it was; the user's limit is remembered either way.
pub fn raise(told: Option<u64>) -> Result<Limits, (Limits, io::Error)> {
    let (soft, hard) = current().map_err(|e| {
        let unknown = Limits {
            user_soft: 0,
            soft: 0,
            hard: 0,
        };
        (unknown, e)
    })?;
    let user_soft = told.unwrap_or(soft).min(hard);
    let _ = USER_SOFT.set(user_soft);
    let mut limits = Limits {
        user_soft,
        soft,
        hard,
    };
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
            .map_err(|e| (limits, io::Error::from_raw_os_error(e as i32)))?;
        limits.soft = hard;
    }
    Ok(limits)
}

/// The soft limit to give the programs this process starts; `None` when it never raised
/// its own (they inherit it unchanged).
pub fn user_soft_limit() -> Option<u64> {
    USER_SOFT.get().copied()
}

/// Descriptors a server keeps free for what is not a pane: connections waiting for their
/// hello (one each, at most 64), API connections (three each) and clients (four with the
/// terminal they hand over), the files it saves and a live handoff. A new pane is refused before it would eat into them, so a
/// server full of panes still answers `herdr` commands.
pub const RESERVED: u64 = 128;

/// At most this many descriptors are open at once while a pane starts (the pair, and the
/// duplicates its terminal's actor makes of the master), with room to spare.
pub const PANE_START: u64 = 8;

/// Descriptors this process has open.
fn open_count() -> io::Result<u64> {
    let mut n = 0u64;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        entry?;
        n += 1;
    }
    // The listing's own descriptor is counted too, and is closed now.
    Ok(n.saturating_sub(1))
}

/// The size of this process's descriptor table: more than its highest open descriptor,
/// so at least how many are open. Cheap, unlike [`open_count`].
fn table_size() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("FDSize:"))?;
    line.trim().parse().ok()
}

/// Whether `needed` more descriptors can be opened with [`RESERVED`] still free after
/// them; if not, an EMFILE error, which [`is_exhausted`] recognises. Counts the open ones
/// only when the table is near the limit (the count takes a while with thousands open).
pub fn ensure_room(needed: u64) -> io::Result<()> {
    let (soft, _) = current()?;
    let fits = |open: u64| fits(soft, open, needed);
    if table_size().is_some_and(fits) {
        return Ok(());
    }
    // Without /proc nothing can be told: the pane is tried (and refused by the kernel).
    let open = match open_count() {
        Ok(n) => n,
        Err(e) if is_exhausted(&e) => return Err(e),
        Err(_) => return Ok(()),
    };
    match fits(open) {
        true => Ok(()),
        false => Err(io::Error::from_raw_os_error(libc::EMFILE)),
    }
}

/// Whether `needed` more descriptors surely fit, [`RESERVED`] still free after them: the
/// quick look of [`ensure_room`] (the table's size, no count), for what only a cache
/// would use.
pub fn has_room(needed: u64) -> bool {
    current().is_ok_and(|(soft, _)| table_size().is_some_and(|t| fits(soft, t, needed)))
}

/// Whether `needed` more descriptors fit under the soft limit `soft` with `open` open and
/// [`RESERVED`] still free after them.
fn fits(soft: u64, open: u64, needed: u64) -> bool {
    open + needed + RESERVED <= soft
}

/// What to tell someone whose new pane found no descriptor left.
pub fn exhausted_message() -> String {
    let (soft, hard) = current().unwrap_or((0, 0));
    format!(
        "this server has used up its open files (RLIMIT_NOFILE: soft limit {soft}, hard \
         limit {hard}; each pane takes about 4, and {RESERVED} are kept for connections); \
         close some panes, or raise the hard limit \
         (LimitNOFILE= in a systemd unit, nofile in /etc/security/limits.conf, or \
         `ulimit -Hn` as root) and restart the server"
    )
}

/// Whether an error is "no descriptor left" (this process's or the system's).
pub fn is_exhausted(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_counted_against_the_soft_limit_with_the_reserve_kept() {
        let (soft, _) = current().unwrap();
        let open = open_count().unwrap();
        assert!(open >= 3, "stdin, stdout and stderr at least: {open}");
        assert!(table_size().unwrap() >= open);
        // (Other tests open and close descriptors meanwhile: far from the limit only.)
        let e = ensure_room(soft).expect_err("never room for the whole limit");
        assert!(is_exhausted(&e), "{e}");
        if soft > open + RESERVED + 4096 {
            ensure_room(1).expect("room far below the limit");
        }
        assert!(fits(1000, 1000 - RESERVED - 8, 8));
        assert!(!fits(1000, 1000 - RESERVED - 8, 9));
    }
}
