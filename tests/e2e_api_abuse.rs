//! End-to-end: bad input and hostile peers on the API socket, and floods of input from
//! clients. Each gets an error and/or its connection closed, or is taken in bounded
//! steps; the server and every other client carry on.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::Value;
use support::{wait_until, Env};

const HELLO: &[u8] = b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"t\",\"role\":\"api\"}\n";

fn started(name: &str) -> Env {
    let env = Env::new(name);
    assert!(env.herdr(&["server", "start"]).status.success());
    env
}

fn api_conn(env: &Env) -> (UnixStream, BufReader<UnixStream>) {
    let mut s = UnixStream::connect(env.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(HELLO).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
    (s, r)
}

fn request(s: &mut UnixStream, r: &mut BufReader<UnixStream>, line: &str) -> Value {
    s.write_all(line.as_bytes()).unwrap();
    s.write_all(b"\n").unwrap();
    let mut answer = String::new();
    r.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

fn status(env: &Env) -> Value {
    serde_json::from_slice(&env.herdr(&["server", "status", "--json"]).stdout).unwrap()
}

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
    let pid = status(&env)["pid"].as_i64().unwrap();
    let rss_kib: u64 = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap())
        })
        .unwrap();
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
    let pid = status(env)["pid"].as_i64().unwrap();
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap())
        })
        .unwrap()
}

#[test]
fn input_for_a_pane_that_does_not_read_is_bounded_and_refused_as_busy() {
    let env = started("sendbusy");
    let (mut s, mut r) = api_conn(&env);
    // A program that reads nothing until told to, then keeps all it gets (raw mode: no
    // line editing in between).
    let home = env.home();
    let split = format!(
        r#"{{"id":1,"method":"pane.split","params":{{"cwd":{:?},"command":["sh","-c","stty raw -echo; touch ready; while [ ! -e go ]; do sleep 0.1; done; exec cat > got"]}}}}"#,
        home.display().to_string()
    );
    let pane = request(&mut s, &mut r, &split)["result"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_until("the program is ready", || home.join("ready").exists());
    // 1 MB sends, each of its own letter: a few MiB are taken, then `busy` and nothing
    // more, however many follow.
    let mut accepted = 0u8;
    let mut refused = 0;
    for i in 0..20u8 {
        let text = String::from(char::from(b'a' + i)).repeat(1_000_000);
        let req = serde_json::json!({"id": 10 + i, "method": "pane.send",
            "params": {"pane": pane, "text": text}});
        let v = request(&mut s, &mut r, &req.to_string());
        if v["result"]["sent"] == 1_000_000 {
            assert_eq!(refused, 0, "accepted after a refusal: {i}");
            accepted += 1;
        } else {
            assert_eq!(v["error"]["code"], "busy", "{}", &v.to_string()[..200]);
            let msg = v["error"]["message"].as_str().unwrap();
            assert!(msg.contains("not reading its input"), "{msg}");
            refused += 1;
        }
    }
    assert!((3..=5).contains(&accepted), "{accepted} MB accepted");
    // Bounded: the server itself needs well under this, the waiting input 4 MiB.
    let rss = server_rss_kib(&env);
    eprintln!("server RSS with {accepted} MB waiting: {rss} KiB");
    assert!(rss < 64 * 1024, "server RSS {rss} KiB");
    // Everything accepted arrives whole and in order, nothing of what was refused.
    std::fs::write(home.join("go"), "").unwrap();
    wait_until("room again once the program reads", || {
        env.herdr(&["pane", "send", "--pane", &pane, "<end>"])
            .status
            .success()
    });
    let mut want: Vec<u8> = (0..accepted)
        .flat_map(|i| vec![b'a' + i; 1_000_000])
        .collect();
    want.extend_from_slice(b"<end>");
    let got = home.join("got");
    wait_until("the accepted input arrived", || {
        std::fs::read(&got).is_ok_and(|b| b.ends_with(b"<end>"))
    });
    assert!(
        std::fs::read(&got).unwrap() == want,
        "input cut or reordered"
    );
}

/// The server's peak resident memory so far, from /proc.
fn server_peak_kib(env: &Env) -> u64 {
    let pid = status(env)["pid"].as_i64().unwrap();
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmHWM:")
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap())
        })
        .unwrap()
}

/// `len` bytes of text as a paste carries it: lines of letters and spaces, some UTF-8,
/// and (`with_prefix`) the prefix key C-b, which inside a bracketed paste is text too.
fn paste_text(len: usize, with_prefix: bool) -> Vec<u8> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::with_capacity(len + 4);
    while out.len() < len {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        match (seed >> 33) % 64 {
            0 => out.push(b'\n'),
            1 => out.extend_from_slice("é".as_bytes()),
            2 if with_prefix => out.push(0x02),
            2..=12 => out.push(b' '),
            n => out.push(b'a' + (n % 26) as u8),
        }
    }
    out.truncate(len);
    out
}

