//! Reflow on resize, checked on the emulator as a whole: screen, history, the lines read
//! back, the cursor, and an image taken in between.

use proptest::prelude::*;

use super::{Emulator, Image};

fn rows(e: &Emulator) -> Vec<String> {
    let cols = e.size().1;
    e.screen()
        .rows(0, cols)
        .map(|r| r.trim_end().to_string())
        .collect()
}

fn all_lines(e: &Emulator) -> Vec<String> {
    e.last_lines(usize::MAX, false)
}

/// 190 characters: "000000000011111111112…" (each digit ten times, then again).
fn long_line() -> String {
    (0..190)
        .map(|i| char::from(b'0' + (i / 10 % 10) as u8))
        .collect()
}

#[test]
fn a_long_line_survives_narrowing_and_widening() {
    let mut e = Emulator::new(10, 156, 1000);
    let line = long_line();
    e.process(format!("{line}\r\n$ ").as_bytes());
    assert_eq!(rows(&e)[..3], [&line[..156], &line[156..], "$"]);
    e.resize(10, 76);
    assert_eq!(
        rows(&e)[..4],
        [&line[..76], &line[76..152], &line[152..], "$"]
    );
    assert_eq!(all_lines(&e), [line.as_str(), "$"]);
    assert_eq!(
        e.screen().cursor_position(),
        (3, 2),
        "the cursor after the prompt"
    );
    e.resize(10, 156);
    assert_eq!(rows(&e)[..3], [&line[..156], &line[156..], "$"]);
    assert_eq!(e.screen().cursor_position(), (2, 2));
    // Narrower than the screen is tall: the top goes into history and comes back.
    e.resize(4, 10);
    assert_eq!(e.history_len(), 16);
    assert_eq!(all_lines(&e), [line.as_str(), "$"]);
    e.resize(10, 156);
    assert_eq!(rows(&e)[..3], [&line[..156], &line[156..], "$"]);
    assert_eq!(e.history_len(), 0);
    assert_eq!(e.screen().cursor_position(), (2, 2));
}

#[test]
fn the_cursor_stays_on_its_character() {
    let mut e = Emulator::new(5, 20, 100);
    // On the "d" of a wrapped line, and saved on the "b".
    e.process(b"first\r\n$ abcdefghijklmnopqrstuvwxyz\x1b[2;4H\x1b7\x1b[3;5H");
    let at = |e: &Emulator| {
        let (r, c) = e.screen().cursor_position();
        e.screen().cell(r, c).map(|c| c.contents().to_string())
    };
    assert_eq!(at(&e).as_deref(), Some("w"));
    for cols in [7, 13, 40, 20] {
        e.resize(5, cols);
        assert_eq!(at(&e).as_deref(), Some("w"), "at {cols} columns");
    }
    e.process(b"\x1b8");
    assert_eq!(at(&e).as_deref(), Some("b"), "the saved cursor too");
    // So narrow that the line pushes the cursor's row into history: the cursor stays on
    // screen, at its top.
    e.process(b"\x1b[3;5H");
    e.resize(5, 3);
    assert_eq!(at(&e).as_deref(), Some("w"));
}

#[test]
fn a_cursor_waiting_to_wrap_stays_after_its_character() {
    let mut e = Emulator::new(4, 10, 100);
    e.process(b"0123456789");
    assert_eq!(e.screen().cursor_position(), (0, 10));
    e.resize(4, 4);
    e.process(b"X");
    assert_eq!(all_lines(&e), ["0123456789X"]);
}

#[test]
fn hard_line_ends_stay_and_the_alternate_screen_is_not_reflowed() {
    let mut e = Emulator::new(6, 12, 100);
    e.process(b"short\r\nabcdefghijklmnop\r\n$ ");
    e.process(b"\x1b[?1049h\x1b[Hfull screen program text");
    e.resize(6, 6);
    // The program's screen is cut, not rewrapped (it redraws on its own).
    assert_eq!(rows(&e)[0], "full s");
    e.process(b"\x1b[?1049l");
    assert_eq!(rows(&e)[..5], ["short", "abcdef", "ghijkl", "mnop", "$"]);
    assert_eq!(e.screen().cursor_position(), (4, 2));
}

#[test]
fn wide_characters_wrap_and_join_back() {
    let mut e = Emulator::new(4, 7, 100);
    // Three wide characters: the fourth does not fit in the last column and wraps.
    e.process("漢字漢字x".as_bytes());
    assert!(e.screen().row_wrapped(0));
    assert_eq!(all_lines(&e), ["漢字漢字x"]);
    e.resize(4, 5);
    assert_eq!(all_lines(&e), ["漢字漢字x"]);
    e.resize(4, 20);
    assert_eq!(rows(&e)[0], "漢字漢字x");
}

