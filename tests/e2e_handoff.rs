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
    let panes = json(env.herdr(&["pane", "list", "--json"]));
    panes
        .as_array()
        .unwrap()
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
    t.wait("the client shows the session again", |t| {
        t.rows() == before_screen
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
