//! Synchronized output (mode 2026): while a program holds it on, the frame it last
//! finished is what is shown; the mode ends with `l`, RIS or a timeout.

use std::time::{Duration, Instant};

use crate::term::vt::{Terminal, SYNC_TIMEOUT};
use crate::term::Emulator;

fn frozen_text(t: &Terminal) -> Option<String> {
    t.frozen().map(|f| f.screen.contents())
}

#[test]
fn the_finished_frame_is_shown_until_the_mode_ends() {
    let mut t = Terminal::new(3, 10);
    t.process(b"frame 1", 1);
    assert!(t.frozen().is_none());
    t.process(b"\x1b[?2026h\x1b[2J\x1b[Hfra", 2);
    assert_eq!(frozen_text(&t).as_deref(), Some("frame 1"));
    assert_eq!(t.screen().contents(), "fra", "the live screen goes on");
    t.process(b"me 2", 3);
    assert_eq!(frozen_text(&t).as_deref(), Some("frame 1"));
    t.process(b"\x1b[?2026l", 4);
    assert!(t.frozen().is_none());
    assert_eq!(t.screen().contents(), "frame 2");
    // Turned on twice, it is still the first frame; RIS ends it.
    t.process(b"\x1b[?2026h\x1b[?2026hx", 5);
    assert_eq!(frozen_text(&t).as_deref(), Some("frame 2"));
    t.process(b"\x1bc", 6);
    assert!(t.frozen().is_none() && !t.synchronized());
}

#[test]
fn the_alternate_screen_is_copied_when_it_is_shown() {
    let mut t = Terminal::new(3, 10);
    t.process(b"shell\x1b[?1049hfull", 1);
    t.process(b"\x1b[?2026h\x1b[?1049lback", 2);
    assert_eq!(frozen_text(&t).as_deref(), Some("full"));
    let f = t.frozen().unwrap();
    assert_eq!(f.screen.cursor_position(), (0, 4));
}

#[test]
fn a_frame_that_is_late_is_shown_as_it_stands() {
    let mut t = Terminal::new(3, 10);
    t.process(b"old\x1b[?2026hnew", 1);
    let since = t.frozen().unwrap().since;
    t.settle_sync(since + SYNC_TIMEOUT - Duration::from_millis(1));
    assert!(t.frozen().is_some(), "not yet");
    t.settle_sync(since + SYNC_TIMEOUT);
    assert!(t.frozen().is_none(), "given up");
    // Still on, as the program set it; turning it on again starts a new frame.
    assert!(t.synchronized());
    t.process(b"\x1b[?2026$p", 2);
    assert_eq!(t.take_effects().responses, b"\x1b[?2026;1$y");
    t.process(b"\x1b[?2026l\x1b[?2026$p", 3);
    assert_eq!(t.take_effects().responses, b"\x1b[?2026;2$y");
    t.process(b"\x1b[?2026h!", 4);
    assert_eq!(frozen_text(&t).as_deref(), Some("oldnew"));
}

#[test]
fn a_flood_of_frames_costs_one_copy_per_call() {
    // Within one call a second frame keeps the copy made at the first (an older finished
    // frame, never a half-drawn one); the next call copies afresh.
    let mut t = Terminal::new(3, 10);
    t.process(b"x", 1);
    t.process(b"\x1b[?2026hA\x1b[?2026l\x1b[?2026hB", 2);
    assert_eq!(frozen_text(&t).as_deref(), Some("x"));
    t.process(b"\x1b[?2026l\x1b[?2026hC", 3);
    assert_eq!(frozen_text(&t).as_deref(), Some("xAB"));
    // Pairs without end in one piece: the copy is made once.
    let mut t = Terminal::new(50, 200);
    let flood = b"\x1b[?2026hy\x1b[?2026l".repeat(64 << 10);
    let start = Instant::now();
    t.process(&flood, 1);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?} for 64k frames",
        start.elapsed()
    );
}

