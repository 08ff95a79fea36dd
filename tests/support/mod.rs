//! Shared fixtures for end-to-end tests: an isolated environment (its own HOME, XDG dirs,
//! runtime folder and session name), the real `herdr` binary driven in a PTY whose output
//! is parsed by a terminal emulator, and condition waits with generous deadlines.
//!
//! Tests clean up only what they started: the client they spawned and the server of their
//! own session (stopped through the CLI, then killed by pid if it lingers).
#![allow(dead_code)]

pub mod api;
pub mod corpus;
pub mod http;
pub mod machines;
pub mod mock_api;
pub mod netns;
pub mod real_agents;
pub mod relay;
pub mod release;
pub mod resume;
pub mod sshd;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};

/// The `herdr` binary cargo built for the tests; for a program built beside them (the
/// corpus recorder, an example), the one of the same build (build.rs says where).
pub const BIN: &str = match option_env!("CARGO_BIN_EXE_herdr") {
    Some(bin) => bin,
    None => env!("HERDR_BUILT_BIN"),
};
/// Deadline for any condition in a test (the CI machine is shared and noisy).
pub const WAIT: Duration = Duration::from_secs(20);
/// What the test shells print as their prompt (PS1 is this plus a space; screen text is
/// compared with trailing spaces trimmed).
pub const PROMPT: &str = "PROMPT>";

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// An isolated world for one test.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub session: String,
    /// More environment for every herdr this test starts (and so for its server).
    pub extra_vars: Vec<(String, String)>,
}

