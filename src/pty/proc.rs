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
/// into room for all of it at once (growing reads would generate it again and again), and
/// with plain reads: `read_to_end` would first ask the file's size and position, two
/// calls that tell nothing for a /proc file (`pane list` reads one per pane). A read that
/// does not fill the room has it all (procfs hands a file's content out as far as asked),
/// so one read usually does, without a second one to see the end.
fn read_proc(path: &str, room: usize) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    read_whole(&file, room)
}

/// [`read_proc`] of a file already open, from its start (so an open file can be read
/// again and again).
fn read_whole(file: &std::fs::File, room: usize) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    thread_local! {
        /// The room read into, kept (a listing of every pane reads thousands of files;
        /// zeroing fresh room for each cost more than the reads).
        static ROOM: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    ROOM.with_borrow_mut(|buf| {
        if buf.len() < room {
            buf.resize(room, 0);
        }
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize(2 * len, 0);
            }
            match file.read_at(&mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) if len + n < buf.len() => {
                    len += n;
                    break;
                }
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        let out = buf[..len].to_vec();
        // A file that needed much more room (a huge command line) does not keep it.
        if buf.len() > 4 * room.max(4096) {
            *buf = Vec::new();
        }
        Some(out)
    })
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

/// A process's command line and working directory (each empty when unreadable). Both
/// are read each time: a cache keyed by the process and its program would miss a script
/// whose interpreter is the shell that forked it (the same process and program before
/// and after its `exec`, another command line).
pub fn describe(pid: i32) -> Foreground {
    Foreground {
        pid,
        argv: cmdline(pid).unwrap_or_default(),
        cwd: cwd(pid),
    }
}

