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

/// Reads a small /proc file whole. Its content is generated on every read, so it is read
/// into room for all of it at once (growing reads would generate it again and again).
fn read_proc(path: &str, room: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(room);
    std::fs::File::open(path).ok()?.read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The fields of `/proc/PID/stat` after the command name (which may contain spaces and
/// parentheses): state, ppid, pgrp, session, tty_nr, tpgid, …
fn stat_fields(pid: i32, each: impl FnMut(usize, &str) -> bool) {
    stat_fields_of(&format!("/proc/{pid}/stat"), each)
}

/// [`stat_fields`] of a stat file named by its path (a process's or a thread's); `each`
/// gets the field's number and text, and returns whether to go on.
fn stat_fields_of(path: &str, mut each: impl FnMut(usize, &str) -> bool) {
    let Some(stat) = read_proc(path, 1024) else {
        return;
    };
    let Some(end) = stat.iter().rposition(|b| *b == b')') else {
        return;
    };
    let rest = String::from_utf8_lossy(&stat[end + 1..]);
    for (i, field) in rest.split_whitespace().enumerate() {
        if !each(i, field) {
            return;
        }
    }
}

/// One numeric field of `/proc/PID/stat` (numbered as in [`stat_fields`]).
fn stat_field(pid: i32, index: usize) -> Option<i32> {
    let mut value = None;
    stat_fields(pid, |i, field| {
        if i == index {
            value = field.parse().ok();
        }
        i < index
    });
    value
}

/// The parent of `pid`.
pub fn parent(pid: i32) -> Option<i32> {
    stat_field(pid, 1)
}

/// The foreground process of the terminal whose session leader is `leader`: its process
/// group (the leader's `tpgid`), or the leader itself when none is set.
pub fn foreground_pid(leader: u32) -> Option<i32> {
    let tpgid = stat_field(leader as i32, 5)?;
    Some(if tpgid > 0 { tpgid } else { leader as i32 })
}

/// The foreground process of the terminal whose session leader is `leader`, with its
/// command line and working directory.
pub fn foreground(leader: u32) -> Option<Foreground> {
    foreground_pid(leader).map(describe)
}

/// A process's command line and working directory (each empty when unreadable).
pub fn describe(pid: i32) -> Foreground {
    Foreground {
        pid,
        argv: cmdline(pid).unwrap_or_default(),
        cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
    }
}

pub fn cmdline(pid: i32) -> Option<Vec<String>> {
    let raw = read_proc(&format!("/proc/{pid}/cmdline"), 4096)?;
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
        assert_eq!(super::foreground_pid(me), Some(fg.pid));
        assert_eq!(
            super::parent(me as i32),
            Some(std::os::unix::process::parent_id() as i32)
        );
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        // A thread of ours named like that: its stat line still parses.
        let me = std::process::id() as i32;
        let handle = std::thread::Builder::new()
            .name("a) b (c".into())
            .spawn(move || {
                let tid = nix::unistd::gettid().as_raw();
                let stat = std::fs::read_to_string(format!("/proc/{me}/task/{tid}/stat")).unwrap();
                assert!(stat.contains("(a) b (c)"), "{stat}");
                // Fields through the task's own stat file, which names the thread.
                let mut fields = Vec::new();
                super::stat_fields_of(&format!("/proc/{me}/task/{tid}/stat"), |_, f| {
                    fields.push(f.to_string());
                    true
                });
                fields
            })
            .unwrap();
        let fields = handle.join().unwrap();
        assert_eq!(fields[0].len(), 1, "the state letter first: {fields:?}");
        assert_eq!(
            fields[1].parse::<u32>().unwrap(),
            std::os::unix::process::parent_id()
        );
    }
}