/// A pane (focused) whose program keeps exactly `len` bytes of input in `got`, raw.
fn keeping_pane(env: &Env, len: usize) -> std::path::PathBuf {
    let script = format!("stty raw -echo; touch ready; exec head -c {len} > got");
    let home = env.home();
    assert!(env
        .herdr(&[
            "pane",
            "split",
            "--cwd",
            &home.display().to_string(),
            "--",
            "sh",
            "-c",
            &script
        ])
        .status
        .success());
    wait_until("the program is ready", || home.join("ready").exists());
    home.join("got")
}

/// Pings the server every 50 ms until stopped; the slowest answer.
fn pinger(
    env: &Env,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<Duration>,
) {
    let (mut s, mut r) = api_conn(env);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut worst = Duration::ZERO;
        while !stopped.load(std::sync::atomic::Ordering::Acquire) {
            let t = std::time::Instant::now();
            let v = request(&mut s, &mut r, r#"{"id":1,"method":"ping"}"#);
            assert_eq!(v["result"]["pong"], true);
            worst = worst.max(t.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        worst
    });
    (stop, thread)
}

#[test]
fn a_big_paste_arrives_whole_while_the_server_keeps_serving() {
    let env = Env::new("bigpaste");
    let mut t = env.client(120, 36);
    t.wait_text(support::PROMPT);
    // Bracketed, as the client's terminal sends a paste; and plain, as a terminal that
    // does not bracket pastes sends it (or typing that arrives all at once).
    for bracketed in [true, false] {
        let text = paste_text(4 << 20, bracketed);
        let got = keeping_pane(&env, text.len());
        std::fs::remove_file(env.home().join("ready")).unwrap();
        let (stop, pings) = pinger(&env);
        let start = std::time::Instant::now();
        if bracketed {
            t.send(&[&b"\x1b[200~"[..], &text, b"\x1b[201~"].concat());
        } else {
            t.send(&text);
        }
        wait_until("the whole paste arrived", || {
            std::fs::metadata(&got).is_ok_and(|m| m.len() == text.len() as u64)
        });
        let took = start.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Release);
        let worst = pings.join().unwrap();
        eprintln!("4 MiB paste (bracketed: {bracketed}): {took:?}, slowest ping {worst:?}");
        assert!(
            std::fs::read(&got).unwrap() == text,
            "the paste was cut or reordered"
        );
        assert!(worst < Duration::from_secs(2), "a ping took {worst:?}");
        // Taken a character at a time it took 13 s here; in runs, under half a second.
        assert!(took < Duration::from_secs(6), "the paste took {took:?}");
        std::fs::remove_file(&got).unwrap();
    }
}

#[test]
fn a_huge_input_frame_costs_bounded_memory_and_arrives_whole() {
    let env = started("bigframe");
    let text = paste_text(8 << 20, false);
    let got = keeping_pane(&env, text.len());
    // A client that keeps its terminal sends what is typed in Input frames; one of 8 MiB
    // of plain text (no paste markers: each character could be a key).
    let mut c = UnixStream::connect(env.socket()).unwrap();
    c.write_all(b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"t\",\"role\":\"client\",\"size\":[100,30]}\n")
        .unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
    // Frames for it are read and thrown away.
    std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
    let before = server_peak_kib(&env);
    let (stop, pings) = pinger(&env);
    let mut frame = Vec::with_capacity(text.len() + 32);
    frame.extend_from_slice(&(text.len() as u32 + 1).to_be_bytes());
    frame.push(1);
    frame.extend_from_slice(&text);
    let start = std::time::Instant::now();
    c.write_all(&frame).unwrap();
    wait_until("the whole frame arrived", || {
        std::fs::metadata(&got).is_ok_and(|m| m.len() == text.len() as u64)
    });
    let took = start.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Release);
    let worst = pings.join().unwrap();
    let peak = server_peak_kib(&env);
    eprintln!("8 MiB frame: {took:?}, slowest ping {worst:?}, peak RSS {before} -> {peak} KiB");
    assert!(
        std::fs::read(&got).unwrap() == text,
        "the input was cut or reordered"
    );
    assert!(worst < Duration::from_secs(2), "a ping took {worst:?}");
    // The frame itself (8 MiB), a copy as it is decoded, the pane's queue: not hundreds.
    assert!(peak < before + 64 * 1024, "peak RSS {before} -> {peak} KiB");
}
