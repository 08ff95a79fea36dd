//! End-to-end through the CLI against a real server: the control plane.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::api::api_conn;
use support::{json, ok, prompt, started, wait_until};

#[test]
fn build_a_layout_submit_read_and_wait() {
    let env = started("layout");
    let ws = ok(env.herdr(&["workspace", "create", "--name", "agents"]));
    assert_eq!(ws, "w2");
    let tab = json(env.herdr(&["tab", "create", "--workspace", "w2", "--json"]));
    let t = tab["id"].as_str().unwrap().to_string();
    let first = tab["pane"].as_str().unwrap().to_string();
    let split = ok(env.herdr(&["pane", "split", "--pane", &first, "--direction", "down"]));
    assert_ne!(split, first);
    prompt(&env, &split);
    support::submit(&env, &split, "echo $((6*7))");
    let start = Instant::now();
    let line = support::wait_output(&env, &split, "^42$");
    assert_eq!(line, "42");
    assert!(start.elapsed() < Duration::from_secs(20));
    let screen = ok(env.herdr(&["pane", "read", "--pane", &split]));
    assert!(screen.lines().any(|l| l == "42"), "{screen}");
    // pane list --json: every field a script relies on.
    let panes = json(env.herdr(&["pane", "list", "--json"]));
    let p = panes
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == split.as_str())
        .unwrap()
        .clone();
    for key in [
        "id",
        "workspace",
        "tab",
        "title",
        "cwd",
        "pid",
        "command",
        "rows",
        "cols",
        "focused",
        "agent",
        "agent_state",
    ] {
        assert!(p.get(key).is_some(), "missing {key} in {p}");
    }
    assert_eq!(p["workspace"], "w2");
    assert_eq!(p["tab"], t.as_str());
    assert_eq!(p["agent"], Value::Null);
    assert!(p["command"].as_str().unwrap().contains("bash"), "{p}");
    assert!(p["pid"].as_u64().unwrap() > 1);
    let tabs = json(env.herdr(&["tab", "list", "--workspace", "w2", "--json"]));
    assert_eq!(tabs.as_array().unwrap().len(), 2);
}

#[test]
fn a_listing_shows_what_the_pane_runs_now_after_an_exec_or_a_cd() {
    // Listings keep each pane's command-line file open between them: what the shell
    // becomes (`exec`, the same process) and where it goes (`cd`) must still show.
    let env = started("listexec");
    prompt(&env, "p1");
    let first = |env: &support::Env| json(env.herdr(&["pane", "list", "--json"]))[0].clone();
    let before = first(&env);
    assert!(
        before["command"].as_str().unwrap().contains("bash"),
        "{before}"
    );
    // (Quotes in the name: the JSON escapes them, and the people's listing reads them back.)
    let dir = env.dir.path().join("home/somewhere \"else\"");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    support::submit(&env, "p1", "cd ~/'somewhere \"else\"'");
    wait_until("the listing shows the new cwd", || {
        first(&env)["cwd"].as_str() == dir.to_str()
    });
    support::submit(&env, "p1", "exec sleep 1234");
    wait_until("the listing shows what the shell became", || {
        first(&env)["command"] == "sleep 1234"
    });
    assert_eq!(first(&env)["pid"], before["pid"], "the same process");
    // For people: a line a pane, the focused one starred, `pane get` the same line.
    let listed = ok(env.herdr(&["pane", "list"]));
    let size = |k: &str| first(&env)[k].as_u64().unwrap();
    let (rows, cols) = (size("rows"), size("cols"));
    let line = format!(
        "*p1   w1 t1 {cols:>3}x{rows:<3} sleep 1234           {}",
        dir.display()
    );
    assert_eq!(listed, line);
    assert_eq!(ok(env.herdr(&["pane", "get", "--pane", "p1"])), line);
}

