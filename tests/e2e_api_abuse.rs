//! End-to-end: bad input and hostile peers on the API socket, and floods of input from
//! clients. Each gets an error and/or its connection closed, or is taken in bounded
//! steps; the server and every other client carry on.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::Value;
use support::api::{api_conn, request, HELLO};
use support::{proc_status, server_status as status, started, wait_until, Env};

#[test]
fn wrong_parameter_types_get_invalid_params() {
    let env = started("types");
    let (mut s, mut r) = api_conn(&env);
    for (req, needle) in [
        (
            r#"{"id":1,"method":"pane.split","params":{"direction":5}}"#,
            "direction",
        ),
        (
            r#"{"id":2,"method":"pane.get","params":{"pane":[1]}}"#,
            "pane",
        ),
        (
            r#"{"id":3,"method":"pane.wait","params":{"output":"(","timeout_ms":10}}"#,
            "regex",
        ),
        (
            r#"{"id":4,"method":"pane.read","params":{"lines":-3}}"#,
            "lines",
        ),
        (
            r#"{"id":5,"method":"pane.keys","params":{"keys":"Enter"}}"#,
            "keys",
        ),
        (
            r#"{"id":6,"method":"pane.split","params":{"cwd":"relative/dir"}}"#,
            "cwd",
        ),
        (
            r#"{"id":7,"method":"pane.wait","params":{"exit":true,"output":"x"}}"#,
            "exactly one",
        ),
    ] {
        let v = request(&mut s, &mut r, req);
        assert_eq!(v["error"]["code"], "invalid_params", "{req} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{req} → {v}"
        );
    }
    // The connection is still usable.
    assert_eq!(
        request(&mut s, &mut r, r#"{"id":8,"method":"ping"}"#)["result"]["pong"],
        true
    );
}

#[test]
fn an_oversized_request_is_refused_and_only_that_connection_closed() {
    let env = started("huge");
    let (mut s, mut r) = api_conn(&env);
    let big = vec![b'x'; 2 * 1024 * 1024];
    // The server may close while we are still writing; that is the point.
    let _ = s.write_all(&big);
    let mut answer = String::new();
    let _ = r.read_line(&mut answer);
    assert!(answer.contains("too_large"), "{answer:?}");
    let mut rest = Vec::new();
    assert_eq!(r.read_to_end(&mut rest).unwrap_or(0), 0);
    assert_eq!(status(&env)["panes"], 1);
}

#[test]
fn a_half_sent_request_stalls_only_its_own_connection() {
    let env = started("half");
    let (mut stalled, _r) = api_conn(&env);
    stalled.write_all(b"{\"id\":1,\"meth").unwrap();
    // Everyone else is served meanwhile.
    let (mut s, mut r) = api_conn(&env);
    assert_eq!(
        request(&mut s, &mut r, r#"{"id":1,"method":"ping"}"#)["result"]["pong"],
        true
    );
    assert!(env.herdr(&["pane", "split"]).status.success());
    assert_eq!(status(&env)["panes"], 2);
    // Finishing the line later still works.
    stalled.write_all(b"od\":\"ping\"}\n").unwrap();
    let mut answer = String::new();
    BufReader::new(stalled).read_line(&mut answer).unwrap();
    assert!(answer.contains("pong"), "{answer}");
}

#[test]
fn a_peer_that_never_reads_is_disconnected_with_bounded_memory() {
    let env = started("noread");
    // A subscriber that never reads, and a script that renames a pane as fast as the
    // server answers: every rename is an event for the subscriber.
    let (mut lazy, _r) = api_conn(&env);
    lazy.write_all(b"{\"id\":1,\"method\":\"events.subscribe\"}\n")
        .unwrap();
    // (`status` itself is an API client while it asks, hence the +1.)
    wait_until("the subscriber is registered", || {
        status(&env)["api_clients"] == 2
    });
    let (mut busy, mut busy_r) = api_conn(&env);
    // In rounds of 1000 (each answered before the next), so the busy client itself stays
    // well inside its queue however slowly this machine runs it.
    for round in 0..20 {
        let mut batch = Vec::new();
        for i in 0..1000 {
            let n = round * 1000 + i;
            batch.extend_from_slice(
                format!(
                    "{{\"id\":{n},\"method\":\"pane.rename\",\"params\":{{\"name\":\"n{n}\"}}}}\n"
                )
                .as_bytes(),
            );
        }
        busy.write_all(&batch).unwrap();
        for _ in 0..1000 {
            let mut line = String::new();
            assert!(
                busy_r.read_line(&mut line).unwrap() > 0,
                "the busy client got all its replies"
            );
        }
    }
    drop((busy, busy_r));
    wait_until("the lazy subscriber is dropped", || {
        status(&env)["api_clients"] == 1
    });
    // A requester that never reads its replies meets the same fate.
    let (mut greedy, _r2) = api_conn(&env);
    let pings = b"{\"id\":1,\"method\":\"ping\"}\n".repeat(2000);
    greedy
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    for _ in 0..100 {
        if greedy.write_all(&pings).is_err() {
            break;
        }
    }
    wait_until("the greedy requester is dropped", || {
        status(&env)["api_clients"] == 1
    });
    // The server's memory stayed bounded and it still serves.
    let rss_kib = server_rss_kib(&env);
    assert!(rss_kib < 200 * 1024, "server RSS {rss_kib} KiB");
    assert!(env.herdr(&["pane", "list"]).status.success());
}

#[test]
fn another_user_is_refused() {
    if !nix::unistd::getuid().is_root() {
        eprintln!("skipped: needs root to run a client as another user");
        return;
    }
    let env = started("otheruid");
    // Open the way to the socket so only the server's peer-uid check stands in between.
    use std::os::unix::fs::PermissionsExt;
    let run = env.dir.path().join("run");
    for dir in [env.dir.path().to_path_buf(), run.clone(), run.join("herdr")] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(env.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let as_nobody = |program: &str, args: &[&str]| {
        std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                program,
            ])
            .args(args)
            .env_clear()
            .env("XDG_RUNTIME_DIR", &run)
            .env("HOME", "/")
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    // The server refuses the connection before reading a byte.
    // Whatever happens first — the send fails, or the read sees the close — no answer
    // may come back.
    let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
                  s.settimeout(10)\ntry:\n    s.sendall(b'{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"x\",\"role\":\"api\"}\\n')\n\
                  \x20   print(repr(s.recv(100)))\nexcept OSError as e:\n    print('closed', e)\n";
    let refused = as_nobody("python3", &["-c", script, env.socket().to_str().unwrap()]);
    // And the client refuses a socket folder that is not its own.
    let foreign = as_nobody(support::BIN, &["--session", &env.session, "pane", "list"]);
    // The owner's client also refuses the opened folder.
    let opened = env.herdr(&["pane", "list"]);
    // Close the folder again before asserting, so the fixture can stop the server whatever
    // happens below.
    std::fs::set_permissions(run.join("herdr"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let said = String::from_utf8_lossy(&refused.stdout).into_owned();
    assert!(
        said.trim() == "b''" || said.starts_with("closed"),
        "another uid got an answer: {said} {}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!foreign.status.success());
    let err = String::from_utf8_lossy(&foreign.stderr);
    assert!(err.contains("not to you"), "{err}");
    assert!(
        String::from_utf8_lossy(&opened.stderr).contains("open to other users"),
        "{opened:?}"
    );
    assert!(env.herdr(&["pane", "list"]).status.success());
}

#[test]
fn commands_inside_a_pane_target_that_pane_and_session() {
    let env = started("inside");
    let pane = String::from_utf8_lossy(&env.herdr(&["pane", "split"]).stdout)
        .trim()
        .to_string();
    let script = format!(
        "{} pane rename from-inside; {} pane get --json > {}/inside.json",
        support::BIN,
        support::BIN,
        env.home().display()
    );
    assert!(env
        .herdr(&["pane", "submit", "--pane", &pane, &script])
        .status
        .success());
    let file = env.home().join("inside.json");
    wait_until("the command in the pane ran", || {
        std::fs::read_to_string(&file)
            .map(|s| s.ends_with("}\n"))
            .unwrap_or(false)
    });
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["id"], pane.as_str());
    assert_eq!(v["label"], "from-inside");
}

#[test]
fn a_wait_sent_before_the_peer_stops_writing_is_still_answered() {
    let env = started("halfclose");
    let (mut s, mut r) = api_conn(&env);
    s.write_all(b"{\"id\":1,\"method\":\"pane.wait\",\"params\":{\"output\":\"half-closed-0k\",\"timeout_ms\":20000}}\n")
        .unwrap();
    // Like `printf … | nc -N`: the request, then end of input.
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(env
        .herdr(&["pane", "send", "echo half-closed-$((1-1))k\r"])
        .status
        .success());
    let mut answer = String::new();
    r.read_line(&mut answer).unwrap();
    assert!(
        answer.contains("\"id\":1") && answer.contains("half-closed-0k"),
        "{answer}"
    );
}

/// The server's resident memory, from /proc.
fn server_rss_kib(env: &Env) -> u64 {
    proc_status(status(env)["pid"].as_i64().unwrap() as i32, "VmRSS")
}

/// The slowest of `n` pings on a connection of its own, in milliseconds.
fn slowest_ping_ms(env: &Env, n: usize) -> u128 {
    let (mut s, mut r) = api_conn(env);
    (0..n)
        .map(|i| {
            let t = std::time::Instant::now();
            let v = request(
                &mut s,
                &mut r,
                &format!("{{\"id\":{i},\"method\":\"ping\"}}"),
            );
            assert_eq!(v["result"]["pong"], true, "{v}");
            t.elapsed().as_millis()
        })
        .max()
        .unwrap_or(0)
}

/// Sends `count` waits on the focused pane that never match, then a ping whose answer says
/// the server has taken them all (replies come in order; the waits do not answer).
fn pile_waits(s: &mut UnixStream, r: &mut BufReader<UnixStream>, count: usize) {
    let mut batch = Vec::new();
    for i in 0..count {
        // Half of them may match across lines (the slower kind to re-check).
        let pattern = match i % 2 {
            0 => format!("never-{i}-seen"),
            _ => format!("never\\\\s{i}-seen"),
        };
        batch.extend_from_slice(
            format!(
                "{{\"id\":{i},\"method\":\"pane.wait\",\"params\":{{\"output\":\"{pattern}\"}}}}\n"
            )
            .as_bytes(),
        );
    }
    s.write_all(&batch).unwrap();
    let v = request(s, r, r#"{"id":"after","method":"ping"}"#);
    assert_eq!(v["result"]["pong"], true, "a wait was refused: {v}");
}

#[test]
fn waits_are_bounded_in_all_and_output_keeps_the_server_responsive() {
    let env = started("manywaits");
    // A full window of history, then a line every 10 ms: every wait is looked at again
    // and again.
    support::submit(
        &env,
        "p1",
        "seq 1 3000; while :; do echo tick $RANDOM; sleep 0.01; done",
    );
    support::wait_output(&env, "p1", "^tick");
    let mut held = Vec::new();
    for _ in 0..4 {
        let (mut s, mut r) = api_conn(&env);
        pile_waits(&mut s, &mut r, 256);
        held.push((s, r));
    }
    // The server's budget of waits is spent: a fifth connection is told so.
    let (mut s, mut r) = api_conn(&env);
    let v = request(
        &mut s,
        &mut r,
        r#"{"id":1,"method":"pane.wait","params":{"output":"never"}}"#,
    );
    assert_eq!(v["error"]["code"], "too_many_waits", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1024") && message.contains("all connections"),
        "{message}"
    );
    // While the pane prints, an honest client is still answered promptly (the bound is
    // generous: it catches stalls of seconds, not a slow machine).
    let slowest = slowest_ping_ms(&env, 50);
    eprintln!("slowest ping with 1024 waits on a printing pane: {slowest} ms");
    assert!(slowest < 2000, "a ping took {slowest} ms");
    // A peer that leaves without its answers gives its waits back.
    // (The server hears of it a moment later: ask until it has.)
    drop(held.pop());
    let deadline = std::time::Instant::now() + support::WAIT;
    let v = loop {
        let v = request(
            &mut s,
            &mut r,
            r#"{"id":2,"method":"pane.wait","params":{"output":"never","timeout_ms":300}}"#,
        );
        if v["error"]["code"] != "too_many_waits" || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(v["error"]["code"], "timeout", "{v}");
    // And a wait on new output still hears of it.
    let v = request(
        &mut s,
        &mut r,
        r#"{"id":3,"method":"pane.wait","params":{"output":"^tick [0-9]+$","timeout_ms":20000}}"#,
    );
    assert!(v["result"]["matched"].as_str().is_some(), "{v}");
}

/// Whether a socket has something to read (or was closed by the server).
fn readable(s: &UnixStream) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(s.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn connections_that_never_say_hello_cost_a_bounded_number_of_threads() {
    let env = started("nohello");
    let pid = env.server_pid().unwrap();
    // A client that said its hello before the flood is served throughout.
    let (mut honest, mut honest_r) = api_conn(&env);
    let (threads, fds) = (proc_status(pid, "Threads"), open_fds(pid));
    let mut silent = Vec::new();
    let (mut most_threads, mut most_fds) = (0, 0);
    for i in 0..3000 {
        silent.push(UnixStream::connect(env.socket()).unwrap());
        if i % 100 == 0 {
            most_threads = most_threads.max(proc_status(pid, "Threads"));
            most_fds = most_fds.max(open_fds(pid));
            let v = request(&mut honest, &mut honest_r, r#"{"id":1,"method":"ping"}"#);
            assert_eq!(v["result"]["pong"], true);
        }
    }
    let t = std::time::Instant::now();
    let v = request(&mut honest, &mut honest_r, r#"{"id":2,"method":"ping"}"#);
    assert_eq!(v["result"]["pong"], true);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "ping took {:?}",
        t.elapsed()
    );
    // At most 64 wait for their hello (a thread and a descriptor each), plus a little
    // slack for the server's own comings and goings.
    eprintln!("server threads {threads} → {most_threads}, descriptors {fds} → {most_fds}");
    assert!(most_threads <= threads + 64 + 8, "{most_threads} threads");
    assert!(most_fds <= fds + 64 + 8, "{most_fds} descriptors");
    // The ones beyond were told why, at once; so is the CLI (the silent ones hold their
    // places for their whole 5 s).
    let out = env.herdr(&["server", "status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("waiting for their hello (64)"),
        "{err}"
    );
    let last = silent.pop().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut line = String::new();
    BufReader::new(last).read_line(&mut line).unwrap();
    assert!(
        line.contains("\"ok\":false")
            && line.contains("too many connections waiting for their hello (64)"),
        "{line}"
    );
    // The silent ones run out of time, and new connections are welcome again.
    wait_until("the hello places are free again", || {
        env.herdr(&["server", "status"]).status.success()
    });
    drop(silent);
    wait_until("the threads are gone", || {
        proc_status(pid, "Threads") <= threads + 2
    });
}

/// A session whose pane is about 980 columns wide (a client of 1000 is attached) and keeps
/// `lines` lines of coloured history, each almost as wide as the pane (a colour change,
/// a long cursor move, two letters): a few bytes for the program to print, a kilobyte
/// each for `pane.read --ansi` to send.
fn wide_history(name: &str, lines: usize) -> (Env, support::Term) {
    let env = Env::new(name);
    std::fs::write(env.config_file(), "scrollback_lines = 200000\n").unwrap();
    assert!(env.herdr(&["server", "start"]).status.success());
    let client = env.client(1000, 50);
    wait_until("the client is attached", || status(&env)["clients"] == 1);
    support::prompt(&env, "p1");
    support::submit(
        &env,
        "p1",
        &format!("yes $'\\e[31m\\e[960Cx\\e[32my' | head -n {lines}; echo DONE-$((1+1))"),
    );
    // Printing that much history takes a debug build several seconds on a busy machine.
    support::ok(env.herdr(&[
        "pane",
        "wait",
        "--pane",
        "p1",
        "--output",
        "^DONE-2",
        "--timeout",
        "120",
    ]));
    (env, client)
}

#[test]
fn a_reply_over_the_limit_says_to_ask_for_fewer_lines_and_the_connection_carries_on() {
    let (env, _client) = wide_history("toolarge", 75_000);
    // Through the CLI: a clear error and a failure exit, not a dropped connection.
    let out = env.herdr(&["pane", "read", "--lines", "100000", "--ansi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("too_large") && err.contains("64 MiB") && err.contains("--lines"),
        "{err}"
    );
    // On one connection: the error, then the next request is answered as usual, and
    // the number of lines the message suggests does fit.
    let (mut s, mut r) = api_conn(&env);
    let v = request(
        &mut s,
        &mut r,
        r#"{"id":1,"method":"pane.read","params":{"lines":100000,"ansi":true}}"#,
    );
    assert_eq!(v["error"]["code"], "too_large", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    eprintln!("pane.read of 100000 lines: {message}");
    let fit: u64 = message
        .split("--lines ")
        .nth(1)
        .and_then(|rest| rest.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no line count in {message:?}"));
    let v = request(&mut s, &mut r, r#"{"id":2,"method":"ping"}"#);
    assert_eq!(v["result"]["pong"], true, "{v}");
    let v = request(
        &mut s,
        &mut r,
        &format!(r#"{{"id":3,"method":"pane.read","params":{{"lines":{fit},"ansi":true}}}}"#),
    );
    assert!(
        v["result"]["text"]
            .as_str()
            .is_some_and(|t| t.len() > 1 << 20),
        "{}",
        v["error"]
    );
}

#[test]
fn peers_that_never_read_big_replies_keep_the_server_memory_bounded() {
    // About 8 MB of --ansi text per reply: 20 peers asking twice and never reading would
    // make 320 MB of queued replies. (Small enough that building one keeps a ping waiting
    // behind it well under the bound below, even in a debug build.)
    let (env, _client) = wide_history("bigreplies", 8_000);
    let pid = env.server_pid().unwrap();
    let (mut honest, mut honest_r) = api_conn(&env);
    let rss_before = proc_status(pid, "VmRSS");
    let mut lazy = Vec::new();
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let (mut s, r) = api_conn(&env);
        let read =
            b"{\"id\":1,\"method\":\"pane.read\",\"params\":{\"lines\":8000,\"ansi\":true}}\n";
        s.write_all(&read.repeat(2)).unwrap();
        // Pings while the server works on it, until it has answered (or dropped) this peer.
        loop {
            let t = std::time::Instant::now();
            let v = request(&mut honest, &mut honest_r, r#"{"id":1,"method":"ping"}"#);
            assert_eq!(v["result"]["pong"], true);
            slowest = slowest.max(t.elapsed());
            if readable(&s) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        lazy.push((s, r));
    }
    eprintln!("slowest ping meanwhile: {slowest:?}");
    assert!(slowest < Duration::from_secs(2), "a ping took {slowest:?}");
    let rss = proc_status(pid, "VmRSS");
    eprintln!("server RSS {} MiB → {} MiB", rss_before >> 10, rss >> 10);
    // At most 64 MiB queued in all (and 64 KiB per connection beyond), plus the reply
    // being built (a few copies of one).
    assert!(
        rss < rss_before + 160 * 1024,
        "server RSS {rss_before} → {rss} KiB"
    );
    // The peers beyond the budget were dropped once stalled, to make room (or, while none
    // had stalled long enough yet, told why their reply was refused). At most 8 of their
    // 8 MB replies fit 64 MiB.
    let (mut told, mut dropped) = (0, 0);
    for (s, mut r) in lazy {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        for _ in 0..2 {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(_) if line.ends_with('\n') => {
                    if line.contains("\"busy\"") && line.contains("64 MiB") {
                        told += 1;
                    }
                }
                _ => {
                    dropped += 1;
                    break;
                }
            }
        }
    }
    eprintln!("lazy peers: {told} replies refused as busy, {dropped} peers dropped");
    assert!(told + dropped >= 12, "the budget was not enforced");
    // A big reply for an honest client gets through once the stalled peers are dropped.
    let v = request(
        &mut honest,
        &mut honest_r,
        r#"{"id":3,"method":"pane.read","params":{"lines":8000,"ansi":true}}"#,
    );
    assert!(v["result"]["text"].as_str().is_some(), "{}", v["error"]);
}

#[test]
fn open_api_connections_are_bounded_and_the_next_one_is_told_why() {
    let env = started("api-conns");
    let mut open = Vec::new();
    for _ in 0..512 {
        open.push(api_conn(&env));
    }
    let mut s = UnixStream::connect(env.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(HELLO).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(
        line.contains("\"ok\":false") && line.contains("too many API connections open (512)"),
        "{line}"
    );
    // One closes: there is room again.
    drop(open.pop());
    wait_until("a place is free", || {
        let mut s = UnixStream::connect(env.socket()).unwrap();
        s.write_all(HELLO).unwrap();
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
        line.contains("\"ok\":true")
    });
    // (A place is given back once the server has seen the connection end.)
    drop(open);
    wait_until("the server serves", || {
        env.herdr(&["server", "status"]).status.success()
    });
}
