//! End-to-end: a session with far more open files than the 1024 a login's soft limit
//! allows. The server raises its own limit, the programs in its panes still get the
//! user's, and a live handoff moves every pane to a new server that can hold them too.

mod support;

use serde_json::{json, Value};
use support::api::Api;
use support::{ok, pane_list, wait_output, Env, BIN};

/// The soft limit a default Linux login gives.
const LOGIN_SOFT: u64 = 1024;
/// Panes in the session: well above the ~250 a server kept at 1024 open files could hold,
/// and few enough to make and hand over in seconds on a slow machine.
const PANES: usize = 1000;
/// Panes per tab: a split chain this deep stays far from the layout's depth limit.
const PER_TAB: usize = 25;

/// Starts the session's server from a shell whose open-file limit `ulimit FLAG` set to
/// `LOGIN_SOFT` (`-Sn`: the soft one only; `-n`: soft and hard).
fn start_limited(env: &Env, flag: &str) -> std::process::Output {
    let login = format!("ulimit {flag} {LOGIN_SOFT} && exec \"$0\" \"$@\"");
    env.command(
        "sh",
        &[
            "-c",
            &login,
            BIN,
            "--session",
            &env.session,
            "server",
            "start",
        ],
    )
    .output()
    .expect("start the server")
}

/// The soft open-file limit of a process, from /proc.
fn soft_limit(pid: i32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a soft limit")
}

/// Sends the requests of one tab ahead of their replies; each must succeed.
fn make_tab(api: &mut Api, first: bool) {
    let mut ids = Vec::new();
    if !first {
        ids.push(api.send("tab.create", json!({})));
    }
    for i in 1..PER_TAB {
        let direction = if i % 2 == 0 { "down" } else { "right" };
        ids.push(api.send(
            "pane.split",
            json!({"direction": direction, "command": ["sleep", "600"]}),
        ));
    }
    for id in ids {
        let reply = api.recv();
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply.get("result").is_some(), "request {id}: {reply}");
    }
}

/// A pane whose program prints the open-file limit it was given (in a tab of its own, so
/// the line has room).
fn limit_seen_in_a_new_pane(env: &Env, api: &mut Api) -> String {
    api.call("tab.create", json!({}));
    let probe = api.call(
        "pane.split",
        json!({"command": ["sh", "-c", "echo limit=$(ulimit -Sn); exec sleep 600"]}),
    );
    let pane = probe["id"].as_str().expect("pane id").to_string();
    wait_output(env, &pane, "limit=[0-9]+")
}

fn pids(env: &Env) -> Vec<i64> {
    let mut pids: Vec<i64> = pane_list(env)
        .iter()
        .map(|p: &Value| p["pid"].as_i64().unwrap_or(0))
        .collect();
    pids.sort_unstable();
    pids
}

#[test]
fn hundreds_of_panes_fit_and_hand_over_while_their_programs_keep_the_login_limit() {
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    // About 4 descriptors a pane, and one more in each process during a handoff.
    let needed = PANES as u64 * 6 + 256;
    if hard < needed {
        eprintln!("skipped: the hard open-file limit {hard} is below the {needed} this needs");
        return;
    }
    let env = Env::new("nofile");
    let started = start_limited(&env, "-Sn");
    ok(started);
    let old = env.server_pid().expect("server pid");

    let began = std::time::Instant::now();
    let mut api = Api::connect(&env);
    for tab in 0..PANES / PER_TAB {
        make_tab(&mut api, tab == 0);
    }
    eprintln!("{PANES} panes made in {:?}", began.elapsed());
    let fds = std::fs::read_dir(format!("/proc/{old}/fd"))
        .unwrap()
        .count();
    eprintln!("the server holds {fds} descriptors");
    assert_eq!(soft_limit(old), hard, "the server raised its soft limit");
    let seen = limit_seen_in_a_new_pane(&env, &mut api);
    assert_eq!(seen, format!("limit={LOGIN_SOFT}"), "a pane's program");
    drop(api);

    let before = pids(&env);
    assert_eq!(before.len(), PANES + 2);
    let began = std::time::Instant::now();
    let out = ok(env.herdr(&["server", "handoff"]));
    eprintln!("{out}\nhandoff took {:?}", began.elapsed());
    let new = env.server_pid().expect("new server pid");
    assert_ne!(new, old);
    assert_eq!(soft_limit(new), hard, "the new server raised its limit too");
    assert_eq!(
        pids(&env),
        before,
        "every program kept running, in its pane"
    );
    let mut api = Api::connect(&env);
    let seen = limit_seen_in_a_new_pane(&env, &mut api);
    assert_eq!(
        seen,
        format!("limit={LOGIN_SOFT}"),
        "a program started by the new server"
    );
}