#[test]
fn rows_changed_since_hold_for_the_frame_shown_and_the_live_one() {
    let mut e = Emulator::new(3, 10, 100);
    e.process(b"row0\r\nrow1");
    let drawn = e.display_seq();
    e.process(b"\x1b[?2026h\x1b[2;1Hxx\x1b[3;1Hyy");
    let frozen = e.display_seq();
    assert_ne!(frozen, drawn);
    assert_eq!(
        e.rows_changed_since(drawn),
        Some(vec![]),
        "the frame shown is as drawn"
    );
    assert_eq!(e.shown().contents(), "row0\nrow1");
    e.process(b"z\x1b[?2026l");
    assert_ne!(e.display_seq(), frozen);
    assert_eq!(e.rows_changed_since(frozen), Some(vec![1, 2]));
    assert_eq!(e.shown().contents(), "row0\nxxw1\nyyz");
}

/// An agent's repaint: the screen cleared and drawn again whole inside the mode, one row
/// different. Only that row counts as changed (the others are not formatted, compared
/// or sent again); a frame shown half drawn after its timeout counts as all changed.
#[test]
fn a_frame_drawn_again_whole_changes_only_the_rows_that_differ() {
    let frame = |status: &str| {
        format!("\x1b[?2026h\x1b[H\x1b[2J\x1b[31mone\r\n\x1b[32mtwo\x1b[0m\r\n{status}\x1b[?2026l")
    };
    let mut e = Emulator::new(3, 10, 100);
    e.process(frame("frame 1").as_bytes());
    let drawn = e.display_seq();
    e.process(frame("frame 1").as_bytes());
    assert_eq!(e.rows_changed_since(drawn), Some(vec![]));
    let drawn = e.display_seq();
    // Over several calls, as a slow program's frame arrives.
    e.process(b"\x1b[?2026h\x1b[H\x1b[2J\x1b[31mone\r\n");
    e.process(b"\x1b[32mtwo\x1b[0m\r\nframe 2\x1b[?2026l");
    assert_eq!(e.rows_changed_since(drawn), Some(vec![2]));
    assert_eq!(e.shown().contents(), "one\ntwo\nframe 2");
    // A row that moved is changed, even with the same text elsewhere.
    let drawn = e.display_seq();
    e.process(
        b"\x1b[?2026h\x1b[H\x1b[2J\x1b[32mtwo\x1b[0m\r\n\x1b[31mone\r\n\x1b[0mframe 2\x1b[?2026l",
    );
    assert_eq!(e.rows_changed_since(drawn), Some(vec![0, 1]));
    // Late: the half-drawn frame was shown, so everything may have changed.
    let drawn = e.display_seq();
    e.process(b"\x1b[?2026h\x1b[H\x1b[2J");
    let since = e.sync_deadline().unwrap() - SYNC_TIMEOUT;
    e.settle_sync(since + SYNC_TIMEOUT);
    let late = e.display_seq();
    assert_eq!(e.rows_changed_since(drawn), None);
    e.process(b"\x1b[32mtwo\x1b[0m\r\n\x1b[31mone\r\n\x1b[0mframe 2\x1b[?2026l");
    assert_eq!(e.rows_changed_since(late), Some(vec![0, 1, 2]));
}

#[test]
fn a_resize_keeps_the_frame_shown() {
    let mut e = Emulator::new(3, 10, 100);
    e.process(b"kept\x1b[?2026h\x1b[2Jhalf");
    let before = e.display_seq();
    e.resize(4, 8);
    assert_eq!(e.shown().size(), (4, 8));
    assert_eq!(e.shown().contents(), "kept");
    assert_ne!(e.display_seq(), before);
    assert_eq!(
        e.rows_changed_since(before),
        None,
        "all of it may have changed"
    );
    e.process(b"\x1b[?2026l");
    assert_eq!(e.shown().contents(), "    half");
    assert!(e.sync_deadline().is_none());
}
