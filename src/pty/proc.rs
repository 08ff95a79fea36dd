//! What runs in a terminal, read from /proc without touching the PTY: the foreground
//! process group (the `tpgid` field of the session leader's stat), its command line and
//! working directory. Where /proc is missing these are simply unknown.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreground {
    pub pid: i32,
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
}

/// The foreground process of the terminal whose session leader is `leader`.
pub fn foreground(leader: u32) -> Option<Foreground> {
    let stat = std::fs::read_to_string(format!("/proc/{leader}/stat")).ok()?;
    // Fields after the command name (which may contain spaces and parentheses).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // state ppid pgrp session tty_nr tpgid …  → tpgid is index 5 here.
    let tpgid: i32 = fields.get(5)?.parse().ok()?;
    let pid = if tpgid > 0 { tpgid } else { leader as i32 };
    Some(Foreground {
        pid,
        argv: cmdline(pid).unwrap_or_default(),
        cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
    })
}

pub fn cmdline(pid: i32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn our_own_process_is_readable() {
        let me = std::process::id();
        let argv = super::cmdline(me as i32).unwrap();
        assert!(!argv.is_empty());
        // A test runner has no controlling terminal or is in the foreground: either way a
        // pid comes back and the cwd is ours.
        let fg = super::foreground(me).unwrap();
        assert!(fg.pid > 0);
    }
}