impl Env {
    pub fn new(name: &str) -> Env {
        let dir = tempfile::Builder::new()
            .prefix("herdr-test-")
            .tempdir()
            .expect("tempdir");
        for sub in ["home", "config/herdr", "state", "run"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.path().join("run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        let rc = format!("PS1='{PROMPT} '\nHISTFILE=/dev/null\nunset PROMPT_COMMAND\n");
        std::fs::write(dir.path().join("home/.bashrc"), &rc).expect("bashrc");
        std::fs::write(dir.path().join("home/.bash_profile"), &rc).expect("bash_profile");
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        Env {
            session: format!("{name}-{}-{n}", std::process::id()),
            dir,
            extra_vars: Vec::new(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The folder of this test's session's state (its log, its saved files).
    pub fn state_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("state/herdr/sessions")
            .join(&self.session)
    }

    /// The server log of this test's session.
    pub fn server_log(&self) -> PathBuf {
        self.state_dir().join("server.log")
    }

    /// The saved structure of this test's session.
    pub fn session_file(&self) -> PathBuf {
        self.state_dir().join("session.json")
    }

    pub fn config_file(&self) -> PathBuf {
        self.dir.path().join("config/herdr/config.toml")
    }

    pub fn vars(&self) -> Vec<(String, String)> {
        let p = self.dir.path();
        vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), self.home().display().to_string()),
            (
                "XDG_CONFIG_HOME".into(),
                p.join("config").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".into(),
                p.join("state").display().to_string(),
            ),
            (
                "XDG_RUNTIME_DIR".into(),
                p.join("run").display().to_string(),
            ),
            ("SHELL".into(), "/bin/bash".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ]
        .into_iter()
        .chain(self.extra_vars.iter().cloned())
        .collect()
    }

    /// Runs a CLI command of this session to completion.
    pub fn herdr(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(BIN, &["--session", &self.session]);
        cmd.args(args);
        cmd.output().expect("run herdr")
    }

    /// A program in this test's environment (its variables only, started at home).
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear().envs(self.vars()).args(args);
        cmd.current_dir(self.home());
        cmd
    }

    /// Starts an interactive client in a PTY of the given size.
    pub fn client(&self, cols: u16, rows: u16) -> Term {
        self.client_with_args(cols, rows, &[])
    }

    pub fn client_with_args(&self, cols: u16, rows: u16, extra: &[&str]) -> Term {
        self.client_in(Outer::legacy(), cols, rows, extra)
    }

    /// A client in a terminal that answers its queries the way `outer` does.
    pub fn client_in(&self, outer: Outer, cols: u16, rows: u16, extra: &[&str]) -> Term {
        self.client_from(&self.home(), outer, cols, rows, extra)
    }

    /// A client run in the folder `cwd`.
    pub fn client_from(
        &self,
        cwd: &std::path::Path,
        outer: Outer,
        cols: u16,
        rows: u16,
        extra: &[&str],
    ) -> Term {
        let mut cmd = CommandBuilder::new(BIN);
        cmd.env_clear();
        for (k, v) in self.vars() {
            cmd.env(k, v);
        }
        cmd.arg("--session");
        cmd.arg(&self.session);
        for a in extra {
            cmd.arg(a);
        }
        cmd.cwd(cwd);
        Term::spawn_in(outer, cmd, cols, rows)
    }

    pub fn server_pid(&self) -> Option<i32> {
        let out = self.herdr(&["server", "status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v.get("pid").and_then(|p| p.as_i64()).map(|p| p as i32)
    }

    pub fn socket(&self) -> PathBuf {
        self.dir
            .path()
            .join("run/herdr")
            .join(format!("{}.sock", self.session))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if !self.socket().exists() {
            return;
        }
        let pid = self.server_pid();
        let stopped = self.herdr(&["server", "stop"]).status.success();
        // Only a server that would not stop is killed, and only after checking the pid is
        // still that server: pids are reused quickly, and another test's server may have
        // the number by now.
        if let Some(pid) = pid.filter(|_| !stopped) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let ours = String::from_utf8_lossy(&cmdline)
                .split('\0')
                .any(|a| a == self.session);
            if ours {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// The user's terminal as the harness plays it: the queries it answers (a query's bytes
/// in the output, the answer typed back), in the order they come.
#[derive(Clone, Debug)]
pub struct Outer {
    pub answers: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Outer {
    /// A terminal that knows no extended keys: it answers DA1 only.
    pub fn legacy() -> Outer {
        Outer {
            answers: vec![(b"\x1b[c".to_vec(), b"\x1b[?62;22c".to_vec())],
        }
    }

    /// A terminal that speaks the kitty keyboard protocol (its flags are 0 until pushed).
    pub fn kitty() -> Outer {
        Outer::legacy().answer(b"\x1b[?u", b"\x1b[?0u")
    }

    /// xterm: modifyOtherKeys, told by XTQMODKEYS.
    pub fn xterm() -> Outer {
        Outer::legacy().answer(b"\x1b[?4m", b"\x1b[>4;0m")
    }

    /// Also answers `query` with `reply`.
    pub fn answer(mut self, query: &[u8], reply: &[u8]) -> Outer {
        self.answers.push((query.to_vec(), reply.to_vec()));
        self
    }

    /// Also reports these colours (OSC 10 and 11 queries).
    pub fn colors(self, fg: &str, bg: &str) -> Outer {
        self.answer(b"\x1b]10;?\x1b\\", format!("\x1b]10;{fg}\x1b\\").as_bytes())
            .answer(b"\x1b]11;?\x1b\\", format!("\x1b]11;{bg}\x07").as_bytes())
    }

    /// The answers owed for `out` (what the program wrote), in order; `carry` keeps the
    /// end of the last output, where a query may have been cut.
    fn replies(&self, carry: &mut Vec<u8>, out: &[u8]) -> Vec<u8> {
        let longest = self.answers.iter().map(|(q, _)| q.len()).max().unwrap_or(1);
        let mut hay = std::mem::take(carry);
        let old = hay.len();
        hay.extend_from_slice(out);
        let mut found: Vec<(usize, &[u8])> = Vec::new();
        for (q, a) in &self.answers {
            let mut from = 0;
            while let Some(i) = find(&hay[from..], q) {
                let at = from + i;
                // Only queries that end in the new output (the rest were answered).
                if at + q.len() > old {
                    found.push((at, a));
                }
                from = at + 1;
            }
        }
        found.sort_by_key(|(at, _)| *at);
        let keep = hay.len().saturating_sub(longest - 1);
        *carry = hay[keep..].to_vec();
        found.into_iter().flat_map(|(_, a)| a.to_vec()).collect()
    }
}

/// Where `needle` first is in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The highest number that follows `prefix` in `text` (a counter's lines), 0 if none.
pub fn highest_after(text: &str, prefix: &str) -> u64 {
    text.split(prefix)
        .skip(1)
        .filter_map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

/// A program (usually a herdr client) running in a PTY we own, its output parsed live.
pub struct Term {
    master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    eof: Arc<Mutex<bool>>,
    /// While true, nothing is read from the program (a terminal that stopped reading: a
    /// frozen window, scroll lock).
    paused: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Term {
    pub fn spawn(cmd: CommandBuilder, cols: u16, rows: u16) -> Term {
        Term::spawn_in(Outer::legacy(), cmd, cols, rows)
    }

    /// [`Term::spawn`] in a terminal that answers as `outer` does.
    pub fn spawn_in(outer: Outer, cmd: CommandBuilder, cols: u16, rows: u16) -> Term {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let child = pair.slave.spawn_command(cmd).expect("spawn client");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().expect("writer")));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(nz(rows), nz(cols), 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let eof = Arc::new(Mutex::new(false));
        let paused = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        {
            let (parser, raw, eof) = (parser.clone(), raw.clone(), eof.clone());
            let answer = writer.clone();
            let paused = paused.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let mut carry = Vec::new();
                loop {
                    {
                        let (lock, cond) = &*paused;
                        let mut p = lock.lock().unwrap();
                        while *p {
                            p = cond.wait(p).unwrap();
                        }
                    }
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            parser.lock().unwrap().process(&buf[..n]);
                            raw.lock().unwrap().extend_from_slice(&buf[..n]);
                            let replies = outer.replies(&mut carry, &buf[..n]);
                            if !replies.is_empty() {
                                let mut w = answer.lock().unwrap();
                                let _ = w.write_all(&replies).and_then(|_| w.flush());
                            }
                        }
                    }
                }
                *eof.lock().unwrap() = true;
            });
        }
        Term {
            master: pair.master,
            writer,
            child,
            parser,
            raw,
            eof,
            paused,
        }
    }

    /// Stops reading what the program writes (`true`) or reads again (`false`).
    pub fn pause_reading(&self, paused: bool) {
        let (lock, cond) = &*self.paused;
        *lock.lock().unwrap() = paused;
        cond.notify_all();
    }

    /// The program's process id.
    pub fn pid(&self) -> i32 {
        self.child.process_id().expect("a pid") as i32
    }

    pub fn send(&mut self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).expect("write to client");
        w.flush().expect("flush");
    }

    /// Types text followed by Enter.
    pub fn line(&mut self, text: &str) {
        self.send(text.as_bytes());
        self.send(b"\r");
    }

    /// Sends the prefix (C-b) and then a key.
    pub fn prefix(&mut self, key: &[u8]) {
        self.send(b"\x02");
        self.send(key);
    }

    pub fn contents(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn row(&self, row: u16) -> String {
        let p = self.parser.lock().unwrap();
        let (_, cols) = p.screen().size();
        p.screen().contents_between(row, 0, row, cols.get())
    }

    pub fn rows(&self) -> Vec<String> {
        let p = self.parser.lock().unwrap();
        let (_, cols) = p.screen().size();
        p.screen().rows(0, cols.get()).collect()
    }

    /// Each row's text right of the sidebar (after its first `│`), trailing spaces
    /// trimmed: what the panes show.
    pub fn pane_lines(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .map(|r| match r.find('│') {
                Some(i) => r[i + '│'.len_utf8()..].trim_end().to_string(),
                None => r.trim_end().to_string(),
            })
            .collect()
    }

    /// Whether some pane row reads exactly `text`.
    pub fn has_line(&self, text: &str) -> bool {
        self.pane_lines().iter().any(|l| l == text)
    }

    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> T {
        f(self.parser.lock().unwrap().screen())
    }

    /// Whether the terminal is in cooked mode (it echoes what is typed), as a program
    /// leaves it when it is done with raw mode.
    pub fn echoes(&self) -> bool {
        use nix::sys::termios::{tcgetattr, LocalFlags};
        let Some(fd) = self.master.as_raw_fd() else {
            return false;
        };
        // The master's descriptor, borrowed while `self` holds it open.
        #[allow(unsafe_code)]
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        tcgetattr(fd).is_ok_and(|t| t.local_flags.contains(LocalFlags::ECHO))
    }

    pub fn raw_output(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Waits until `cond` holds for the screen, or panics with the screen after `WAIT`.
    pub fn wait(&self, what: &str, cond: impl Fn(&Term) -> bool) {
        self.wait_or_tell(what, cond, String::new);
    }

    /// [`Term::wait`], panicking with what `tell` says as well (logs, say).
    pub fn wait_or_tell(
        &self,
        what: &str,
        cond: impl Fn(&Term) -> bool,
        tell: impl Fn() -> String,
    ) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if cond(self) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "timed out waiting for {what}; screen:\n{}{}",
            self.contents(),
            tell()
        );
    }

    pub fn wait_text(&self, text: &str) {
        self.wait(&format!("{text:?} on screen"), |t| {
            t.contents().contains(text)
        });
    }

    pub fn count(&self, text: &str) -> usize {
        self.contents().matches(text).count()
    }

    /// (row, column in cells) of the first occurrence of `text` on screen.
    pub fn find(&self, text: &str) -> Option<(u16, u16)> {
        self.rows().iter().enumerate().find_map(|(r, line)| {
            line.find(text)
                .map(|i| (r as u16, line[..i].chars().count() as u16))
        })
    }

    /// Column of the vertical divider between panes on `row` (not the sidebar's), if any.
    pub fn divider_col(&self, row: u16) -> Option<u16> {
        self.with_screen(|s| {
            let (_, cols) = s.size();
            (30..cols.get()).find(|&c| s.cell(row, c).is_some_and(|cell| cell.contents() == "│"))
        })
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.lock().unwrap().set_size(nz(rows), nz(cols));
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize");
    }

    /// Waits for the client process to exit; returns its exit code. What it printed last
    /// is read by then too (up to end-of-file, which follows the exit closely).
    pub fn wait_exit(&mut self) -> u32 {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let drained = Instant::now() + Duration::from_secs(5);
                while Instant::now() < drained && !*self.eof.lock().unwrap() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return status.exit_code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("client did not exit; screen:\n{}", self.contents());
    }

    /// Everything the client printed after leaving its alternate screen (e.g. why it ended).
    pub fn wait_eof(&self) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline && !*self.eof.lock().unwrap() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stdout of a command that must have succeeded (else a failure showing everything).
/// Copies an executable with `cp` rather than from this process. A file this process
/// holds open for writing is inherited by any child another test thread forks meanwhile,
/// and until that child execs, running the copy fails with "text file busy".
pub fn copy_executable(from: impl AsRef<Path>, to: impl AsRef<Path>) {
    let (from, to) = (from.as_ref(), to.as_ref());
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .unwrap_or_else(|e| panic!("cp {}: {e}", from.display()));
    assert!(
        status.success(),
        "cp {} {}: {status}",
        from.display(),
        to.display()
    );
}

pub fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A new isolated environment whose server runs.
pub fn started(name: &str) -> Env {
    let env = Env::new(name);
    ok(env.herdr(&["server", "start"]));
    env
}

/// `server status --json`.
pub fn server_status(env: &Env) -> serde_json::Value {
    serde_json::from_slice(&env.herdr(&["server", "status", "--json"]).stdout)
        .expect("server status JSON")
}

/// The JSON a command that must have succeeded printed.
pub fn json(out: std::process::Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).expect("JSON output")
}

/// `pane list --json`: one object per pane.
pub fn pane_list(env: &Env) -> Vec<serde_json::Value> {
    json(env.herdr(&["pane", "list", "--json"]))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Has the pane's shell write its pid to a file and returns it.
pub fn shell_pid(env: &Env, t: &mut Term) -> i32 {
    t.line("echo $$ > shell.pid");
    let pidfile = env.home().join("shell.pid");
    let read = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    wait_until("the shell wrote its pid", || read().is_some());
    read().unwrap_or(0)
}

/// Waits until a pane (read through the CLI) shows the shell prompt.
pub fn prompt(env: &Env, pane: &str) {
    wait_until("the prompt", || {
        String::from_utf8_lossy(&env.herdr(&["pane", "read", "--pane", pane]).stdout)
            .contains(PROMPT)
    });
}

/// Types a line into a pane through the CLI (text, then Enter).
pub fn submit(env: &Env, pane: &str, text: &str) {
    ok(env.herdr(&["pane", "submit", "--pane", pane, text]));
}

/// Waits (through the CLI) until a pane's output matches `regex`; the matching line.
pub fn wait_output(env: &Env, pane: &str, regex: &str) -> String {
    ok(env.herdr(&[
        "pane",
        "wait",
        "--pane",
        pane,
        "--output",
        regex,
        "--timeout",
        "20",
    ]))
}

/// Waits until the program in front in a pane is `program` (its command line starts so).
pub fn wait_foreground(env: &Env, pane: &str, program: &str) {
    wait_until(&format!("{program} in front"), || {
        json(env.herdr(&["pane", "get", "--pane", pane, "--json"]))["command"]
            .as_str()
            .is_some_and(|c| c.starts_with(program))
    });
}

/// Polls a condition with the standard deadline (for things that have no screen).
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

/// A number from `/proc/<pid>/status` (`Threads`; `VmRSS`, `VmHWM` in KiB); 0 when the
/// process or the field is gone.
pub fn proc_status(pid: i32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

pub fn pid_alive(pid: i32) -> bool {
    // A zombie still answers kill(0); look at its state too.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

fn nz(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v.max(1)).unwrap()
}