#[test]
fn attributes_go_with_the_text() {
    let mut e = Emulator::new(4, 10, 100);
    e.process(b"ab\x1b[1;31mcdefghij\x1b[0mkl");
    e.resize(4, 5);
    let red = e.screen().cell(1, 0).map(|c| c.pen());
    assert_eq!(e.screen().cell(1, 0).map(|c| c.contents()), Some("f"));
    assert_eq!(red, e.screen().cell(0, 2).map(|c| c.pen()));
    assert!(red.is_some_and(|p| p.bold()));
    assert_eq!(
        e.screen().cell(2, 1).map(|c| c.pen()),
        Some(Default::default())
    );
}

#[test]
fn a_cleared_screen_does_not_take_back_history() {
    let mut e = Emulator::new(3, 10, 100);
    e.process(b"0123456789abcdefghijklmnopqrstuvwxyz");
    assert!(e.screen().continues_history());
    e.process(b"\x1b[H\x1b[2J$ ");
    e.resize(3, 20);
    assert_eq!(rows(&e), ["$", "", ""]);
}

#[test]
fn a_line_across_history_and_screen_keeps_together_through_an_image() {
    let mut e = Emulator::new(3, 10, 100);
    let line = long_line();
    e.process(&line.as_bytes()[..60]);
    assert!(e.history_len() > 0 && e.screen().continues_history());
    let image = e.image();
    let mut decoded = Image::decode(&image.encode()).expect("an image decodes");
    let mut copy = Emulator::from_image(&mut decoded, 100);
    assert_eq!(all_lines(&copy), [&line[..60]]);
    copy.resize(3, 30);
    assert_eq!(rows(&copy), [&line[..30], &line[30..60], ""]);
}

/// Text lines made of words (ASCII, wide, coloured), split into slices at random.
fn output() -> impl Strategy<Value = Vec<String>> {
    let word = prop_oneof![
        "[a-z]{1,12}",
        Just("漢字".to_string()),
        Just("\u{1b}[31mred\u{1b}[0m".to_string()),
        Just("🙂".to_string()),
        Just(" ".to_string()),
    ];
    proptest::collection::vec(proptest::collection::vec(word, 0..12), 1..12)
        .prop_map(|lines| lines.into_iter().map(|w| w.concat()).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn no_text_is_lost_whatever_the_resizes(
        lines in output(),
        sizes in proptest::collection::vec((2u16..8, 2u16..40), 1..6),
        cuts in proptest::collection::vec(1usize..60, 1..10),
    ) {
        let mut e = Emulator::new(5, 20, 10_000);
        let text = lines.join("\r\n");
        let mut sizes = sizes.into_iter().cycle();
        // (Never between a CR and its LF: a resize there puts the cursor at the start of
        // a row of the old layout, and the LF on whatever row follows in the new one, as in
        // tmux; a shell redraws its line after a resize anyway.)
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        for (now, _) in crate::term::vt::tests::slices(text.as_bytes(), &cuts) {
            match chunks.last_mut() {
                Some(last) if last.ends_with(b"\r") => last.extend_from_slice(now),
                _ => chunks.push(now.to_vec()),
            }
        }
        for now in &chunks {
            e.process(now);
            if let Some((r, c)) = sizes.next() {
                e.resize(r, c);
            }
        }
        let want: Vec<String> = lines
            .iter()
            .map(|l| super::history::plain(l))
            .collect();
        let mut got = all_lines(&e);
        // Blank lines at the end of the screen are not read back.
        let mut want = want;
        while want.last().is_some_and(String::is_empty) {
            want.pop();
        }
        while got.last().is_some_and(String::is_empty) {
            got.pop();
        }
        prop_assert_eq!(got, want);
    }
}

#[test]
fn clearing_from_home_ends_the_line_history_carries() {
    // Node's console.clear(): CUP home, then ED 0.
    let mut e = Emulator::new(3, 10, 100);
    e.process(b"0123456789abcdefghijklmnopqrstuvwxyz");
    assert!(e.screen().continues_history());
    e.process(b"\x1b[1;1H\x1b[0Jhello");
    assert!(!e.screen().continues_history());
    assert_eq!(all_lines(&e).last().map(String::as_str), Some("hello"));
    e.resize(3, 20);
    assert_eq!(rows(&e), ["hello", "", ""]);
}

#[test]
fn scrolling_back_reaches_the_start_of_a_line_taller_than_the_view() {
    let mut e = Emulator::new(5, 10, 10_000);
    // 200 rows of one line, then a prompt.
    let line: String = (0..2000)
        .map(|i| char::from(b'a' + (i / 10 % 26) as u8))
        .collect();
    e.process(format!("{line}\r\n$ ").as_bytes());
    let h = e.history_len();
    e.set_scrollback(h);
    let top: Vec<String> = e.display().rows(0, 10).take(2).collect();
    assert_eq!(top, [&line[..10], &line[10..20]]);
    e.set_scrollback(h - 100);
    let top: Vec<String> = e.display().rows(0, 10).take(1).collect();
    assert_eq!(top, [&line[1000..1010]]);
}

#[test]
fn on_the_alternate_screen_history_is_not_joined_to_the_programs_rows() {
    let mut e = Emulator::new(3, 10, 100);
    e.process(b"0123456789abcdefghijklmnopqrstuvwxyz");
    e.process(b"\x1b[?1049h\x1b[Hprogram");
    let lines = all_lines(&e);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("program"),
        "{lines:?}"
    );
    assert!(lines
        .iter()
        .all(|l| !l.ends_with("program") || l == "program"));
}