#[test]
fn a_server_at_its_hard_limit_names_the_limit_and_how_to_raise_it() {
    let env = Env::new("nofile-low");
    ok(start_limited(&env, "-n"));
    let mut api = Api::connect(&env);
    let server = env.server_pid().expect("server pid");
    let mut refused = None;
    let mut kept_most = 0;
    'tabs: for tab in 0.. {
        if tab > 0 {
            api.call("tab.create", json!({}));
        }
        // Listings keep files open while descriptors are plenty (a cache): they must
        // never be what refuses a pane.
        api.call("pane.list", json!({}));
        kept_most = kept_most.max(kept_files(server));
        for _ in 1..PER_TAB {
            let id = api.send("pane.split", json!({"command": ["sleep", "600"]}));
            let reply = api.recv();
            assert_eq!(reply["id"], id, "{reply}");
            if let Some(e) = reply.get("error") {
                refused = Some(e.clone());
                break 'tabs;
            }
        }
        assert!(tab < 20, "more panes than {LOGIN_SOFT} open files can hold");
    }
    let error = refused.expect("a refusal");
    assert_eq!(error["code"], "spawn_failed", "{error}");
    assert!(
        kept_most > 0,
        "listings kept no file while descriptors were plenty"
    );
    assert_eq!(kept_files(server), 0, "files kept at the limit");
    let message = error["message"].as_str().unwrap_or_default();
    for what in [
        "RLIMIT_NOFILE",
        "hard limit 1024",
        "close some panes",
        "LimitNOFILE",
    ] {
        assert!(message.contains(what), "{what:?} missing from: {message}");
    }
    // The server serves on: it refused the pane while it still kept descriptors for
    // connections.
    ok(env.herdr(&["server", "status"]));

    // API connections (three descriptors each) then use up even those, one at a time:
    // each gets an answer, the last a refusal naming the limit — or, when not one
    // descriptor is left to accept it with, it waits in the backlog. Never a connection
    // dropped without a word.
    let pid = env.server_pid().expect("server pid");
    let mut conns = Vec::new();
    let ended = 'open: loop {
        assert!(
            conns.len() < 400,
            "more API connections than 1024 open files can hold"
        );
        let mut c = std::os::unix::net::UnixStream::connect(env.socket()).expect("connect");
        std::io::Write::write_all(&mut c, HELLO).expect("hello");
        c.set_read_timeout(Some(std::time::Duration::from_millis(500)))
            .unwrap();
        let mut reader = std::io::BufReader::new(c.try_clone().unwrap());
        let waited = std::time::Instant::now();
        let mut line = String::new();
        loop {
            match std::io::BufRead::read_line(&mut reader, &mut line) {
                Ok(0) => panic!("connection {} closed without an answer", conns.len()),
                Ok(_) if line.contains("RLIMIT_NOFILE") => break 'open "refused",
                Ok(_) => {
                    assert!(line.contains("\"ok\":true"), "{line}");
                    conns.push(c);
                    continue 'open;
                }
                Err(_) if open_files(pid) >= LOGIN_SOFT => break 'open "waiting",
                Err(_) => assert!(
                    waited.elapsed() < std::time::Duration::from_secs(30),
                    "no answer to connection {} with descriptors left",
                    conns.len()
                ),
            }
        }
    };
    eprintln!("{} API connections open, the next {ended}", conns.len());
    // More connections meanwhile, and the listening socket stays readable: the server
    // must wait (or refuse), not spin on it.
    let more: Vec<_> = (0..16)
        .map(|_| {
            let mut c = std::os::unix::net::UnixStream::connect(env.socket()).expect("connect");
            std::io::Write::write_all(&mut c, HELLO).expect("hello");
            c
        })
        .collect();
    let before = cpu_ticks(pid);
    let start = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let used = cpu_ticks(pid) - before;
    let wall = start.elapsed().as_secs_f64() * 100.0;
    assert!(
        (used as f64) < wall * 0.3,
        "the server used {used} of {wall:.0} ticks with connections waiting for descriptors"
    );
    drop((conns, more));
    ok(env.herdr(&["server", "status"]));
}

/// An API client's hello.
const HELLO: &[u8] = b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"t\",\"role\":\"api\"}\n";

/// Descriptors a process has open.
/// The command-line files (of processes in panes) `pid` holds open.
fn kept_files(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter(|to| to.starts_with("/proc") && to.ends_with("cmdline"))
                .count()
        })
        .unwrap_or(0)
}

fn open_files(pid: i32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// User and system CPU time of a process so far, in clock ticks (1/100 s).
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0)
}
