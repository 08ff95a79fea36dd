//! End-to-end: a pane's lines reflow when its width changes — split, zoom, unzoom, close —
//! as the user sees them in the real client, and as `pane read` returns them. tmux, fed
//! the same output at the same sizes, is the reference for the joined lines.

mod support;

use std::process::Command;

use support::{ok, Env, Term, PROMPT};

/// 190 capital letters, A to Z over and over (the command that prints them has none).
fn long_line() -> String {
    (0..190u8).map(|i| char::from(b'A' + i % 26)).collect()
}

const PRINT: &str = "python3 -c \"print(''.join(chr(65 + i % 26) for i in range(190)))\"";

/// The runs of five or more capitals on the screen, top to bottom, joined: the line as
/// drawn, whatever rows it takes.
fn shown(t: &Term) -> String {
    let mut out = String::new();
    for row in t.rows() {
        let row = row.replace(PROMPT, "");
        let mut run = String::new();
        for c in row.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_uppercase() {
                run.push(c);
            } else {
                if run.len() >= 5 {
                    out.push_str(&run);
                }
                run.clear();
            }
        }
    }
    out
}

/// The longest row of capitals on the screen (how wide the pane draws the line).
fn widest(t: &Term) -> usize {
    t.rows()
        .iter()
        .map(|r| {
            r.replace(PROMPT, "")
                .chars()
                .filter(char::is_ascii_uppercase)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_long_line_survives_narrowing_and_widening() {
    let env = Env::new("reflow");
    let mut t = env.client(120, 36);
    t.wait_text(PROMPT);
    t.line(PRINT);
    let line = long_line();
    t.wait("the line", |t| shown(t) == line);
    // Zoomed and unzoomed, split and closed: the line is whole at every width.
    // (A split focuses the new pane: the line's pane is focused again to zoom it, and the
    // other one to close it.)
    let steps: [(&[&[u8]], &str); 4] = [
        (&[b"%"], "split: the left pane is about half as wide"),
        (&[b"h", b"z"], "zoomed: as wide as at first"),
        (&[b"z"], "unzoomed: half again"),
        (&[b"l", b"x"], "the split closed: as wide as at first"),
    ];
    let full = widest(&t);
    assert!(full >= 90, "{}", t.contents());
    for (keys, what) in steps {
        for key in keys {
            t.prefix(key);
            // Closing a pane whose program runs asks first.
            if *key == b"x" {
                t.wait_text("(y/n)");
                t.send(b"y");
            }
        }
        let narrow = what.contains("half");
        t.wait(what, |t| {
            let w = widest(t);
            shown(t) == line && if narrow { w < full * 2 / 3 } else { w == full }
        });
    }
    let read = ok(env.herdr(&["pane", "read", "--lines", "3"]));
    assert!(read.lines().any(|l| l == line), "pane read: {read:?}");
}

/// tmux 3.3a's lines for `output` printed at `cols`, then resized to each width in turn.
fn tmux_lines(dir: &std::path::Path, output: &[u8], cols: u16, widths: &[u16]) -> Vec<String> {
    let sock = dir.join("tmux.sock");
    let file = dir.join("out.bin");
    std::fs::write(&file, output).unwrap();
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&sock)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cmd = format!("cat '{}'; sleep 600", file.display());
    tmux(&[
        "new-session",
        "-d",
        "-x",
        &cols.to_string(),
        "-y",
        "12",
        "sh",
        "-c",
        &cmd,
    ]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let want = String::from_utf8_lossy(output)
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
    while !tmux(&["capture-pane", "-p", "-J", "-S", "-"]).contains(&want) {
        assert!(std::time::Instant::now() < deadline, "tmux never showed it");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for w in widths {
        tmux(&["resize-window", "-x", &w.to_string(), "-y", "12"]);
    }
    let text = tmux(&["capture-pane", "-p", "-J", "-S", "-"]);
    let _ = tmux(&["kill-server"]);
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[test]
fn the_lines_read_back_are_those_tmux_keeps() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: the comparison is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut output = String::new();
    for (i, n) in [3usize, 150, 40, 0, 230, 81, 7].iter().enumerate() {
        let word: String = (0..*n)
            .map(|k| char::from(b'a' + ((k + i) % 26) as u8))
            .collect();
        output.push_str(&format!("{i}:{word}\r\n"));
    }
    output.push_str("wide 漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字 end\r\nlast");
    let widths = [37u16, 120, 51, 80];
    let theirs = tmux_lines(dir.path(), output.as_bytes(), 80, &widths);
    let mut e = herdr::term::Emulator::new(12, 80, 1000);
    e.process(output.as_bytes());
    for w in widths {
        e.resize(12, w);
    }
    let ours = e.last_lines(usize::MAX, false);
    assert_eq!(ours, theirs);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Random lines of words (ASCII, coloured, blanks), printed at one width and resized
    /// through others: herdr reads back the lines tmux keeps. (Wide characters are left to
    /// the emulator's own reflow tests: when one does not fit in the last column at some
    /// width, tmux 3.3a's reflow ends the line there, herdr keeps it joined, as xterm does.)
    #[test]
    fn random_output_and_resizes_read_back_as_in_tmux(
        lines in proptest::collection::vec(
            proptest::collection::vec(
                proptest::prop_oneof![
                    "[a-z]{1,15}",
                    proptest::strategy::Just("\u{1b}[32mgreen\u{1b}[0m".to_string()),
                    proptest::strategy::Just(" ".to_string()),
                ],
                0..20,
            ),
            1..30,
        ),
        first in 10u16..100,
        widths in proptest::collection::vec(10u16..100, 1..4),
    ) {
        if Command::new("tmux").arg("-V").output().is_err() {
            return Ok(());
        }
        let dir = tempfile::tempdir().unwrap();
        let mut output = lines
            .iter()
            .map(|l| l.concat())
            .collect::<Vec<_>>()
            .join("\r\n");
        output.push_str("\r\nend-of-output");
        let theirs = tmux_lines(dir.path(), output.as_bytes(), first, &widths);
        let mut e = herdr::term::Emulator::new(12, first, 5000);
        e.process(output.as_bytes());
        for &w in &widths {
            e.resize(12, w);
        }
        let ours: Vec<String> = e
            .last_lines(usize::MAX, false)
            .into_iter()
            .map(|l| l.trim_end().to_string())
            .collect();
        proptest::prop_assert_eq!(ours, theirs);
    }
}
