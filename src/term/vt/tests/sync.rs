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

/// Frames of random drawing (texts, clears, scrolls, inserted and deleted rows, the
/// alternate screen, resets), often the same frame again, fed in random pieces, with
/// resizes and plain output between: while a frame is in progress the finished one is
/// shown exactly (the copy taken at its start may copy only the rows changed since the
/// copy before), and after it every row that differs from what was shown before counts
/// as changed.
#[test]
fn copies_made_from_the_last_copy_always_show_the_finished_frame() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut rows, mut cols) = (6usize, 12usize);
    let mut e = Emulator::new(rows as u16, cols as u16, 50);
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let shown_rows = |e: &Emulator| -> Vec<crate::term::vt::Row> {
        let s = e.shown();
        (0..s.size().0).filter_map(|r| s.row(r).cloned()).collect()
    };
    for round in 0..4000 {
        match next(12) {
            0 => {
                (rows, cols) = (3 + next(6), 5 + next(12));
                e.resize(rows as u16, cols as u16);
            }
            1 => {
                // Scrolls (rows move without being drawn).
                let _ = e.process(format!("\x1b[{rows};1Hplain\r\n").as_bytes());
            }
            _ => {}
        }
        let frame = if !frames.is_empty() && next(2) == 0 {
            frames[next(frames.len())].clone()
        } else {
            let mut f = b"\x1b[?2026h".to_vec();
            for _ in 0..1 + next(6) {
                let op = match next(10) {
                    0 => "\x1b[2J".to_string(),
                    1 => format!("\x1b[{};1H\n\n", rows),
                    2 => ["\x1b[?1049h", "\x1b[?1049l"][next(2)].to_string(),
                    3 => "\x1b[2K".to_string(),
                    4 => format!("\x1b[{}{}", 1 + next(2), ["L", "M"][next(2)]),
                    5 => format!("\x1b[2;{}r\x1b[{};1H\n\x1b[r", rows, rows),
                    6 if next(20) == 0 => "\x1bc".to_string(),
                    _ => {
                        let text: String = (0..next(cols + 4))
                            .map(|i| char::from(b'a' + ((i + round) % 26) as u8))
                            .collect();
                        format!(
                            "\x1b[{};{}H\x1b[3{}m{text}",
                            1 + next(rows),
                            1 + next(cols),
                            next(8)
                        )
                    }
                };
                f.extend_from_slice(op.as_bytes());
            }
            f.extend_from_slice(b"\x1b[?2026l");
            frames.push(f.clone());
            if frames.len() > 4 {
                frames.remove(next(frames.len()));
            }
            f
        };
        let before = e.shown().contents_formatted();
        let before_rows = shown_rows(&e);
        let drawn = e.display_seq();
        let mut rest = &frame[..];
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(1 + next(rest.len()));
            let _ = e.process(piece);
            rest = tail;
            if e.synchronized() && !tail.is_empty() {
                assert_eq!(
                    e.shown().contents_formatted(),
                    before,
                    "round {round}: the finished frame while {:?} is drawn",
                    String::from_utf8_lossy(&frame)
                );
            }
        }
        let after_rows = shown_rows(&e);
        if let Some(changed) = e.rows_changed_since(drawn) {
            for (i, (a, b)) in before_rows.iter().zip(&after_rows).enumerate() {
                let same = a.same_cells(b) && a.wrapped() == b.wrapped();
                assert!(
                    same || changed.contains(&(i as u16)),
                    "round {round}: row {i} differs but is not marked changed"
                );
            }
        }
    }
}
