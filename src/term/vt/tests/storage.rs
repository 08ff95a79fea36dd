//! What the emulator keeps: rows scrolled into history, the alternate screen made only
//! when shown, the rows reported changed, and the parser given back when idle.

use super::*;

#[test]
fn long_output_scrolls_into_history_in_order() {
    let mut t = Terminal::new(4, 10);
    let mut out = String::new();
    for i in 0..100 {
        out.push_str(&format!("\x1b[3{}mline {i}\x1b[0m\r\n", i % 8));
    }
    t.process(out.as_bytes(), 1);
    let lines: Vec<String> = t.dropped().iter().map(plain).collect();
    assert_eq!(lines.len(), 97);
    assert_eq!(lines[0], "line 0");
    assert_eq!(lines[96], "line 96");
    check(4, 10, out.as_bytes(), &[7, 100, 3], None);
}

#[test]
fn the_alternate_screen_has_rows_only_once_shown() {
    let mut t = Terminal::new(4, 10);
    t.process(b"$ ", 1);
    assert_eq!(t.screen().alternate.rows().count(), 0);
    // Resized before it is first shown: it comes at the size of the moment, blank.
    t.set_size(6, 12, 2);
    t.process(b"\x1b[?1049hvim", 3);
    assert_eq!(t.screen().alternate.rows().count(), 6);
    assert_eq!(t.screen().alternate.size(), (6, 12));
    // The same against vt100, the resize before and after it was shown (mode 47 keeps
    // what it showed across a switch).
    let out = b"ab\x1b[?1049hxy\x1b[?1049lcd\x1b[?47hz\x1b[?47lq\x1b[?47h";
    check(4, 10, out, &[3], Some((0, 6, 12)));
    check(4, 10, out, &[3], Some((3, 3, 8)));
}

#[test]
fn changed_rows_are_reported() {
    let mut t = Terminal::new(4, 10);
    t.process(b"a\r\nb", 1);
    assert_eq!(t.screen().rows_changed_since(0), Some(vec![0, 1]));
    t.process(b"\x1b[3;1Hc", 2);
    assert_eq!(t.screen().rows_changed_since(1), Some(vec![2]));
    t.process(b"\r\n\r\n", 3);
    assert_eq!(t.screen().rows_changed_since(2), None);
    assert_eq!(t.screen().rows_changed_since(3), Some(vec![]));
}

#[test]
fn an_idle_terminal_gives_its_parser_back_only_when_it_holds_nothing() {
    let mut t = Terminal::new(4, 20);
    assert!(t.parser.0.is_none(), "no parser before output needs one");
    t.process(b"\x1b[1;1H$ ", 1);
    assert!(t.parser.0.is_some());
    t.release_spare();
    assert!(t.parser.0.is_none());
    // Idle in the middle of a sequence (and of a character): the parser keeps what it
    // holds, and the sequence ends as it began.
    t.process(b"\x1b[3", 2);
    t.release_spare();
    t.process(b"1mred\x1b[0m \xc3", 3);
    t.release_spare();
    t.process(b"\xa9", 4);
    assert!(t.parser.0.is_some());
    let reference = {
        let mut r = Terminal::new(4, 20);
        r.process(b"\x1b[1;1H$ \x1b[31mred\x1b[0m \xc3\xa9", 1);
        r.screen().contents_formatted()
    };
    assert_eq!(t.screen().contents_formatted(), reference);
    assert_eq!(t.screen().cell(0, 2).unwrap().fgcolor(), Color::Idx(1));
}
