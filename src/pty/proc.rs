//! What runs in a terminal, read from /proc: a process's command line and working
//! directory, its parent, and the foreground process group as its session leader's stat
//! gives it (`tpgid`; the terminal itself is asked first, see
//! `TerminalRuntime::foreground_pid`). Where /proc is missing these are simply unknown.

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

/// Field `index` of a stat file (a process's or a thread's), counted after the command
/// name, which may contain spaces and parentheses: 0 state, 1 ppid, 2 pgrp, 3 session,
/// 4 tty_nr, 5 tpgid, …
fn stat_field(path: &str, index: usize) -> Option<String> {
    let stat = read_proc(path, 1024)?;
    let end = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[end + 1..]).ok()?;
    rest.split_whitespace().nth(index).map(str::to_string)
}

/// A numeric field of `/proc/PID/stat` (numbered as in [`stat_field`]).
fn stat_number(pid: i32, index: usize) -> Option<i32> {
    stat_field(&format!("/proc/{pid}/stat"), index)?
        .parse()
        .ok()
}

/// The parent of `pid`.
pub fn parent(pid: i32) -> Option<i32> {
    stat_number(pid, 1)
}

/// The foreground process of the terminal whose session leader is `leader`: its process
/// group (the leader's `tpgid`), or the leader itself when none is set.
pub fn foreground_pid(leader: u32) -> Option<i32> {
    let tpgid = stat_number(leader as i32, 5)?;
    Some(if tpgid > 0 { tpgid } else { leader as i32 })
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
        let fg = super::describe(super::foreground_pid(me).unwrap());
        assert!(fg.pid > 0);
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
                let path = format!("/proc/{me}/task/{tid}/stat");
                [0, 1].map(|i| super::stat_field(&path, i).unwrap())
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
