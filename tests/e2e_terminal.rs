//! End-to-end: what a pane does as a modern terminal, seen from the client — a grapheme
//! cluster takes its two cells and no more; a frame drawn inside synchronized output
//! never reaches the client half drawn, and one that never ends is shown all the same.

mod support;

use support::{Env, Term, PROMPT};

/// The client's size in these tests; its panes start at column 24 (the sidebar) and row
/// 1 (the tab bar), and leave the last row to the status line: 76 × 28.
const COLS: u16 = 100;
const ROWS: u16 = 30;
const PANE_X: u16 = 24;
const PANE_ROWS: usize = 28;

fn ready(env: &Env) -> Term {
    let t = env.client(COLS, ROWS);
    t.wait_text(PROMPT);
    t
}

#[test]
fn a_zwj_emoji_occupies_two_cells_with_what_follows_right_after_it() {
    let env = Env::new("cluster");
    let mut t = ready(&env);
    // Typed as escapes, so the command line does not hold the emoji itself.
    t.line(r"printf '<<\U0001F468\u200d\U0001F469\u200d\U0001F467>>\n'");
    let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
    t.wait("the printed line", |t| {
        t.rows()
            .iter()
            .any(|r| r.contains("<<") && !r.contains("printf"))
    });
    // The harness's screen (vt100) draws each emoji of the sequence on its own, so look
    // at where the markers are: the closing one two columns after the opening one's end.
    let (row, open, close) = t.with_screen(|s| {
        (0..ROWS)
            .find_map(|row| {
                let cells: Vec<String> = (0..COLS)
                    .map(|c| {
                        s.cell(row, c)
                            .map(|c| c.contents().to_string())
                            .unwrap_or_default()
                    })
                    .collect();
                let open = cells.windows(2).position(|w| w[0] == "<" && w[1] == "<")?;
                let close = cells.windows(2).position(|w| w[0] == ">" && w[1] == ">")?;
                (cells.iter().all(|c| c != "f")).then_some((row, open, close))
            })
            .expect("a row with both markers")
    });
    assert_eq!(close, open + 4, "row {row}: << at {open}, >> at {close}");
    // The client was sent the whole cluster at once, then told where what follows goes.
    let raw = String::from_utf8_lossy(&t.raw_output()).into_owned();
    let at = format!("{family}\x1b[{};{}H>>", row + 1, close + 1);
    assert!(raw.contains(&at), "{at:?} in the client's bytes");
    // And the pane keeps it as one character of text.
    let read = support::ok(env.herdr(&["pane", "read"]));
    assert!(read.contains(&format!("<<{family}>>")), "{read}");
}

/// The pane's rows on a screen.
fn pane_rows(s: &vt100::Screen) -> Vec<String> {
    s.rows(PANE_X, COLS - PANE_X)
        .skip(1)
        .take(PANE_ROWS)
        .collect()
}

/// What the client showed after each frame it was sent (herdr brackets every frame of
/// more than one stretch of a row in a synchronized update of the client's own
/// terminal; one stretch is sent as it is, and shows with the next): the pane's rows
/// each time.
fn every_frame(raw: &[u8]) -> Vec<Vec<String>> {
    const END: &[u8] = b"\x1b[?2026l";
    let mut p = vt100::Parser::new(
        std::num::NonZeroU16::new(ROWS).unwrap(),
        std::num::NonZeroU16::new(COLS).unwrap(),
        0,
    );
    let mut frames = Vec::new();
    let mut at = 0;
    while let Some(n) = raw[at..].windows(END.len()).position(|w| w == END) {
        let end = at + n + END.len();
        p.process(&raw[at..end]);
        frames.push(pane_rows(p.screen()));
        at = end;
    }
    frames
}

/// The program: frames that clear the screen, then write `frame N row R` on every row
/// with a pause after each, all inside synchronized output; then "done".
const PAINTER: &str = r#"
import sys, time
rows = int(sys.argv[1])
out = sys.stdout
for n in range(1, 7):
    out.write("\x1b[?2026h\x1b[2J\x1b[H")
    out.flush()
    for r in range(rows):
        out.write("\x1b[%d;1Hframe %d row %d" % (r + 1, n, r))
        out.flush()
        time.sleep(0.003)
    out.write("\x1b[?2026l")
    out.flush()
    time.sleep(0.04)
out.write("\x1b[?2026h\x1b[2J\x1b[Hdone\r\n\x1b[?2026l")
out.flush()
"#;

#[test]
fn a_frame_drawn_inside_synchronized_output_never_reaches_the_client_half_drawn() {
    let env = Env::new("syncout");
    let mut t = ready(&env);
    std::fs::write(env.home().join("painter.py"), PAINTER).unwrap();
    t.line(&format!("python3 painter.py {PANE_ROWS}"));
    t.wait("the program's end", |t| {
        t.pane_lines().iter().any(|l| l == "done")
    });
    let frames = every_frame(&t.raw_output());
    let mut whole = std::collections::BTreeSet::new();
    for (i, rows) in frames.iter().enumerate() {
        // Each row that shows a frame shows which one.
        let shown: Vec<(usize, &str)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.contains("frame "))
            .map(|(k, r)| (k, r.trim_end()))
            .collect();
        if shown.is_empty() {
            continue;
        }
        let n = shown[0].1.split(' ').nth(1).unwrap_or_default().to_string();
        let complete = shown.len() == PANE_ROWS
            && shown
                .iter()
                .all(|(k, r)| *r == format!("frame {n} row {k}").as_str());
        assert!(
            complete,
            "frame {i} the client got shows part of a frame:\n{}",
            rows.join("\n")
        );
        whole.insert(n);
    }
    assert!(whole.len() >= 3, "whole frames seen: {whole:?}");
}

#[test]
fn a_frame_that_never_ends_its_synchronized_output_is_shown_after_a_while() {
    let env = Env::new("syncstuck");
    let mut t = ready(&env);
    t.line(r"printf '\e[?2026h\e[2J\e[Hstuck frame\n'; sleep 30");
    t.wait("the frame shown although never ended", |t| {
        t.has_line("stuck frame")
    });
}
