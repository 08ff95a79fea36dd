//! A remote pane whose screen stands still but for one ticking line, and what the client
//! drew to bring it back after its link dropped: the rows that changed, never a full
//! repaint (the server numbers its frames and the client says which one it has).
#![allow(dead_code)]

use std::time::Duration;

use super::sshd::{Sshd, HOST};
use super::{contains, find, Env, Term, PROMPT};

/// A client attached to `sshd`'s host shows the ticker; `drop` ends or cuts its link;
/// the client comes back drawing only what changed, and its screen is then the one a
/// full repaint shows. Prints the bytes of its first frame beside a full repaint's.
pub fn back_after(env: &Env, sshd: &Sshd, drop: impl FnOnce(), what: &str) {
    let config = sshd.config().display().to_string();
    let mut t = env.client_with_args(100, 30, &["--remote", HOST, "--yes", "--", "-F", &config]);
    t.wait_text(PROMPT);
    start_ticker(&mut t);
    let mark = t.raw_output().len();
    let past = tick(&t) + 2;
    drop();
    let resumed = redrawn_after_drop(&t, mark, past);
    let full = assert_same_as_full_repaint(&mut t, 100, 30);
    eprintln!(
        "FIGURE {what}: {} bytes drawn (a full repaint: {full})",
        resumed.len()
    );
}

/// Starts the ticker (a screenful of still lines, then `tick N` rewritten in place) and
/// waits for it to run.
pub fn start_ticker(t: &mut Term) {
    t.line(
        "yes 'the quick brown fox jumps over the lazy dog' | head -22; \
         i=0; while sleep 0.2; do printf '\\rtick %d ' $((i=i+1)); done",
    );
    t.wait_text("tick 3");
}

/// The highest tick on the screen.
pub fn tick(t: &Term) -> u64 {
    super::highest_after(&t.contents(), "tick ")
}

/// Waits until the screen is live again after a drop (the note gone, the tick past
/// `past`), then returns the first frame the client drew after its last reconnect note —
/// and checks that it, and what followed, was no full repaint.
pub fn redrawn_after_drop(t: &Term, mark: usize, past: u64) -> Vec<u8> {
    t.wait("the reconnect note gone and the ticker live", |t| {
        !t.contents().contains("reconnecting to") && tick(t) > past
    });
    let raw = t.raw_output();
    let since = &raw[mark..];
    let mut at = 0;
    while let Some(i) = find(&since[at..], b"reconnecting to") {
        at += i + 1;
    }
    assert!(at > 0, "no reconnect note was drawn");
    let after = &since[at..];
    assert!(
        !contains(after, b"\x1b[2J"),
        "the screen was repainted from scratch after the reconnect: {:?}",
        String::from_utf8_lossy(after)
    );
    // (Frames are drawn under synchronized output: the first ends with its end.)
    let end = b"\x1b[?2026l";
    let first = find(after, end).map_or(after.len(), |i| i + end.len());
    after[..first].to_vec()
}

/// Stops the ticker, and checks the screen the client put together from the rows it was
/// sent is the one a full repaint shows (forced by a resize to one column more and back).
/// Returns the bytes of that full repaint, to compare with.
pub fn assert_same_as_full_repaint(t: &mut Term, cols: u16, rows: u16) -> usize {
    t.send(b"\x03");
    // (The command line shows a prompt already: the new one is the one after the `^C`.)
    t.wait("the prompt after ^C", |t| {
        let c = t.contents();
        c.find("^C").is_some_and(|i| c[i..].contains(PROMPT))
    });
    // (Long enough for the tab to be named after the shell again: names are looked up
    // within 1.3 s of the last output.)
    wait_still(t, Duration::from_millis(1500));
    let pieced = without_clock(t.rows());
    t.resize(cols + 1, rows);
    let mark = t.raw_output().len();
    t.wait("the wider frame", |t| {
        contains(&t.raw_output()[mark..], b"\x1b[2J")
    });
    let mark = t.raw_output().len();
    t.resize(cols, rows);
    t.wait("the full frame at the old size", |t| {
        contains(&t.raw_output()[mark..], b"\x1b[2J")
    });
    wait_still(t, Duration::from_millis(300));
    assert_eq!(
        without_clock(t.rows()),
        pieced,
        "the screen pieced from changed rows is not the full repaint's"
    );
    t.raw_output().len() - mark
}

/// Waits until the screen stays the same for `still`.
fn wait_still(t: &Term, still: Duration) {
    t.wait("a still screen", |t| {
        let a = t.contents();
        std::thread::sleep(still);
        a == t.contents()
    });
}

/// Rows with the status line's clock (HH:MM) blanked: its minute may turn meanwhile.
fn without_clock(rows: Vec<String>) -> Vec<String> {
    rows.into_iter()
        .map(|row| {
            let mut c: Vec<char> = row.chars().collect();
            for i in 0..c.len().saturating_sub(4) {
                let digit = |j: usize| c[i + j].is_ascii_digit();
                if digit(0) && digit(1) && c[i + 2] == ':' && digit(3) && digit(4) {
                    c[i..i + 5].copy_from_slice(&['-', '-', ':', '-', '-']);
                }
            }
            c.into_iter().collect()
        })
        .collect()
}