#[test]
fn a_wrapped_line_below_the_cursor_does_not_push_the_cursor_away() {
    let mut e = Emulator::new(10, 80, 100);
    let long: String = "x".repeat(80 * 9 - 1);
    e.process(format!("$ \r\n{long}\x1b[1;3H").as_bytes());
    e.resize(10, 40);
    assert_eq!(e.screen().cursor_position(), (0, 2));
    assert_eq!(rows(&e)[0], "$");
}

#[test]
fn a_cluster_that_widens_in_the_last_column_keeps_its_line_together() {
    let mut e = Emulator::new(4, 10, 100);
    e.process("123456789\u{26a0}\u{fe0f}x".as_bytes());
    assert!(e.screen().row_wrapped(0));
    assert_eq!(all_lines(&e), ["123456789\u{26a0}\u{fe0f}x"]);
    e.resize(4, 20);
    assert_eq!(rows(&e)[0], "123456789\u{26a0}\u{fe0f}x");
}

#[test]
fn a_one_row_screen_keeps_the_wrap_marks() {
    let mut e = Emulator::new(1, 5, 100);
    e.process(b"abcdefghijklm");
    assert_eq!(all_lines(&e), ["abcdefghijklm"]);
    e.resize(3, 20);
    assert_eq!(rows(&e)[0], "abcdefghijklm");
}

#[test]
fn reading_the_last_lines_of_a_huge_line_is_bounded() {
    let mut e = Emulator::new(5, 10, 200_000);
    e.process("y".repeat(1_000_000).as_bytes());
    let lines = e.last_lines(2, false);
    // At most n + 256 rows are read back: the line is cut at its start.
    assert_eq!(lines.len(), 1);
    assert!(lines[0].len() <= 10 * (2 + 256), "{}", lines[0].len());
}

#[test]
fn a_resize_during_synchronized_output_still_shows_the_program_after_the_timeout() {
    let mut e = Emulator::new(4, 10, 100);
    e.process(b"kept\x1b[?2026h\x1b[2Jhalf");
    e.resize(4, 20);
    let frozen = e.display_seq();
    let deadline = e.sync_deadline().expect("a frame in progress");
    e.settle_sync(deadline + std::time::Duration::from_millis(1));
    assert_ne!(e.display_seq(), frozen, "the live screen is shown");
    assert!(e.shown().contents().contains("half"));
}

#[test]
fn links_and_attributes_reflow_with_their_text() {
    let mut e = Emulator::new(4, 20, 100);
    e.process(b"see \x1b]8;;http://example.com/\x1b\\\x1b[4:3;58:2::255:0:0mthe docs here\x1b[0m\x1b]8;;\x1b\\ now");
    e.resize(4, 8);
    let at = |e: &Emulator, r: u16, c: u16| {
        let cell = *e.screen().cell(r, c).unwrap();
        (
            cell.contents().to_string(),
            e.screen()
                .link(cell.pen().link)
                .map(|l| l.uri().to_string()),
        )
    };
    // "see the " / "docs her" / "e now".
    assert_eq!(
        at(&e, 1, 0),
        ("d".into(), Some("http://example.com/".into()))
    );
    assert_eq!(at(&e, 2, 0).1.as_deref(), Some("http://example.com/"));
    assert_eq!(at(&e, 2, 3).1, None);
    let pen = e.screen().cell(1, 0).unwrap().pen();
    assert_eq!(pen.underline_style(), crate::term::vt::Underline::Curly);
    assert_eq!(pen.ul, crate::term::vt::Color::Rgb(255, 0, 0));
}