/// A process's working directory.
fn cwd(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// What a listing keeps of a pane's foreground process, to describe it again cheaply:
///
/// - its command-line file, held open: a read through it skips the lookup of the
///   process and of its file in /proc (half a listing's time at 1,000 panes). The open
///   file belongs to the process, not to its number: it gives what the process runs now
///   (an `exec` shows at once), and nothing once the process is gone, never the line of
///   another that got the number;
/// - its CPU clock, and what was found with the CPU time the process had used then. A
///   process that has not run since cannot have changed its command line or its working
///   directory (only its own `exec`, `chdir` and writes to its memory do, and a debugger
///   writing into it), so while its CPU time stands still, what was found stands: a shell
///   waiting at its prompt costs a listing one read of a clock. The time is read before
///   the files, so whatever the process does after it is seen the next time.
pub struct Kept {
    pid: i32,
    file: std::fs::File,
    clock: Option<nix::time::ClockId>,
    /// The CPU time read before the last description, and that description.
    seen: Option<(nix::sys::time::TimeSpec, Foreground)>,
}

impl Kept {
    fn open(pid: i32) -> Option<Kept> {
        let file = std::fs::File::open(format!("/proc/{pid}/cmdline")).ok()?;
        let clock = nix::time::ClockId::pid_cpu_clock_id(nix::unistd::Pid::from_raw(pid)).ok();
        Some(Kept {
            pid,
            file,
            clock,
            seen: None,
        })
    }

    /// The command line; `None` when nothing could be read (the process is gone, or a
    /// zombie, or cleared its line).
    fn read(&self) -> Option<Vec<String>> {
        read_whole(&self.file, 4096)
            .filter(|raw| !raw.is_empty())
            .map(|raw| split_cmdline(&raw))
    }

    /// The CPU time the process has used, all its threads (`None`: it is gone).
    fn cpu_time(&self) -> Option<nix::sys::time::TimeSpec> {
        nix::time::clock_gettime(self.clock?).ok()
    }

    /// [`describe`] through this: what was found the last time while the process has
    /// not run since, else read again (the time first). `None` when its command line
    /// reads nothing (the process is gone, a zombie, or cleared its line).
    fn describe(&mut self) -> Option<Foreground> {
        let ran = self.cpu_time();
        if let (Some((then, found)), Some(now)) = (&self.seen, ran) {
            if *then == now {
                return Some(found.clone());
            }
        }
        let found = Foreground {
            pid: self.pid,
            argv: self.read()?,
            cwd: cwd(self.pid),
        };
        self.seen = ran.map(|t| (t, found.clone()));
        Some(found)
    }
}

/// One process for [`describe_all`]: its number, what was kept of it from the last time
/// it was described (if anything), and whether to keep it for the next time.
pub struct Probe {
    pub pid: i32,
    pub kept: Option<Kept>,
    pub keep: bool,
    /// What was found (filled in by [`describe_all`]).
    pub found: Option<Foreground>,
}

impl Probe {
    pub fn new(pid: i32, kept: Option<Kept>, keep: bool) -> Probe {
        Probe {
            pid,
            kept,
            keep,
            found: None,
        }
    }

    /// [`describe`], through what was kept when it is this process's (see [`Kept`]);
    /// `kept` is left with what to keep (nothing unless `keep`).
    fn describe(&mut self) {
        let pid = self.pid;
        let mut kept = self.kept.take().filter(|k| k.pid == pid);
        let mut found = kept.as_mut().and_then(Kept::describe);
        if found.is_none() && self.keep {
            // Not kept yet, gone, or another process with the number now: opened afresh.
            kept = Kept::open(pid);
            found = kept.as_mut().and_then(Kept::describe);
        }
        self.kept = kept.filter(|_| self.keep && found.is_some());
        self.found = Some(found.unwrap_or_else(|| describe(pid)));
    }
}

/// [`Probe::describe`] for many processes, on up to 4 threads when there are hundreds:
/// a process read afresh costs system calls into /proc (its lookups and the other
/// process's memory for the command line), 4-8 µs, so a listing of 1,000 panes that all
/// ran would hold the server for several milliseconds on one thread.
pub fn describe_all(probes: &mut [Probe]) {
    const PER_THREAD: usize = 128;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
        .min(probes.len().div_ceil(PER_THREAD))
        .max(1);
    if threads == 1 {
        probes.iter_mut().for_each(Probe::describe);
        return;
    }
    let chunk = probes.len().div_ceil(threads);
    // The parts whose thread could not be started, read here afterwards.
    let mut left = Vec::new();
    std::thread::scope(|scope| {
        let mut parts = probes.chunks_mut(chunk).enumerate();
        let own = parts.next().map(|(_, p)| p).unwrap_or_default();
        for (k, part) in parts {
            let spawned = std::thread::Builder::new()
                .name("herdr-proc".into())
                .stack_size(64 << 10)
                .spawn_scoped(scope, move || part.iter_mut().for_each(Probe::describe));
            if let Err(e) = spawned {
                crate::log::warn!("proc", "cannot start a thread to read /proc: {e}");
                left.push(k);
            }
        }
        own.iter_mut().for_each(Probe::describe);
    });
    for k in left {
        probes
            .chunks_mut(chunk)
            .nth(k)
            .into_iter()
            .flatten()
            .for_each(Probe::describe);
    }
}

pub fn cmdline(pid: i32) -> Option<Vec<String>> {
    read_proc(&format!("/proc/{pid}/cmdline"), 4096).map(|raw| split_cmdline(&raw))
}

/// A command-line file's content: its arguments, each ended by a NUL.
fn split_cmdline(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// One process as its stat file shows it, for telling work from waiting
/// (`agent::activity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub session: i32,
    /// The state letter (`R`, `S`, `D`, …).
    pub state: u8,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
}

/// At most this many entries of /proc are looked at in one scan, and at most
/// `MAX_PER_SESSION` processes kept for each session: a scan's time and memory are bounded
/// whatever runs on the machine.
const MAX_SCAN: usize = 1 << 15;
pub const MAX_PER_SESSION: usize = 256;

/// Parses a stat line: its session, state and CPU ticks.
fn parse_stat(pid: i32, stat: &[u8]) -> Option<ProcStat> {
    let end = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[end + 1..]).ok()?;
    // After the name: 0 state, 3 session, 11 utime, 12 stime, 13 cutime, 14 cstime.
    let fields: Vec<&str> = rest.split_whitespace().take(15).collect();
    let number = |i: usize| fields.get(i)?.parse::<i64>().ok();
    let ticks = (11..15).map(number).sum::<Option<i64>>()?;
    Some(ProcStat {
        pid,
        session: i32::try_from(number(3)?).ok()?,
        state: *fields.first()?.as_bytes().first()?,
        ticks: u64::try_from(ticks).unwrap_or(0),
    })
}

