//! End-to-end: the session's files, names and output streams. A session's name never
//! clashes with another's private files, state files are private, the runtime folder is
//! tightened rather than refused, and output into a closed pipe ends quietly.

mod support;

use support::{ok, Env, BIN};

/// Another session in the same environment, stopped when the test ends (also on failure).
struct OtherSession<'a> {
    env: &'a Env,
    name: String,
    /// Its server, once started: killed if it cannot be stopped (its socket gone).
    pid: Option<i32>,
}

impl OtherSession<'_> {
    fn herdr(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["--session", self.name.as_str()];
        all.extend_from_slice(args);
        self.env.command(BIN, &all).output().expect("run herdr")
    }

    fn start(&mut self) {
        ok(self.herdr(&["server", "start"]));
        let status = support::json(self.herdr(&["server", "status", "--json"]));
        self.pid = status["pid"].as_i64().map(|p| p as i32);
    }
}

impl Drop for OtherSession<'_> {
    fn drop(&mut self) {
        let stopped = self.herdr(&["server", "stop"]).status.success();
        if let Some(pid) = self.pid.filter(|_| !stopped) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[test]
fn a_session_named_like_a_handoff_socket_survives_that_handoff() {
    let env = Env::new("named");
    ok(env.herdr(&["server", "start"]));
    let pid = env.server_pid().expect("server pid");
    // The name the server's private socket for a live handoff once had.
    let mut other = OtherSession {
        env: &env,
        name: format!("{}.handoff-{pid}", env.session),
        pid: None,
    };
    other.start();
    ok(env.herdr(&["server", "handoff"]));
    let status = other.herdr(&["server", "status"]);
    assert!(
        status.status.success(),
        "the other session lost its socket: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn server_start_tightens_a_runtime_folder_of_ours_that_others_can_enter() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new("rundir");
    let dir = env.socket().parent().expect("runtime folder").to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    ok(env.herdr(&["server", "start"]));
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "mode {:o}", mode & 0o777);
    ok(env.herdr(&["server", "status"]));
}

#[test]
fn the_server_log_is_private_like_the_other_state_files() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new("logmode");
    let log = env.server_log();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    ok(env.herdr(&["server", "start"]));
    assert_eq!(mode(&log), 0o600, "a new log");
    ok(env.herdr(&["server", "stop"]));
    // One an older herdr left readable by everyone is closed when it is next opened.
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    ok(env.herdr(&["server", "start"]));
    assert_eq!(mode(&log), 0o600, "an old log");
}

/// What follows the timestamp `YYYY-MM-DD HH:MM:SS.mmm +HHMM ` that `line` begins with.
fn after_timestamp(line: &str) -> Option<&str> {
    // 0: a digit, +: the offset's sign.
    let shape = b"0000-00-00 00:00:00.000 +0000 ";
    let fits = line.len() > shape.len()
        && shape.iter().zip(line.bytes()).all(|(s, c)| match s {
            b'0' => c.is_ascii_digit(),
            b'+' => c == b'+' || c == b'-',
            s => c == *s,
        });
    fits.then(|| &line[shape.len()..])
}

#[test]
fn the_server_log_says_when_and_how_grave_each_line_is() {
    use std::os::unix::fs::PermissionsExt;
    let mut env = Env::new("logformat");
    env.extra_vars.push(("HERDR_LOG".into(), "warn".into()));
    std::fs::write(env.config_file(), "scrollback_lines = \"many\"\n").unwrap();
    ok(env.herdr(&["server", "start"]));
    let log = std::fs::read_to_string(env.server_log()).unwrap();
    let problem = log
        .lines()
        .find(|l| l.contains("scrollback_lines"))
        .unwrap_or_else(|| panic!("no config problem in the log:\n{log}"));
    let rest = after_timestamp(problem).unwrap_or_else(|| panic!("no timestamp: {problem}"));
    assert!(rest.starts_with("WARN config: "), "{problem}");
    assert!(
        rest.contains("config.toml:1: scrollback_lines"),
        "{problem}"
    );
    // HERDR_LOG=warn: what the server did (it listens) is not said.
    assert!(!log.contains(" INFO "), "{log}");
    assert!(log.lines().all(|l| after_timestamp(l).is_some()), "{log}");
    let mode = std::fs::metadata(env.server_log())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    ok(env.herdr(&["server", "stop"]));
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let env = Env::new("epipe");
    for args in [
        &["completion", "zsh"][..],
        &["completion", "bash"],
        &["--help"],
        &["--version"],
        &["channel", "show"],
        &["server", "status"],
    ] {
        // A reader that has already gone, as `herdr … | head -1` becomes once head exits.
        let (read, write) = nix::unistd::pipe().expect("pipe");
        drop(read);
        let out = env
            .command(BIN, args)
            .stdout(std::process::Stdio::from(write))
            .output()
            .expect("run herdr");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "herdr {args:?}: {stderr}"
        );
        // A command that did its work exits 0, as if its reader had read everything; one
        // that failed (no server to ask) still says so by its code, but never panics.
        let expected_ok = args[0] != "server";
        assert!(
            out.status.code().is_some_and(|c| c != 101) && out.status.success() == expected_ok,
            "herdr {args:?}: {:?}",
            out.status
        );
    }
}