#[test]
fn a_split_can_run_a_program_and_wait_returns_its_exit_status() {
    let env = started("exit");
    let pane = ok(env.herdr(&[
        "pane",
        "split",
        "--",
        "sh",
        "-c",
        "echo working; sleep 0.5; exit 7",
    ]));
    let out = env.herdr(&["pane", "wait", "--pane", &pane, "--exit", "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(7), "the CLI exits with the status");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "exited with status 7"
    );
    // The pane stays with its result until it is closed; its id is not reused.
    let got = json(env.herdr(&["pane", "get", "--pane", &pane, "--json"]));
    assert_eq!(got["exited"], 7, "{got}");
    ok(env.herdr(&["pane", "close", "--pane", &pane]));
    let panes = json(env.herdr(&["pane", "list", "--json"]));
    assert!(panes
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["id"] != pane.as_str()));
    let next = ok(env.herdr(&["pane", "split"]));
    assert_ne!(next, pane);
    // A program ended by a signal has no exit code: the CLI exits 1.
    let killed = ok(env.herdr(&["pane", "split", "--", "sh", "-c", "sleep 0.3; kill -9 $$"]));
    let out = env.herdr(&[
        "pane",
        "wait",
        "--pane",
        &killed,
        "--exit",
        "--timeout",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "exited (ended by a signal)"
    );
    let got = json(env.herdr(&["pane", "get", "--pane", &killed, "--json"]));
    assert_eq!(got["exited"], "signal", "{got}");
}

#[test]
fn wait_times_out_with_its_own_exit_code() {
    let env = started("timeout");
    let out = env.herdr(&[
        "pane",
        "wait",
        "--output",
        "never-printed-xyz",
        "--timeout",
        "0.3",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = env.herdr(&["pane", "wait", "--pane", "p99", "--exit"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no pane"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn keys_send_and_read_with_scrollback() {
    let env = started("keys");
    prompt(&env, "p1");
    ok(env.herdr(&["pane", "send", "seq 1 100"]));
    ok(env.herdr(&["pane", "keys", "Enter"]));
    ok(env.herdr(&["pane", "wait", "--output", "^100$", "--timeout", "20"]));
    let last = ok(env.herdr(&["pane", "read", "--lines", "200"]));
    assert!(
        last.lines().any(|l| l == "1"),
        "scrollback included:\n{last}"
    );
    ok(env.herdr(&["pane", "send", "sleep 30"]));
    ok(env.herdr(&["pane", "keys", "Enter"]));
    // Interrupt sleep itself: a C-c that lands while bash is still starting it would go
    // to bash (as in any terminal) and sleep would run on.
    wait_until("sleep is in front", || {
        json(env.herdr(&["pane", "get", "--json"]))["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("sleep"))
    });
    ok(env.herdr(&["pane", "keys", "C-c"]));
    // The interrupt flushes typed-ahead input: wait for the prompt before typing again.
    wait_until("the prompt after C-c", || {
        let screen = String::from_utf8_lossy(&env.herdr(&["pane", "read"]).stdout).into_owned();
        screen.lines().map(str::trim_end).rfind(|l| !l.is_empty()) == Some(support::PROMPT)
    });
    ok(env.herdr(&["pane", "submit", "echo after-$((1+2))"]));
    ok(env.herdr(&["pane", "wait", "--output", "after-3", "--timeout", "20"]));
    let bad = env.herdr(&["pane", "keys", "C-Nope"]);
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn rename_focus_zoom_resize_close() {
    let env = started("manage");
    let right = ok(env.herdr(&["pane", "split", "--direction", "right"]));
    ok(env.herdr(&["pane", "rename", "--pane", &right, "builder"]));
    ok(env.herdr(&["pane", "focus", "--pane", "p1"]));
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["focused"], true);
    let cols_before = p1["cols"].as_u64().unwrap();
    ok(env.herdr(&[
        "pane",
        "resize",
        "--pane",
        "p1",
        "--direction",
        "right",
        "--cells",
        "5",
    ]));
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["cols"].as_u64().unwrap(), cols_before + 5);
    ok(env.herdr(&["pane", "zoom", "--pane", &right, "--on"]));
    let r = json(env.herdr(&["pane", "get", "--pane", &right, "--json"]));
    assert_eq!(r["zoomed"], true);
    assert_eq!(r["label"], "builder");
    ok(env.herdr(&["pane", "close", "--pane", &right]));
    ok(env.herdr(&["workspace", "rename", "main"]));
    let ws = json(env.herdr(&["workspace", "list", "--json"]));
    assert_eq!(ws[0]["name"], "main");
    assert_eq!(ws[0]["panes"], 1);
}

fn next(r: &mut BufReader<UnixStream>) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[test]
fn events_arrive_in_order_for_a_scripted_sequence() {
    let env = started("events");
    let (mut s, mut r) = api_conn(&env);
    s.write_all(b"{\"id\":1,\"method\":\"events.subscribe\"}\n")
        .unwrap();
    assert_eq!(next(&mut r)["result"]["subscribed"], true);
    let tab = ok(env.herdr(&["tab", "create"]));
    let pane = ok(env.herdr(&["pane", "split"]));
    ok(env.herdr(&["tab", "rename", "--tab", &tab, "build"]));
    ok(env.herdr(&["pane", "close", "--pane", &pane]));
    ok(env.herdr(&["tab", "close", &tab]));
    let want = [
        ("tab.created", tab.as_str()),
        ("pane.created", "p2"),
        ("tab.focused", tab.as_str()),
        ("pane.focused", "p2"),
        ("pane.created", pane.as_str()),
        ("pane.focused", pane.as_str()),
        ("tab.renamed", tab.as_str()),
        ("pane.closed", pane.as_str()),
        ("pane.focused", "p2"),
        ("pane.closed", "p2"),
        ("tab.closed", tab.as_str()),
        ("tab.focused", "t1"),
        ("pane.focused", "p1"),
    ];
    let mut got = Vec::new();
    while got.len() < want.len() {
        let ev = next(&mut r);
        let name = ev["event"].as_str().unwrap().to_string();
        if name == "pane.output" || name == "pane.title" {
            continue;
        }
        got.push((name, ev["id"].as_str().unwrap().to_string()));
    }
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn exits_are_announced_with_their_status() {
    let env = started("exitev");
    let (mut s, mut r) = api_conn(&env);
    s.write_all(b"{\"id\":1,\"method\":\"events.subscribe\"}\n")
        .unwrap();
    next(&mut r);
    let pane = ok(env.herdr(&["pane", "split", "--", "sh", "-c", "exit 3"]));
    loop {
        let ev = next(&mut r);
        if ev["event"] == "pane.exited" {
            assert_eq!(ev["id"], pane.as_str());
            assert_eq!(ev["status"], 3);
            break;
        }
    }
    // The pane stays with its result; closing it is announced.
    ok(env.herdr(&["pane", "close", "--pane", &pane]));
    assert_eq!(next_non_output(&mut r)["event"], "pane.closed");
}

fn next_non_output(r: &mut BufReader<UnixStream>) -> Value {
    loop {
        let ev = next(r);
        if ev["event"] != "pane.output" && ev["event"] != "pane.title" {
            return ev;
        }
    }
}

#[test]
fn closing_a_pane_ends_its_waits_at_once() {
    let env = started("closewait");
    let pane = ok(env.herdr(&["pane", "split"]));
    let (mut s, mut r) = api_conn(&env);
    let wait = format!("{{\"id\":1,\"method\":\"pane.wait\",\"params\":{{\"pane\":\"{pane}\",\"output\":\"never-xyz\"}}}}\n");
    s.write_all(wait.as_bytes()).unwrap();
    // Requests on one connection are handled in order: once the ping is answered, the
    // wait is registered.
    s.write_all(b"{\"id\":2,\"method\":\"ping\"}\n").unwrap();
    assert_eq!(next(&mut r)["id"], 2);
    ok(env.herdr(&["pane", "close", "--pane", &pane]));
    let answer = next(&mut r);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], "pane_exited", "{answer}");
}

#[test]
fn a_pattern_that_matches_nothing_answers_on_a_blank_pane() {
    // (Its first re-check indexed the lines of a pane that had none, and the request
    // was never answered.)
    let env = started("blank");
    let pane = ok(env.herdr(&["pane", "split", "--", "sleep", "600"]));
    for pattern in ["", "^", "x*"] {
        let out = env.herdr(&[
            "pane",
            "wait",
            "--pane",
            &pane,
            "--output",
            pattern,
            "--timeout",
            "10",
        ]);
        assert!(
            out.status.success(),
            "{pattern:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_submits_enter_waits_until_its_program_has_shown_the_text() {
    // A program as agents are: raw mode, no echo by the terminal; it reads when it gets
    // to it (here, a moment after it is ready: busy, or on a loaded machine), and draws
    // what it read. It records what each read got.
    let env = started("submit-echo");
    let home = env.home();
    let script = "stty raw -echo; touch ready; sleep 0.4; \
                  dd bs=4096 count=1 2>/dev/null | od -An -c | tr -d ' \\n' > first.tmp; \
                  mv first.tmp first; printf 'you typed it\\r\\n'; \
                  dd bs=4096 count=1 2>/dev/null | od -An -c | tr -d ' \\n' > second.tmp; \
                  mv second.tmp second; sleep 100";
    let home_arg = home.display().to_string();
    let pane = ok(env.herdr(&[
        "pane", "split", "--cwd", &home_arg, "--", "sh", "-c", script,
    ]));
    wait_until("the program is ready", || home.join("ready").exists());
    ok(env.herdr(&["pane", "submit", "--pane", &pane, "hello"]));
    wait_until("both reads", || home.join("second").exists());
    let read = |name: &str| std::fs::read_to_string(home.join(name)).unwrap();
    assert_eq!(
        (read("first"), read("second")),
        ("hello".to_string(), "\\r".to_string()),
        "the text in one read, Enter in the next, once the program had shown the text"
    );
}