/// The processes of the given sessions (by their leaders' pids), in one pass over /proc:
/// one stat read per process on the machine. Unreadable entries (a process that just
/// exited) are skipped.
pub fn sessions(leaders: &std::collections::BTreeSet<i32>) -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut per: std::collections::BTreeMap<i32, usize> = Default::default();
    for entry in dir.flatten().take(MAX_SCAN) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(stat) = read_proc(&format!("/proc/{pid}/stat"), 512) else {
            continue;
        };
        let Some(p) = parse_stat(pid, &stat).filter(|p| leaders.contains(&p.session)) else {
            continue;
        };
        let n = per.entry(p.session).or_default();
        if *n < MAX_PER_SESSION {
            *n += 1;
            found.push(p);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    /// A shell that waits for a line, then becomes `sleep 30` (the same process).
    fn shell_then_sleep() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "read line; exec sleep 30"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_command_line_is_read_again_once_the_process_runs_another_program() {
        use std::io::Write;
        let mut child = shell_then_sleep();
        let pid = child.id() as i32;
        // (Until the arguments are in place: the child may still be in its `exec`.)
        let read_until = |done: &dyn Fn(&[String]) -> bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let fg = super::describe(pid);
                if done(&fg.argv) || std::time::Instant::now() > deadline {
                    break fg.argv;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        };
        let before = read_until(&|argv| !argv.is_empty());
        assert_eq!(before, ["sh", "-c", "read line; exec sleep 30"]);
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let after = read_until(&|argv| !argv.is_empty() && argv != before);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(after, ["sleep", "30"]);
    }

    #[test]
    fn a_kept_command_line_file_follows_its_process_and_only_it() {
        use super::{describe_all, Probe};
        use std::io::Write;
        let mut child = shell_then_sleep();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let wait_for = |want: &[&str]| {
            while super::cmdline(pid).unwrap_or_default() != want
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        };
        wait_for(&["sh", "-c", "read line; exec sleep 30"]);
        // The first look opens the file and keeps it.
        let mut probes = vec![Probe::new(pid, None, true)];
        describe_all(&mut probes);
        let kept = probes[0].kept.take().expect("a file kept");
        assert_eq!(probes[0].found.as_ref().unwrap().argv[0], "sh");
        // The same process runs another program: the kept file shows it at once.
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        wait_for(&["sleep", "30"]);
        assert_eq!(kept.read().unwrap(), ["sleep", "30"]);
        // A file kept for another process is not read for this one: ours (the test's
        // own) is opened instead, and kept.
        let me = std::process::id() as i32;
        let mut probes = vec![Probe::new(me, Some(kept), true)];
        describe_all(&mut probes);
        let ours = probes[0].found.take().unwrap();
        assert_eq!(ours.argv, super::cmdline(me).unwrap());
        assert_eq!(ours.cwd, std::env::current_dir().ok());
        assert_eq!(probes[0].kept.as_ref().map(|k| k.pid), Some(me));
        // Once the process is gone its file reads nothing: never another's line.
        let mut probes = vec![Probe::new(pid, probes.pop().unwrap().kept, true)];
        describe_all(&mut probes);
        let kept = probes[0].kept.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(kept.read(), None);
        let mut probes = vec![Probe::new(pid, Some(kept), true)];
        describe_all(&mut probes);
        assert_eq!(probes[0].found.as_ref().unwrap().argv, Vec::<String>::new());
        assert!(probes[0].kept.is_none());
    }

    #[test]
    fn what_was_found_stands_while_the_process_has_not_run_and_not_once_it_ran() {
        use super::{describe_all, Probe};
        use std::io::Write;
        use std::time::{Duration, Instant};
        // A shell that runs only when it is given a line.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while read line; do :; done"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(10);
        let describe = |kept| {
            let mut probes = vec![Probe::new(pid, kept, true)];
            describe_all(&mut probes);
            let probe = probes.pop().unwrap();
            (probe.found.unwrap(), probe.kept.unwrap())
        };
        // (Once its arguments are in place: a process in its `exec` reads none.)
        let started = || super::cmdline(pid).unwrap_or_default().first() == Some(&"sh".into());
        while !started() {
            assert!(Instant::now() < deadline, "the shell never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Until it waits for its line: its CPU time standing still.
        let (_, kept) = describe(None);
        let mut last = kept.cpu_time();
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let now = kept.cpu_time();
            if now == last {
                break;
            }
            assert!(Instant::now() < deadline, "the shell never settled");
            last = now;
        }
        let (found, mut kept) = describe(Some(kept));
        assert_eq!(found.argv[0], "sh");
        // What was found is marked: a description that is the kept one shows the mark.
        kept.seen.as_mut().unwrap().1.argv = vec!["marked".into()];
        let (found, kept) = describe(Some(kept));
        assert_eq!(
            found.argv,
            ["marked"],
            "described again while it had not run"
        );
        // It runs: described afresh.
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        let before = kept.seen.as_ref().unwrap().0;
        while kept.cpu_time() == Some(before) {
            assert!(Instant::now() < deadline, "the shell never ran");
            std::thread::sleep(Duration::from_millis(10));
        }
        let (found, _) = describe(Some(kept));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found.argv[0], "sh", "described afresh once it ran");
    }

    #[test]
    fn many_processes_are_described_on_threads_each_into_its_own_probe() {
        // Hundreds (more than one thread's share), this test's process and its parent in
        // turn; files kept only where asked.
        let me = std::process::id() as i32;
        let parent = std::os::unix::process::parent_id() as i32;
        let pids: Vec<i32> = (0..700)
            .map(|i| if i % 3 == 0 { parent } else { me })
            .collect();
        let mut probes: Vec<_> = pids
            .iter()
            .enumerate()
            .map(|(i, &pid)| super::Probe::new(pid, None, i % 2 == 0))
            .collect();
        super::describe_all(&mut probes);
        let argv = |pid| super::cmdline(pid).unwrap();
        for (i, probe) in probes.iter().enumerate() {
            let found = probe.found.as_ref().expect("every probe described");
            assert_eq!(found.pid, pids[i]);
            assert_eq!(found.argv, argv(pids[i]), "probe {i}");
            assert_eq!(
                probe.kept.as_ref().map(|k| k.pid),
                (i % 2 == 0).then_some(pids[i])
            );
        }
    }

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

    #[test]
    fn a_scan_finds_the_processes_of_a_session_and_their_cpu() {
        // A child of this test burning CPU: in the test's session, running, its ticks
        // growing.
        let session = nix::unistd::getsid(None).unwrap().as_raw();
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let pid = busy.id() as i32;
        let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let seen = loop {
            let found = super::sessions(&[session].into());
            assert!(found.iter().all(|p| p.session == session));
            let child = found.iter().find(|p| p.pid == pid).copied();
            if child.is_some_and(|c| c.ticks > 0) || std::time::Instant::now() > end {
                break child;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        busy.kill().unwrap();
        busy.wait().unwrap();
        let child = seen.expect("the child in the session");
        assert!(child.ticks > 0, "{child:?}");
        assert!(super::sessions(&[].into()).is_empty());
        assert!(!super::sessions(&[session].into())
            .iter()
            .any(|p| p.pid == pid));
    }
}
