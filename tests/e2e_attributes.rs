//! End-to-end: what agents draw beyond colours — strikethrough, a curly underline in a
//! colour of its own, overline, and an OSC 8 hyperlink — reaches the client's terminal,
//! `pane read --ansi`, the scrolled-back view, a live handoff and a restart with history.

mod support;

use support::{ok, prompt, submit, wait_output, Env, Term, PROMPT};

/// What the program prints: one run of text per attribute, then a link.
const DRAW: &str = "printf '\\033[9mstrike\\033[0m \\033[4:3;58:2::255:0:0mcurly\\033[0m \
\\033[53mover\\033[0m \\033]8;id=t1;http://example.com/herdr\\033\\\\link\\033]8;;\\033\\\\ \
end-of-attrs\\n'\n";

/// The line as herdr keeps it (history, `pane read --ansi`): SGR from the default pen
/// where the pen changes, the link opened and closed around its text.
const KEPT: &str = "\x1b[0;9mstrike\x1b[0m \x1b[0;4:3;58:2::255:0:0mcurly\x1b[0m \
\x1b[0;53mover\x1b[0m \x1b]8;id=t1;http://example.com/herdr\x1b\\link\x1b]8;;\x1b\\ end-of-attrs";

/// What a client's terminal must be sent to show the line (each run after the pen that
/// sets it; the link, then its end before what follows).
const SENT: [&str; 5] = [
    "9mstrike",
    "4:3;58:2::255:0:0mcurly",
    "53mover",
    "\x1b]8;id=t1;http://example.com/herdr\x1b\\link",
    "\x1b]8;;\x1b\\end-of-attrs",
];

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Asserts the client was sent every part of the line since byte `from` of its output.
fn assert_sent(t: &Term, from: usize, what: &str) {
    let raw = t.raw_output();
    let since = raw.get(from..).unwrap_or_default();
    for part in SENT {
        assert!(
            contains(since, part),
            "{what}: {part:?} not among the client's bytes: {:?}",
            String::from_utf8_lossy(since)
        );
    }
}

/// The lines of the last `n` that `pane read --ansi` returns that hold the drawn line.
fn kept_lines(env: &Env, n: &str) -> Vec<String> {
    ok(env.herdr(&["pane", "read", "--pane", "p1", "--ansi", "--lines", n]))
        .lines()
        .filter(|l| l.contains("end-of-attrs"))
        .map(str::to_string)
        .collect()
}

/// The visible screen as `pane read --ansi` returns it (the sequences that redraw it).
fn screen(env: &Env) -> String {
    ok(env.herdr(&["pane", "read", "--pane", "p1", "--ansi"]))
}

#[test]
fn attributes_and_links_reach_the_client_history_and_a_new_server() {
    let env = Env::new("attrs");
    std::fs::write(env.home().join("draw.sh"), DRAW).unwrap();
    let mut t = env.client(120, 30);
    t.wait_text(PROMPT);
    let from = t.raw_output().len();
    submit(&env, "p1", "sh draw.sh");
    wait_output(&env, "p1", "end-of-attrs$");
    t.wait_text("end-of-attrs");
    assert_sent(&t, from, "drawn");
    assert_eq!(kept_lines(&env, "30"), [KEPT]);
    assert!(screen(&env).contains(KEPT));

    // Scrolled into history: kept as it was, and drawn again when scrolled back to.
    submit(&env, "p1", "seq 1 60");
    wait_output(&env, "p1", "^60$");
    assert!(!screen(&env).contains("end-of-attrs"), "off the screen");
    assert_eq!(kept_lines(&env, "200"), [KEPT], "in history");
    // The client may still show the frame from before the line scrolled away.
    t.wait("the line off the client's screen", |t| {
        !t.contents().contains("end-of-attrs")
    });
    t.prefix(b"[");
    t.wait_text("SCROLL");
    let from = t.raw_output().len();
    while !t.contents().contains("end-of-attrs") {
        let before = t.raw_output().len();
        t.send(b"\x1b[5~");
        t.wait("the view scrolled", |t| t.raw_output().len() > before);
    }
    assert_sent(&t, from, "scrolled back");
    t.send(b"q");
    t.wait("live view again", |t| !t.contents().contains("SCROLL"));

    // Drawn once more, on screen, then a live handoff: the new server shows both.
    submit(&env, "p1", "clear; sh draw.sh");
    wait_output(&env, "p1", "end-of-attrs$");
    t.wait("only the new line", |t| t.count("end-of-attrs") == 1);
    let old = env.server_pid();
    let from = t.raw_output().len();
    let out = ok(env.herdr(&["server", "handoff"]));
    assert!(out.contains("now serving"), "{out}");
    assert_ne!(env.server_pid(), old);
    t.wait("the new server's frame", |t| {
        let raw = t.raw_output();
        SENT.iter().all(|p| contains(&raw[from..], p))
    });
    assert_sent(&t, from, "after the handoff");
    assert_eq!(kept_lines(&env, "200"), [KEPT, KEPT]);
    assert!(screen(&env).contains(KEPT));
}

#[test]
fn attributes_and_links_come_back_with_the_history_after_a_restart() {
    let env = Env::new("attrs-restart");
    std::fs::write(env.config_file(), "[persistence]\nhistory = true\n").unwrap();
    std::fs::write(env.home().join("draw.sh"), DRAW).unwrap();
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    submit(&env, "p1", "sh draw.sh");
    wait_output(&env, "p1", "end-of-attrs$");
    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    let text = ok(env.herdr(&["pane", "read", "--pane", "p1", "--lines", "100"]));
    assert!(text.contains("— restored "), "{text}");
    assert_eq!(kept_lines(&env, "100"), [KEPT]);
}
