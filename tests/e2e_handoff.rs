//! End-to-end: live handoff. The server is replaced by a new process while programs run
//! in its panes: same pids, same screens, no byte of output lost, input reaches them
//! right after; and a handoff that fails at any step leaves the old server serving.

mod support;

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;
use support::{
    json, ok, prompt, submit, wait_foreground, wait_output, wait_until, Env, Term, PROMPT,
};

fn pids(env: &Env) -> Vec<(String, i64)> {
    support::pane_list(env)
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default().to_string(),
                p["pid"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

fn split(env: &Env, pane: &str, dir: &str) -> String {
    let out = json(env.herdr(&[
        "pane",
        "split",
        "--pane",
        pane,
        "--direction",
        dir,
        "--json",
    ]));
    out["id"].as_str().unwrap().to_string()
}

/// Numbers in a pane's history (lines that are only digits), oldest first.
fn numbers(env: &Env, pane: &str) -> Vec<u64> {
    ok(env.herdr(&["pane", "read", "--pane", pane, "--lines", "200000"]))
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn http_get(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A screen with the status line's time of day (`HH:MM · `) left out, and each row's
/// trailing blanks (a blank cell the tab bar redrew in place and one a fresh frame never
/// wrote read alike on screen).
fn without_clock(rows: Vec<String>) -> Vec<String> {
    let mut rows: Vec<String> = rows.iter().map(|r| r.trim_end().to_string()).collect();
    if let Some(status) = rows.last_mut() {
        let b = status.as_bytes();
        let at = (0..b.len().saturating_sub(7)).find(|&i| {
            b[i].is_ascii_digit()
                && b[i + 1].is_ascii_digit()
                && b[i + 2] == b':'
                && b[i + 3].is_ascii_digit()
                && b[i + 4].is_ascii_digit()
                && status[i + 5..].starts_with(" · ")
        });
        if let Some(i) = at {
            status.replace_range(i..i + 5, "HH:MM");
        }
    }
    rows
}

/// The screen a client shows, after it has settled (no change for a moment).
fn settled(t: &Term) -> Vec<String> {
    let last = std::cell::RefCell::new(t.rows());
    wait_until("the screen to settle", || {
        std::thread::sleep(Duration::from_millis(150));
        let now = t.rows();
        let same = now == *last.borrow();
        *last.borrow_mut() = now;
        same
    });
    last.into_inner()
}

#[test]
fn programs_keep_running_and_look_the_same_across_a_handoff() {
    let env = Env::new("handoff");
    std::fs::write(env.config_file(), "scrollback_lines = 200000\n").unwrap();
    let mut t = env.client(150, 42);
    t.wait_text(PROMPT);
    // Tab 1, on screen: a shell with coloured history, vim, less.
    submit(
        &env,
        "p1",
        "printf '\\033[31mred\\033[0m and 漢字\\n'; seq 1 30",
    );
    wait_output(&env, "p1", "^30$");
    let vim = split(&env, "p1", "right");
    prompt(&env, &vim);
    std::fs::write(env.home().join("notes.txt"), "first line\nsecond line\n").unwrap();
    submit(&env, &vim, "vim -u NONE -N notes.txt");
    wait_foreground(&env, &vim, "vim");
    t.wait_text("second line");
    let less = split(&env, &vim, "down");
    prompt(&env, &less);
    submit(&env, &less, "seq -f 'n%g' 1 300 > nums.txt; less nums.txt");
    wait_foreground(&env, &less, "less");
    t.wait("less shows the file", |t| {
        t.rows().iter().any(|r| r.trim_end().ends_with("│n2"))
    });

    // Tab 2, hidden: a web server, a counter, a program waiting for input.
    let tab = json(env.herdr(&["tab", "create", "--json"]));
    let web = tab["pane"].as_str().unwrap_or("p4").to_string();
    prompt(&env, &web);
    submit(&env, &web, "python3 -u -m http.server 0 --bind 127.0.0.1");
    let line = wait_output(&env, &web, "port [0-9]+");
    let port: u16 = line
        .split("port ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .expect("port");
    assert!(http_get(port).starts_with("HTTP/1.0 200"));
    let reader = split(&env, &web, "right");
    prompt(&env, &reader);
    submit(&env, &reader, "sed -n '1s/^/got:/p;q'");
    wait_foreground(&env, &reader, "sed");
    let counter = split(&env, &reader, "down");
    prompt(&env, &counter);
    ok(env.herdr(&["tab", "focus", "1"]));
    // The tab is named after the program in front of its focused pane once the server
    // has looked (once a second).
    t.wait("tab 1 named after less", |t| t.row(0).contains("1:less"));
    let before_screen = settled(&t);
    let before_pids = pids(&env);
    let old_server = env.server_pid().unwrap();

    submit(&env, &counter, "i=0; while :; do echo $i; i=$((i+1)); done");
    wait_output(&env, &counter, "^[0-9]{4,}$");
    let seen_before = *numbers(&env, &counter).last().unwrap();

    let out = ok(env.herdr(&["server", "handoff"]));
    // Input typed right after reaches the program.
    ok(env.herdr(&["pane", "send", "--pane", &reader, "after-handoff\r"]));
    assert!(out.contains("now serving"), "{out}");
    wait_output(&env, &reader, "^got:after-handoff$");
    ok(env.herdr(&["pane", "keys", "--pane", &counter, "C-c"]));
    prompt(&env, &counter);

    // Another process serves, with the same programs.
    let new_server = env.server_pid().unwrap();
    assert_ne!(new_server, old_server);
    assert_eq!(pids(&env), before_pids);
    // Every line of the counter, before, during and after: no gap, no repeat.
    let nums = numbers(&env, &counter);
    let last = *nums.last().unwrap();
    assert!(nums.contains(&seen_before) && last > seen_before);
    let start = nums.iter().position(|n| *n == seen_before).unwrap();
    eprintln!(
        "counter: {} lines kept, {seen_before} before the handoff, {last} at the end",
        nums.len()
    );
    for w in nums[start..].windows(2) {
        assert_eq!(w[1], w[0] + 1, "gap or repeat around {}", w[0]);
    }
    // The web server still answers.
    assert!(http_get(port).starts_with("HTTP/1.0 200"));
    // The client came back by itself and shows the same screen.
    // (The clock on the status line may have moved on a minute meanwhile.)
    t.wait("the client shows the session again", |t| {
        without_clock(t.rows()) == without_clock(before_screen.clone())
    });
    // And what it types reaches vim.
    ok(env.herdr(&["pane", "focus", "--pane", &vim]));
    t.send(b"ggOadded after handoff\x1b:wq\r");
    wait_until("vim saved the file", || {
        std::fs::read_to_string(env.home().join("notes.txt"))
            .is_ok_and(|s| s.starts_with("added after handoff\n"))
    });
    let status = json(env.herdr(&["server", "status", "--json"]));
    assert_eq!(status["live_handoff"], Value::Bool(true));
    assert!(!support::pid_alive(old_server), "the old server is gone");
}

/// A session with a client attached, a shell and a program waiting for input.
fn session_for_failure(name: &str, fault: Option<&str>) -> (Env, Term, String) {
    let mut env = Env::new(name);
    if let Some(f) = fault {
        env.extra_vars.push(("HERDR_TEST_FAULT".into(), f.into()));
    }
    let t = env.client(120, 30);
    t.wait_text(PROMPT);
    let cat = split(&env, "p1", "right");
    prompt(&env, &cat);
    submit(&env, &cat, "cat");
    wait_foreground(&env, &cat, "cat");
    (env, t, cat)
}

/// After a failed handoff: the same server serves, every program runs, the client is back
/// and typing works, and nothing of the attempt is left behind.
fn assert_rolled_back(env: &Env, t: &mut Term, cat: &str, server: i32, before: &[(String, i64)]) {
    assert_eq!(env.server_pid(), Some(server), "the old server serves");
    assert_eq!(pids(env), before);
    for (_, pid) in before {
        assert!(support::pid_alive(*pid as i32), "pid {pid} died");
    }
    ok(env.herdr(&["pane", "send", "--pane", cat, "still-here\r"]));
    wait_until("cat echoes twice", || {
        ok(env.herdr(&["pane", "read", "--pane", cat]))
            .matches("still-here")
            .count()
            >= 2
    });
    ok(env.herdr(&["pane", "focus", "--pane", "p1"]));
    t.wait("the client is back", |t| {
        t.contents().contains("still-here")
    });
    t.line("echo typed-after-rollback");
    t.wait("the shell ran it", |t| t.count("typed-after-rollback") >= 2);
    let run = env.dir.path().join("run/herdr");
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".handoff-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    let imports = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("server import") && l.contains(&env.session))
        .count();
    assert_eq!(imports, 0, "the new process is gone");
}

fn failed_handoff(fault: Option<&str>, args: &[&str], says: &str) {
    let (env, mut t, cat) = session_for_failure("handoff-fail", fault);
    let server = env.server_pid().unwrap();
    let before = pids(&env);
    let mut cmd = vec!["server", "handoff"];
    cmd.extend_from_slice(args);
    let out = env.herdr(&cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the handoff should fail: {stderr}");
    assert!(stderr.contains(says), "expected {says:?} in: {stderr}");
    assert_rolled_back(&env, &mut t, &cat, server, &before);
}

#[test]
fn a_missing_binary_changes_nothing() {
    failed_handoff(
        None,
        &["--binary", "/nonexistent/herdr"],
        "cannot use --binary",
    );
}

#[test]
fn a_binary_that_is_not_executable_changes_nothing() {
    let (env, mut t, cat) = session_for_failure("handoff-noexec", None);
    let file = env.home().join("not-a-program");
    std::fs::write(&file, "just text").unwrap();
    let server = env.server_pid().unwrap();
    let before = pids(&env);
    let out = env.herdr(&["server", "handoff", "--binary", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not an executable file"), "{stderr}");
    assert_rolled_back(&env, &mut t, &cat, server, &before);
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_new_server_that_exits_before_validating_is_rolled_back() {
    failed_handoff(
        Some("exit-before-validated"),
        &[],
        "exited before it connected",
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_new_server_of_another_version_is_refused() {
    let version = env!("CARGO_PKG_VERSION");
    failed_handoff(
        Some("wrong-version"),
        &["--expect-version", version],
        &format!("reports version 9.9.9-fault, expected {version}"),
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_new_server_that_crashes_holding_the_descriptors_is_rolled_back() {
    failed_handoff(Some("crash-after-fds"), &[], "waiting for restored");
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_new_server_that_never_says_ready_is_rolled_back() {
    failed_handoff(Some("never-ready"), &[], "waiting for ready");
}

#[test]
fn a_hundred_and_fifty_panes_move_in_one_go() {
    let env = Env::new("handoff-150");
    ok(env.herdr(&["server", "start"]));
    // 50 tabs of 3 panes: a shell and two programs waiting for input.
    for tab in 0..50 {
        let first = if tab == 0 {
            "p1".to_string()
        } else {
            json(env.herdr(&["tab", "create", "--json"]))["pane"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let right = json(env.herdr(&["pane", "split", "--pane", &first, "--json", "--", "cat"]));
        let right = right["id"].as_str().unwrap().to_string();
        ok(env.herdr(&[
            "pane",
            "split",
            "--pane",
            &right,
            "--direction",
            "down",
            "--",
            "cat",
        ]));
    }
    let before = pids(&env);
    assert_eq!(before.len(), 150);
    let last = before.last().unwrap().0.clone();
    let out = ok(env.herdr(&["server", "handoff"]));
    eprintln!("{out}");
    assert!(out.contains("150 pane(s)"), "{out}");
    assert_eq!(pids(&env), before);
    for (_, pid) in &before {
        assert!(support::pid_alive(*pid as i32));
    }
    ok(env.herdr(&["pane", "send", "--pane", &last, "moved\r"]));
    wait_until("the last pane's cat answers", || {
        ok(env.herdr(&["pane", "read", "--pane", &last]))
            .matches("moved")
            .count()
            >= 2
    });
}

#[test]
fn without_binary_the_session_goes_to_the_file_now_at_the_servers_path() {
    let env = Env::new("handoff-replaced");
    // The server runs from a copy, which an "update" then replaces.
    let copy = env.dir.path().join("bin-herdr");
    support::copy_executable(support::BIN, &copy);
    let start = std::process::Command::new(&copy)
        .env_clear()
        .envs(env.vars())
        .args(["--session", &env.session, "server", "start"])
        .current_dir(env.home())
        .output()
        .unwrap();
    ok(start);
    let old = env.server_pid().unwrap();
    let shell = pids(&env)[0].1;
    let fresh = env.dir.path().join("bin-herdr.new");
    support::copy_executable(support::BIN, &fresh);
    std::fs::rename(&fresh, &copy).unwrap();
    let exe = std::fs::read_link(format!("/proc/{old}/exe")).unwrap();
    assert!(exe.to_string_lossy().ends_with(" (deleted)"), "{exe:?}");

    ok(env.herdr(&["server", "handoff"]));
    let new = env.server_pid().unwrap();
    assert_ne!(new, old);
    let exe = std::fs::read_link(format!("/proc/{new}/exe")).unwrap();
    assert_eq!(exe, copy, "the new server runs the replaced file");
    assert_eq!(pids(&env)[0].1, shell);
    // The session lock moved with the session: a second server still cannot start.
    let lock = env
        .dir
        .path()
        .join("run/herdr")
        .join(format!("{}.lock", env.session));
    let file = std::fs::OpenOptions::new().write(true).open(&lock).unwrap();
    assert!(
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_err(),
        "the session lock is free after the handoff"
    );
}

#[test]
fn pending_waits_and_subscriptions_end_with_a_retry_error() {
    let env = Env::new("handoff-waits");
    ok(env.herdr(&["server", "start"]));
    let spawn = |args: &[&str]| {
        std::process::Command::new(support::BIN)
            .env_clear()
            .envs(env.vars())
            .arg("--session")
            .arg(&env.session)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait = spawn(&[
        "pane",
        "wait",
        "--pane",
        "p1",
        "--output",
        "never-printed",
        "--timeout",
        "60",
    ]);
    let events = spawn(&["events", "--json"]);
    wait_until("both connected", || {
        json(env.herdr(&["server", "status", "--json"]))["api_clients"]
            .as_u64()
            .is_some_and(|n| n >= 3)
    });
    ok(env.herdr(&["server", "handoff"]));
    let wait = wait.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&wait.stderr);
    assert!(
        !wait.status.success(),
        "the wait ended well: {} / {said}",
        String::from_utf8_lossy(&wait.stdout)
    );
    assert!(said.contains("reconnect and retry"), "{said}");
    let events = events.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&events.stdout);
    assert!(printed.contains("server.handoff"), "{printed}");
}

#[test]
fn a_client_that_finds_the_session_locked_waits_for_its_server() {
    // As in the instant of a handoff when the socket is gone but the lock is held.
    let env = Env::new("handoff-locked");
    let run = env.dir.path().join("run/herdr");
    std::fs::create_dir_all(&run).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(run.join(format!("{}.lock", env.session)))
        .unwrap();
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap();
    let waiting = std::process::Command::new(support::BIN)
        .env_clear()
        .envs(env.vars())
        .args(["--session", &env.session, "server", "start"])
        .current_dir(env.home())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = env.server_log();
    wait_until("the started server gave way", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("already running or starting"))
    });
    drop(held);
    ok(env.herdr(&["server", "start"]));
    let out = waiting.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
