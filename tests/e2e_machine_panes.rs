//! A saved machine's pane opened in the local client (`herdr machine open`): a local tab
//! whose pane mirrors the host's (a real OpenSSH server with a home of its own). It shows
//! what the host's pane printed before, history included, takes keys as a local pane
//! does, is searched in copy mode, lays the host's pane out at its own size, and, when
//! the host's link is cut (a black hole, in a network namespace), says so, refuses keys
//! visibly and comes back by itself with what was printed meanwhile.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::machines::{add, blocked_agent, on, spawn_on, submit, wait_pane, LINKED};
use support::netns::{Cut, Netns};
use support::sshd::{MuxGuard, Sshd};
use support::{json, ok, Env, PROMPT};

/// Opens `pane` of `machine` in a new local tab; the local pane's id.
fn open(env: &Env, machine: &str, pane: &str) -> String {
    let opened = json(env.herdr(&["machine", "open", machine, pane, "--json"]));
    opened["pane"].as_str().expect("a pane id").to_string()
}

fn pane_get(out: std::process::Output) -> Value {
    json(out)
}

#[test]
fn a_machines_pane_opens_here_with_its_history_takes_keys_and_is_searched() {
    let Some(gpu) = Sshd::start() else {
        return;
    };
    let env = Env::new("machine-panes");
    let _mux = MuxGuard(&env);
    let mut t = env.client(120, 40);
    t.wait_text(PROMPT);
    add(&env, "gpu", &gpu);
    wait_pane(&env, "gpu", "p1", PROMPT);
    // History on the host before anything is opened here: 300 lines, most scrolled off.
    submit(&env, "gpu", "p1", "seq -f 'host-line-%g' 1 300");
    wait_pane(&env, "gpu", "p1", "host-line-300");

    let local = open(&env, "gpu", "p1");
    t.wait("the host's pane shown in the new tab", |t| {
        t.has_line("host-line-300") && t.contents().contains("gpu:p1")
    });
    // Its history came with it: the local pane holds every line.
    let text = ok(env.herdr(&["pane", "read", "--pane", &local, "--lines", "400"]));
    for n in [1, 150, 300] {
        assert!(
            text.lines().any(|l| l == format!("host-line-{n}")),
            "line {n} missing from the local pane:\n{text}"
        );
    }
    // The host's pane is laid out at the local pane's size.
    let here = pane_get(env.herdr(&["pane", "get", "--pane", &local, "--json"]));
    let there = pane_get(on(&env, "gpu", &["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(
        (&here["rows"], &here["cols"]),
        (&there["rows"], &there["cols"]),
        "here {here}\nthere {there}"
    );

    // Keys typed here run there, and what they print shows here.
    t.line("echo typed-$((6*7))");
    t.wait("the host's answer shown here", |t| t.has_line("typed-42"));
    wait_pane(&env, "gpu", "p1", "typed-42");

    // A click reaches the program there, in the mouse mode it asked for.
    t.line("printf '\\e[?1000h\\e[?1006h'; cat -v");
    t.wait("cat reading there", |t| {
        t.pane_lines().iter().any(|l| l.ends_with("cat -v"))
    });
    t.send(b"\x1b[<0;60;20M\x1b[<0;60;20m");
    t.wait("the click reported to the program there", |t| {
        t.contents().contains("^[[<0;")
    });
    t.send(b"\x03");
    t.line("printf '\\e[?1000l\\e[?1006l'");

    // Copy mode searches the history that came from the host.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"?host-line-57\r");
    t.wait("the match far up in view", |t| {
        t.pane_lines()
            .iter()
            .any(|l| l.starts_with("host-line-57 "))
    });
    t.send(b"q");
    t.wait("copy mode left", |t| !t.contents().contains("SCROLL"));

    // A full-screen program there is drawn here, and leaves as it came.
    t.line("less /etc/hostname; echo less-done");
    t.wait("less drawn here", |t| t.contents().contains("(END)"));
    t.send(b"q");
    t.wait("less left", |t| t.has_line("less-done"));

    // Hidden here, the mirror is paused: the host holds back what its pane prints until
    // it is shown again.
    let mirrors = |env: &Env| {
        pane_get(on(env, "gpu", &["pane", "get", "--pane", "p1", "--json"]))["mirrors"].clone()
    };
    assert_eq!(
        mirrors(&env),
        serde_json::json!({"live": 1, "paused": 0, "resumed": 0})
    );
    ok(env.herdr(&["tab", "focus", "t1"]));
    let deadline = Instant::now() + LINKED;
    while mirrors(&env)["paused"] != 1 {
        assert!(Instant::now() < deadline, "never paused: {}", mirrors(&env));
        std::thread::sleep(Duration::from_millis(50));
    }
    submit(&env, "gpu", "p1", "echo while-hidden-$((3*3))");
    wait_pane(&env, "gpu", "p1", "while-hidden-9");
    let here = ok(env.herdr(&["pane", "read", "--pane", &local, "--lines", "20"]));
    assert!(
        !here.contains("while-hidden-9"),
        "streamed while hidden:\n{here}"
    );
    ok(env.herdr(&["pane", "focus", "--pane", &local]));
    t.wait("what was held back shown", |t| t.has_line("while-hidden-9"));

    // This machine's server stopped and started again (a reboot here): the pane comes
    // back as the host's, not as a shell.
    drop(t);
    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
    let mut t = env.client(120, 40);
    ok(env.herdr(&["pane", "focus", "--pane", &local]));
    t.wait("the host's pane shown again after a restart here", |t| {
        t.has_line("typed-42") && t.contents().contains("gpu:p1")
    });
    t.line("echo again-$((6*8))");
    wait_pane(&env, "gpu", "p1", "again-48");

    // An agent there that waits for the user shows so here, as a local one does.
    let agent = blocked_agent(&gpu);
    submit(&env, "gpu", "p1", &agent);
    wait_pane(&env, "gpu", "p1", "agent-reported");
    t.wait("the agent's state shown on the tab here", |t| {
        t.contents().contains("gpu:p1 [blocked]")
            && t.rows().iter().any(|r| r.contains("claude blocked"))
    });

    // Its program ended there: the pane here shows the last it printed and says the pane
    // closed, and ends.
    ok(on(&env, "gpu", &["pane", "split", "--pane", "p1"]));
    ok(on(&env, "gpu", &["pane", "keys", "--pane", "p1", "C-c"]));
    submit(&env, "gpu", "p1", "echo last-words-$((3*4)); exit");
    let deadline = Instant::now() + LINKED;
    loop {
        let listed = json(env.herdr(&["pane", "list", "--json"]));
        let still = listed
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == local.as_str() && p["exited"].is_null());
        if !still {
            break;
        }
        assert!(Instant::now() < deadline, "the local pane stayed: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    }
    t.wait("the last words and the close shown here", |t| {
        t.has_line("last-words-12") && t.contents().contains("gpu:p1 closed")
    });
}

#[test]
fn a_cut_machines_pane_says_so_refuses_keys_and_comes_back_with_what_was_printed() {
    let Some(mut net) = Netns::new() else {
        return;
    };
    let Some(far) = Sshd::start_in(&net) else {
        return;
    };
    let env = Env::new("machine-pane-cut");
    let _mux = MuxGuard(&env);
    let mut t = env.client(120, 40);
    t.wait_text(PROMPT);
    add(&env, "far", &far);
    wait_pane(&env, "far", "p1", PROMPT);
    submit(
        &env,
        "far",
        "p1",
        "i=0; while sleep 0.2; do echo cnt-$((i=i+1)); done",
    );
    wait_pane(&env, "far", "p1", "cnt-3");
    open(&env, "far", "p1");
    t.wait("the counter shown here", |t| {
        t.pane_lines().iter().any(|l| l.starts_with("cnt-"))
    });

    net.cut(Cut::Silent);
    let cut = Instant::now();
    t.wait("the pane says its machine is unreachable", |t| {
        t.contents().contains("far is unreachable")
    });
    eprintln!(
        "FIGURE the pane said unreachable {:?} after the cut",
        cut.elapsed()
    );
    // Keys are refused visibly, not queued.
    t.send(b"x");
    t.wait("keys refused visibly", |t| {
        t.contents().contains("keys not sent")
    });

    std::thread::sleep(Duration::from_secs(3));
    let highest_before = support::highest_after(&t.contents(), "cnt-");
    net.restore();
    let back = Instant::now();
    // Back by itself, the pane's notice gone, with the lines printed meanwhile.
    t.wait("the mirror going on", |t| {
        !t.contents().contains("reconnects by itself")
            && support::highest_after(&t.contents(), "cnt-") > highest_before + 10
    });
    eprintln!(
        "FIGURE the pane was live again {:?} after the link returned",
        back.elapsed()
    );
    // It went on from where it stood: only what came since was sent, not its state.
    let got = json(on(&env, "far", &["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(got["mirrors"]["resumed"], 1, "{got}");
    // Typing works again.
    t.send(b"\x03");
    t.line("echo back-$((6*7))");
    t.wait("typing works again", |t| t.has_line("back-42"));
}

#[test]
fn a_machines_tab_clicked_in_the_sidebar_opens_here_with_each_of_its_panes() {
    let Some(gpu) = Sshd::start() else {
        return;
    };
    let env = Env::new("machine-tab");
    let _mux = MuxGuard(&env);
    let mut t = env.client(140, 40);
    t.wait_text(PROMPT);
    add(&env, "gpu", &gpu);
    wait_pane(&env, "gpu", "p1", PROMPT);
    ok(on(&env, "gpu", &["pane", "split", "--pane", "p1"]));
    wait_pane(&env, "gpu", "p2", PROMPT);
    submit(&env, "gpu", "p1", "echo left-$((2*3))");
    submit(&env, "gpu", "p2", "echo right-$((4*5))");
    wait_pane(&env, "gpu", "p2", "right-20");
    ok(on(&env, "gpu", &["tab", "rename", "--tab", "t1", "work"]));
    // The host's tab is listed under its workspace in the sidebar.
    t.wait("the machine's tab in the sidebar", |t| {
        t.rows().iter().any(|r| r.contains("1:work"))
    });
    let row = t.rows().iter().position(|r| r.contains("1:work")).unwrap();
    t.send(format!("\x1b[<0;5;{}M\x1b[<0;5;{}m", row + 1, row + 1).as_bytes());
    t.wait("both of its panes shown here", |t| {
        t.contents().contains("left-6") && t.contents().contains("right-20")
    });
    assert!(t.contents().contains("gpu:work"), "{}", t.contents());
    // A pane split there later opens here too.
    ok(on(&env, "gpu", &["pane", "split", "--pane", "p2"]));
    let panes_here = |env: &Env| {
        json(env.herdr(&["pane", "list", "--tab", "t2", "--json"]))
            .as_array()
            .map_or(0, Vec::len)
    };
    let deadline = Instant::now() + LINKED;
    while panes_here(&env) != 3 {
        assert!(
            Instant::now() < deadline,
            "the new pane there never opened here"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    submit(&env, "gpu", "p3", "echo third-$((5*5))");
    t.wait("the new pane shown here", |t| {
        t.contents().contains("third-25")
    });
    // Clicked again: the same tab comes to front, nothing opens twice.
    t.line("echo local-again");
    let tabs = |env: &Env| {
        json(env.herdr(&["tab", "list", "--json"]))
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(tabs(&env), 2);
    ok(env.herdr(&["tab", "focus", "t1"]));
    t.wait("the local tab in front", |t| {
        !t.contents().contains("right-20")
    });
    // (This machine's own tabs are listed first: the machine's rows moved down.)
    let row = t.rows().iter().position(|r| r.contains("1:work")).unwrap();
    t.send(format!("\x1b[<0;5;{}M\x1b[<0;5;{}m", row + 1, row + 1).as_bytes());
    t.wait("the tab that shows it in front", |t| {
        t.contents().contains("right-20")
    });
    assert_eq!(tabs(&env), 2);

    // Its events, through `--machine`, as they happen there.
    let mut events = spawn_on(&env, "gpu", &["events", "--json"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = events.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // (Subscribed once a first tab made there is told: made again until one is.)
    let deadline = Instant::now() + LINKED;
    let created = loop {
        ok(on(&env, "gpu", &["tab", "create", "--name", "evented"]));
        if let Ok(line) = rx.recv_timeout(Duration::from_secs(2)) {
            break line;
        }
        assert!(Instant::now() < deadline, "no event came through --machine");
    };
    assert!(created.contains("\"event\""), "{created}");
    let _ = events.kill();
    let _ = events.wait();

    // By its id from the command line: the tab that shows it already.
    let opened = json(env.herdr(&["machine", "open", "gpu", "t1", "--json"]));
    assert_eq!(opened["tab"], "t2", "{opened}");
    assert_eq!(tabs(&env), 2);
}
