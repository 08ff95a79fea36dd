//! The emulator as its callers use it: queries, bells, title and clipboard, history and
//! scrolling back, resizes, recovery from output that broke it.

use super::*;

/// A 20-column emulator of `rows` rows keeping `history` lines, that printed `count`
/// lines "`prefix`0", "`prefix`1", ….
fn printed_lines(rows: u16, history: usize, prefix: &str, count: usize) -> Emulator {
    let mut e = Emulator::new(rows, 20, history);
    for i in 0..count {
        e.process(format!("{prefix}{i}\r\n").as_bytes());
    }
    e
}

#[test]
fn answers_cursor_position_and_device_attributes() {
    let mut e = Emulator::new(24, 80, 100);
    let fx = e.process(b"ab\x1b[6n");
    assert_eq!(fx.responses, b"\x1b[1;3R");
    let fx = e.process(b"\x1b[c");
    assert_eq!(fx.responses, b"\x1b[?62;22c");
}

#[test]
fn bells_and_desktop_notifications_are_counted_and_progress_reports_are_not() {
    let mut e = Emulator::new(24, 80, 100);
    assert!(e.process(b"done\x07").bell);
    let fx = e.process(b"\x1b]9;Claude needs you\x07");
    assert!(fx.notification && !fx.bell);
    e.process(b"\x1b]777;notify;codex;turn complete\x1b\\");
    assert_eq!(e.bells(), 3);
    // ConEmu's progress (OSC 9;4) and a title ended by BEL are neither.
    e.process(b"\x1b]9;4;1;50\x07\x1b]2;title\x07");
    assert_eq!(e.bells(), 3);
}

#[test]
fn remembers_title_and_forwards_clipboard() {
    let mut e = Emulator::new(24, 80, 100);
    let fx = e.process(b"\x1b]2;my title\x07\x1b]52;c;aGk=\x07");
    assert!(fx.title_changed);
    assert_eq!(e.title(), "my title");
    assert_eq!(fx.clipboard, vec![b"\x1b]52;c;aGk=\x07".to_vec()]);
}

#[test]
fn last_lines_spans_history_and_screen() {
    let mut e = printed_lines(5, 100, "line ", 12);
    e.set_scrollback(3);
    assert_eq!(e.last_lines(3, false), ["line 9", "line 10", "line 11"]);
    let all = e.last_lines(100, false);
    assert_eq!(all.first().map(String::as_str), Some("line 0"));
    assert_eq!(all.len(), 12);
    assert_eq!(e.scrollback(), 3, "view position restored");
    e.process(b"\x1b[31mred\x1b[0m");
    let last = e.last_lines(1, true);
    assert!(
        last[0].contains("\x1b[0;31m") && last[0].contains("red"),
        "{last:?}"
    );
}

#[test]
fn lines_counted_back_from_the_bottom_row() {
    let e = printed_lines(3, 100, "l", 6);
    // Screen rows: l4, l5, (empty); history: l0..l3.
    assert_eq!(e.lines_back(2, 1), ["l4", "l5"]);
    assert_eq!(e.lines_back(1, 4), ["l2", "l3", "l4", "l5"]);
    assert_eq!(e.lines_back(6, 6), ["l0"]);
    assert!(e.lines_back(8, 8).is_empty());
    assert!(e.lines_back(50, 40).is_empty());
}

#[test]
fn the_scrolled_back_screen_goes_once_the_view_is_live_again() {
    let mut e = printed_lines(3, 100, "l", 10);
    e.set_scrollback(4);
    assert_eq!(e.display().contents(), "l4\nl5\nl6");
    assert!(e.view.is_some());
    e.set_scrollback(0);
    assert!(
        e.view.is_none(),
        "kept after scrolling back to the live view"
    );
    assert_eq!(e.display().contents(), "l8\nl9");
}

#[test]
fn the_scrolled_back_view_shows_lines_kept_while_the_pane_was_wider() {
    let mut e = Emulator::new(3, 20, 100);
    e.process(b"0123456789abcdefghij\r\nshort\r\nx\r\ny\r\nz");
    e.resize(3, 8);
    e.set_scrollback(2);
    let view = e.display();
    // The wide line wraps at the new width, the next line after it, nothing shifted.
    assert_eq!(view.size().1, 8);
    let rows: Vec<String> = view.rows(0, 8).take(3).collect();
    assert_eq!(rows, ["01234567", "89abcdef", "ghij"]);
    e.set_scrollback(1);
    let rows: Vec<String> = e.display().rows(0, 8).take(3).collect();
    assert_eq!(rows, ["short", "x", "y"]);
}

#[test]
fn no_line_is_lost_when_one_slice_scrolls_many_rows() {
    let mut e = Emulator::new(3, 20, 20_000);
    // 6000 numbered lines in one slice, then one sequence scrolling the screen.
    let mut out = String::new();
    for i in 0..6000 {
        out.push_str(&format!("{i}\r\n"));
    }
    e.process(out.as_bytes());
    e.process(b"\x1b[9000S");
    let lines = e.lines(0, e.history_len(), false);
    let numbers: Vec<usize> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(
        numbers.len(),
        6000,
        "every printed line is still in history"
    );
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
}

#[test]
fn output_that_broke_vt100_leaves_a_working_emulator() {
    // A heart widened by VS16 at the right margin of the bottom row, then overwritten
    // (vt100 0.18, the emulator herdr used before its own, panicked on this).
    let mut e = Emulator::new(3, 4, 100);
    e.process(b"top\r\n");
    e.process("\x1b[3;1Habc\u{2764}\u{fe0f}".as_bytes());
    e.process(b"\x1b[2;4Hx");
    e.process(b"\x1b[1;1Hok");
    assert_eq!(e.screen().size(), (3, 4));
    let first = e.screen().rows(0, 4).next().unwrap_or_default();
    assert!(first.starts_with("ok"), "{first:?}");
    // Byte by byte too (a fresh emulator each time the rebuilt one is fed).
    let mut e = Emulator::new(3, 4, 100);
    for b in "\x1b[3;1Habc\u{2764}\u{fe0f}\x1b[2;4Hx\x1b[Hok".as_bytes() {
        e.process(std::slice::from_ref(b));
    }
    assert!(e.screen().contents().contains("ok"));
}

/// A 5x20 emulator that printed ten numbered lines.
fn scrolled() -> Emulator {
    printed_lines(5, 100, "line", 10)
}

#[test]
fn a_screen_that_grows_keeps_its_rows_at_the_top() {
    let mut e = scrolled();
    e.process(b"$ ");
    e.resize(3, 20);
    e.resize(8, 20);
    let rows: Vec<String> = e.screen().rows(0, 20).take(3).collect();
    assert_eq!(rows, ["line8", "line9", "$ "]);
    assert_eq!(e.screen().cursor_position(), (2, 2));
    // The same with a full-screen program showing when the size changes.
    let mut e = scrolled();
    e.process(b"\x1b[?1049hfull");
    e.resize(3, 20);
    e.resize(8, 20);
    e.process(b"\x1b[?1049l");
    let first = e.screen().rows(0, 20).next().unwrap_or_default();
    assert!(first.starts_with("line"), "{first:?}");
}

#[test]
fn scrollback_is_bounded() {
    let mut e = printed_lines(5, 50, "line ", 500);
    assert_eq!(e.history_len(), 50);
    e.set_scrollback(1000);
    assert_eq!(e.scrollback(), 50);
}
