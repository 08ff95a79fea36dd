//! End-to-end: a program that prints whatever a hostile or broken program might — an
//! unterminated OSC of hundreds of megabytes, as much DCS, a storm of repeat counts,
//! random bytes and escapes — next to a pane being typed in. The server must live, keep
//! its memory bounded, and keep answering keystrokes and API requests while it lasts.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::api::pinger;
use support::{ok, wait_until, Env, PROMPT};

/// The hostile program: each part in turn, then a marker.
const HOSTILE: &str = r##"
import random, sys
out = sys.stdout.buffer
MiB = 1 << 20
def flood(head, unit, total):
    out.write(head)
    chunk = unit * (MiB // len(unit))
    for _ in range(total // len(chunk)):
        out.write(chunk)
flood(b"\x1b]0;", b"a", 200 * MiB)           # an OSC that never ends by itself
flood(b"\x1bP1;2|", b"#", 200 * MiB)         # its ESC ends the OSC; DCS data
out.write(b"\x1b\\")
flood(b"", b"a\x1b[65535b", 8 * MiB)         # REP with the largest count
rng = random.Random(18)
pieces = [b"\x1b[", b"\x1b]", b"\x1bP", b"\x1b_", b"\x1b", b";", b"65535", b"b",
          b"m", b"H", b"J", b"@", b"L", b"S", b"\x07", b"\x9c", b"\x18", b"\x1b\\",
          b"\x1b#8", b"\r\n"]
for _ in range(50):
    parts, size = [], 0
    while size < MiB:
        p = rng.choice(pieces) if rng.random() < 0.5 else rng.randbytes(rng.randrange(1, 64))
        parts.append(p)
        size += len(p)
    out.write(b"".join(parts))
out.write(b"\x18\x1b\\\x1bc\r\nHOSTILE-DONE\r\n")
out.flush()
"##;

#[test]
fn hostile_output_leaves_the_server_bounded_and_responsive() {
    let env = Env::new("hostile");
    std::fs::write(env.config_file(), "scrollback_lines = 1000\n").unwrap();
    std::fs::write(env.home().join("hostile.py"), HOSTILE).unwrap();
    let mut t = env.client(160, 40);
    t.wait_text(PROMPT);
    let pid = env.server_pid().expect("server pid");
    let flooder = ok(env.herdr(&["pane", "list", "--json"]));
    let flooder: serde_json::Value = serde_json::from_str(&flooder).unwrap();
    let flooder = flooder[0]["id"].as_str().unwrap().to_string();
    // The pane typed in, beside the one that floods; it has the focus.
    let file = env.home().join("typed.txt");
    let cat = format!("cat > {}", file.display());
    let typed_in = ok(env.herdr(&[
        "pane",
        "split",
        "--direction",
        "right",
        "--",
        "sh",
        "-c",
        &cat,
    ]));
    wait_until("cat in front", || {
        env.herdr(&["pane", "get", "--pane", &typed_in, "--json"])
            .stdout
            .windows(3)
            .any(|w| w == b"cat")
    });
    let before = support::proc_status(pid, "VmRSS");

    let stop = Arc::new(AtomicBool::new(false));
    let pings = pinger(&env, stop.clone());
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                peak.fetch_max(support::proc_status(pid, "VmRSS"), Ordering::AcqRel);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    ok(env.herdr(&["pane", "submit", "--pane", &flooder, "python3 hostile.py"]));
    let done = {
        let stop = stop.clone();
        let mut cmd = std::process::Command::new(support::BIN);
        cmd.env_clear().envs(env.vars()).args([
            "--session",
            &env.session,
            "pane",
            "wait",
            "--pane",
            &flooder,
            "--output",
            "^HOSTILE-DONE",
            "--timeout",
            "600",
        ]);
        std::thread::spawn(move || {
            let out = cmd.output().expect("pane wait");
            stop.store(true, Ordering::Release);
            out
        })
    };

    // Type while the flood lasts: each keystroke's echo must come back.
    let mut line = String::new();
    let mut lines = Vec::new();
    let mut worst_echo = Duration::ZERO;
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let mut k = 0;
    while !stop.load(Ordering::Acquire) {
        let c = letters[k % letters.len()] as char;
        k += 1;
        line.push(c);
        let start = Instant::now();
        t.send(&[c as u8]);
        while !t.contents().contains(&line) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the echo of {line:?} did not come within 5 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        worst_echo = worst_echo.max(start.elapsed());
        if line.len() == 40 {
            t.send(b"\r");
            lines.push(std::mem::take(&mut line));
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    let done = done.join().unwrap();
    assert!(done.status.success(), "{done:?}");
    let worst_ping = pings.join().unwrap().as_millis();
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Acquire);
    eprintln!(
        "hostile output: {k} keystrokes, worst echo {} ms, worst ping {worst_ping} ms, \
         RSS {} MiB before, {} MiB at most",
        worst_echo.as_millis(),
        before / 1024,
        peak / 1024
    );
    // Bounded: the flooded pane's history (1,000 lines) and screens, not the flood.
    assert!(
        peak < before + 64 * 1024,
        "RSS went from {before} KiB to {peak} KiB"
    );
    assert!(worst_ping < 2000, "a ping took {worst_ping} ms");
    assert!(
        worst_echo < Duration::from_secs(2),
        "an echo took {worst_echo:?}"
    );
    assert!(support::pid_alive(pid), "the server lives");

    // Nothing typed was lost.
    if !line.is_empty() {
        t.send(b"\r");
        lines.push(line);
    }
    t.send(b"\x04");
    let expected = lines.join("\n") + "\n";
    wait_until("cat wrote everything typed", || {
        std::fs::read_to_string(&file).is_ok_and(|got| got == expected)
    });
}
