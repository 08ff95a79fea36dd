use super::*;
use crate::term::vt;
use ratatui::buffer::CellDiffOption;
use ratatui::style::{Modifier, Style};

mod random;

/// A frame colour as the emulators number it.
fn vt_color(c: Color) -> vt::Color {
    match (c, palette_index(c)) {
        (Color::Rgb(r, g, b), _) => vt::Color::Rgb(r, g, b),
        (_, Some(n)) => vt::Color::Idx(n),
        _ => vt::Color::Default,
    }
}

/// Asserts herdr's emulator shows what vt100 cannot tell: strikethrough, blink, hidden,
/// the underline's style and colour, overline, and each cell's hyperlink.
fn assert_shows_extras(screen: &vt::Screen, frame: &Frame, what: &str) {
    for y in 0..frame.size().1 {
        let mut x = 0;
        while x < frame.size().0 {
            let i = usize::from(y) * usize::from(frame.size().0) + usize::from(x);
            let (cell, extra) = (&frame.buffer[(x, y)], &frame.extras[i]);
            let (_, width) = printable(cell.symbol());
            let pen = Pen::of(cell, extra);
            let m = |flag| pen.modifier.contains(flag);
            let want = (
                [
                    m(Modifier::CROSSED_OUT),
                    m(Modifier::SLOW_BLINK),
                    m(Modifier::RAPID_BLINK),
                    m(Modifier::HIDDEN),
                    pen.overline,
                ],
                pen.underline,
                vt_color(pen.underline_color),
                pen.link.map(|l| (l.id().to_string(), l.uri().to_string())),
            );
            let got = screen.cell(y, x).expect("cell in range");
            let p = got.pen();
            let got = (
                [
                    p.strikethrough(),
                    p.blink(),
                    p.rapid_blink(),
                    p.hidden(),
                    p.overline(),
                ],
                p.underline_style(),
                p.ul,
                screen
                    .link(p.link)
                    .map(|l| (l.id().to_string(), l.uri().to_string())),
            );
            assert_eq!(got, want, "{what}: ({x},{y})");
            x += width;
        }
    }
}

/// Asserts the emulator shows exactly `frame`.
fn assert_shows(screen: &vt100::Screen, frame: &Frame, what: &str) {
    let vt_color = |c| match (c, palette_index(c)) {
        (Color::Rgb(r, g, b), _) => vt100::Color::Rgb(r, g, b),
        (_, Some(n)) => vt100::Color::Idx(n),
        _ => vt100::Color::Default,
    };
    for y in 0..frame.size().1 {
        let mut x = 0;
        while x < frame.size().0 {
            let cell = &frame.buffer[(x, y)];
            let (symbol, width) = printable(cell.symbol());
            let vt = screen.cell(y, x).expect("cell in range");
            let contents = Some(vt.contents()).filter(|c| !c.is_empty()).unwrap_or(" ");
            let m = |flag| cell.modifier.contains(flag);
            let want = (symbol, width == 2, vt_color(cell.fg), vt_color(cell.bg));
            let got = (contents, vt.is_wide(), vt.fgcolor(), vt.bgcolor());
            assert_eq!(got, want, "{what}: ({x},{y})");
            // vt100 knows one underline, SGR 4 (it skips 4:2 to 4:5; herdr's emulator is
            // the judge of those).
            let i = usize::from(y) * usize::from(frame.size().0) + usize::from(x);
            let styled = m(Modifier::UNDERLINED)
                && !matches!(
                    frame.extras[i].underline,
                    Underline::None | Underline::Single
                );
            let underline = if styled {
                vt.underline()
            } else {
                m(Modifier::UNDERLINED)
            };
            let want = (m(Modifier::ITALIC), underline, m(Modifier::REVERSED));
            assert_eq!((vt.italic(), vt.underline(), vt.inverse()), want, "{what}");
            // vt100 keeps one intensity, terminals two: compare the unambiguous cases.
            if !m(Modifier::BOLD | Modifier::DIM) {
                let want = (m(Modifier::BOLD), m(Modifier::DIM));
                assert_eq!((vt.bold(), vt.dim()), want, "{what}: ({x},{y})");
            }
            x += width;
        }
    }
    let cursor = frame.cursor.map(|(x, y)| (y, x));
    let got = (!screen.hide_cursor()).then(|| screen.cursor_position());
    assert_eq!(got, cursor, "{what}");
    let modes = (screen.application_cursor(), screen.application_keypad());
    assert_eq!(modes, (frame.application_cursor, frame.application_keypad));
}

fn parser(w: u16, h: u16) -> vt100::Parser {
    let nz = |n: u16| std::num::NonZeroU16::new(n).expect("non-zero size");
    vt100::Parser::new(nz(h), nz(w), 0)
}

/// Replays `encode_full(frames[0])` then each diff, checking the screen after every step
/// on vt100 and (for what vt100 does not know) on herdr's own emulator; returns the diff
/// sizes.
fn replay(frames: &[Frame]) -> Vec<usize> {
    let first = frames.first().expect("a frame");
    let (w, h) = first.size();
    let mut parser = parser(w, h);
    let mut ours = vt::Terminal::new(h.max(1), w.max(1));
    let full = encode_full(first);
    parser.process(&full);
    ours.process(&full, 1);
    assert_shows(parser.screen(), first, "full");
    assert_shows_extras(ours.screen(), first, "full");
    let mut sizes = Vec::new();
    for (i, pair) in frames.windows(2).enumerate() {
        let bytes = encode_diff(&pair[0], &pair[1]);
        parser.process(&bytes);
        ours.process(&bytes, i as u64 + 2);
        assert_shows(parser.screen(), &pair[1], &format!("diff {i}"));
        assert_shows_extras(ours.screen(), &pair[1], &format!("diff {i}"));
        sizes.push(bytes.len());
    }
    sizes
}

fn text(w: u16, h: u16, cursor: Option<(u16, u16)>, lines: &[&str]) -> Frame {
    let mut f = Frame::new(w, h);
    for (y, line) in (0..).zip(lines) {
        f.buffer.set_string(0, y, line, Style::default());
    }
    f.cursor = cursor;
    f
}

#[test]
fn identical_frames_encode_nothing() {
    let a = text(20, 4, None, &["hello", "漢字 🙂"]);
    assert!(encode_diff(&a, &a.clone()).is_empty());
    assert!(encode_diff(&Frame::new(3, 3), &Frame::new(3, 3)).is_empty());
    // A wide glyph's continuation cell is never printed, so changing it shows nothing.
    let mut b = a.clone();
    b.buffer[(1, 1)].set_symbol("x");
    assert!(encode_diff(&a, &b).is_empty());
}

#[test]
fn small_changes_cost_few_bytes() {
    let a = text(80, 24, None, &["the quick brown fox", "jumps over"]);
    let b = text(80, 24, None, &["the quick brown fox", "Jumps over"]);
    // One stretch of a row under a hidden cursor: nothing to tear, so no sync around it.
    assert_eq!(encode_diff(&a, &b), b"\x1b[2;1HJ");
    // Reprinting the unchanged "w" is shorter than moving over it.
    let c = text(80, 24, None, &["the quick brOwN fox", "Jumps over"]);
    assert_eq!(encode_diff(&b, &c), b"\x1b[1;13HOwN");
    // Two stretches: in one synchronized update.
    let c2 = text(80, 24, None, &["the quick brOwN fox", "Jumps over!"]);
    let mut c3 = c2.clone();
    c3.buffer[(0, 0)].set_symbol("T");
    assert_eq!(encode_diff(&c2, &c3), b"\x1b[1;1HT");
    let c4 = text(80, 24, None, &["The quick brOwN fox", "Jumps overs"]);
    assert_eq!(
        encode_diff(&c3, &c4),
        b"\x1b[2;11Hs",
        "the first row is the same"
    );
    let c5 = text(80, 24, None, &["The quick brOwN fox.", "Jumps overs."]);
    assert_eq!(
        encode_diff(&c4, &c5),
        b"\x1b[?2026h\x1b[1;20H.\x1b[2;12H.\x1b[?2026l"
    );
    // Typing at the prompt: the glyph lands at the cursor, which then is where it belongs:
    // sent as the program sent it.
    let d = text(80, 24, Some((3, 0)), &["$ l"]);
    let e = text(80, 24, Some((4, 0)), &["$ ls"]);
    assert_eq!(encode_diff(&d, &e), b"s");
    // A pure cursor move: the move alone.
    let f = text(80, 24, Some((0, 2)), &["$ ls"]);
    assert_eq!(encode_diff(&e, &f), b"\x1b[3;1H");
    // Drawn away from a visible cursor: hidden meanwhile, in one synchronized update.
    let g = text(80, 24, Some((0, 2)), &["$ ls", "", "", "status"]);
    assert_eq!(
        encode_diff(&f, &g),
        b"\x1b[?2026h\x1b[?25l\r\nstatus\x1b[3;1H\x1b[?25h\x1b[?2026l"
    );
    // Typed with a colour, and a mode change: the pen is reset after; a mode in sync.
    let mut h = g.clone();
    h.buffer.set_string(0, 2, "x", Style::new().fg(Color::Red));
    h.cursor = Some((1, 2));
    assert_eq!(encode_diff(&g, &h), b"\x1b[31mx\x1b[0m");
    let mut i = h.clone();
    i.application_cursor = true;
    i.buffer.set_string(1, 2, "y", Style::default());
    i.cursor = Some((2, 2));
    assert_eq!(
        encode_diff(&h, &i),
        b"\x1b[?2026h\x1b[?25l\x1b[?1hy\x1b[?25h\x1b[?2026l"
    );
    replay(&[a, b, c, c2, c3, c4, c5, d, e, f, g, h, i]);
}

#[test]
fn big_frame_then_one_char() {
    let mut a = Frame::new(200, 50);
    for y in 0..50 {
        let line: String = (0..200)
            .map(|x| char::from(b'a' + ((x + y) % 26) as u8))
            .collect();
        a.buffer.set_string(0, y, line, Style::default());
    }
    a.buffer
        .set_string(0, 0, "status", Style::new().bg(Color::Blue));
    let mut b = a.clone();
    b.buffer[(123, 37)].set_symbol("#");
    let mut c = b.clone();
    c.buffer[(7, 0)].set_bg(Color::Blue);
    let sizes = replay(&[a.clone(), b, c]);
    assert!(sizes.iter().all(|&n| n < 40), "{sizes:?}");
    assert!(encode_full(&a).len() < 10_300);
}

#[test]
fn colors() {
    let names = "black red green yellow blue magenta cyan gray darkgray lightred lightgreen \
                 lightyellow lightblue lightmagenta lightcyan white";
    let named: Vec<Color> = names.split(' ').map(|n| n.parse().expect("name")).collect();
    let mut a = Frame::new(20, 3);
    for (x, (&fg, &bg)) in (0..).zip(named.iter().zip(named.iter().rev())) {
        a.buffer[(x, 0)].set_symbol("n").set_fg(fg).set_bg(bg);
    }
    a.buffer
        .set_string(0, 1, "i", Style::new().fg(Color::Indexed(200)));
    a.buffer
        .set_string(1, 1, "i", Style::new().bg(Color::Indexed(3)));
    a.buffer
        .set_string(2, 1, "r", Style::new().fg(Color::Rgb(1, 2, 3)));
    a.buffer
        .set_string(3, 1, "r", Style::new().bg(Color::Rgb(250, 0, 9)));
    let full = String::from_utf8(encode_full(&a)).expect("utf8");
    let sgrs = [
        "[30;107m",
        "[90;47m",
        "[97;40m",
        "38;5;200",
        ";43m",
        "38;2;1;2;3",
        "48;2;250;0",
    ];
    for sgr in sgrs {
        assert!(full.contains(sgr), "{sgr} missing in {full:?}");
    }
    let mut b = a.clone();
    b.buffer[(0, 0)].set_fg(Color::Reset);
    b.buffer[(5, 0)].set_bg(Color::Reset);
    b.buffer[(2, 1)].set_fg(Color::Indexed(17));
    replay(&[a, b]);
}

#[test]
fn attributes_on_and_off() {
    let all = Modifier::BOLD | Modifier::ITALIC | Modifier::UNDERLINED | Modifier::REVERSED;
    let mut a = Frame::new(10, 2);
    a.buffer
        .set_string(0, 0, "abcdef", Style::new().add_modifier(all));
    a.buffer
        .set_string(0, 1, "ghij", Style::new().add_modifier(Modifier::DIM));
    let mut b = a.clone();
    b.buffer[(1, 0)].modifier.remove(Modifier::BOLD);
    b.buffer[(2, 0)].modifier.remove(Modifier::ITALIC);
    b.buffer[(3, 0)].modifier = Modifier::empty();
    b.buffer[(4, 0)].modifier = Modifier::BOLD | Modifier::DIM;
    b.buffer[(5, 0)].modifier = Modifier::CROSSED_OUT | Modifier::SLOW_BLINK;
    b.buffer[(1, 1)].modifier = Modifier::BOLD;
    b.buffer[(2, 1)].modifier = Modifier::empty();
    replay(&[a.clone(), b.clone(), a, b]);
    // Dropping bold but keeping dim must re-enable dim after the shared off code 22.
    let (mut params, mut from, mut to) = (Vec::new(), Pen::DEFAULT, Pen::DEFAULT);
    (from.modifier, to.modifier) = (Modifier::BOLD | Modifier::DIM, Modifier::DIM);
    sgr_params(&mut params, from, to);
    assert_eq!(params, b"22;2");
}

/// A frame with `text` at (0, 0), each cell styled by `style` and given `extra`.
fn styled(w: u16, text: &str, style: Style, extra: &Extra) -> Frame {
    let mut f = Frame::new(w, 1);
    f.buffer.set_string(0, 0, text, style);
    for e in &mut f.extras[..text.chars().count()] {
        *e = extra.clone();
    }
    f
}

fn link(uri: &str) -> Option<Arc<Link>> {
    Link::parse(b"id=1", uri.as_bytes()).map(Arc::new)
}

#[test]
fn strikethrough_underline_styles_and_colours_overline_and_links_are_sent() {
    let plain = Extra::PLAIN;
    let curly = Extra {
        underline: Underline::Curly,
        underline_color: Color::Rgb(255, 0, 0),
        ..Extra::PLAIN
    };
    let over = Extra {
        overline: true,
        ..Extra::PLAIN
    };
    let linked = Extra {
        link: link("http://e.com/x"),
        ..Extra::PLAIN
    };
    let frames = [
        styled(
            10,
            "done",
            Style::new().add_modifier(Modifier::CROSSED_OUT),
            &plain,
        ),
        styled(
            10,
            "curly",
            Style::new().add_modifier(Modifier::UNDERLINED),
            &curly,
        ),
        styled(10, "over", Style::new(), &over),
        styled(10, "link", Style::new(), &linked),
    ];
    let sent: Vec<String> = frames
        .iter()
        .map(|f| String::from_utf8(encode_full(f)).expect("utf8"))
        .collect();
    assert!(sent[0].contains("\x1b[9mdone\x1b[0m"), "{:?}", sent[0]);
    assert!(
        sent[1].contains("\x1b[4:3;58:2::255:0:0mcurly\x1b[0m"),
        "{:?}",
        sent[1]
    );
    assert!(sent[2].contains("\x1b[53mover\x1b[0m"), "{:?}", sent[2]);
    assert!(
        sent[3].contains("\x1b]8;id=1;http://e.com/x\x1b\\link\x1b]8;;\x1b\\"),
        "{:?}",
        sent[3]
    );
    replay(&frames);
    // One changed cell of a link: only it, inside its link.
    let mut next = frames[3].clone();
    next.buffer[(1, 0)].set_symbol("I");
    assert_eq!(
        encode_diff(&frames[3], &next),
        b"\x1b[1;2H\x1b]8;id=1;http://e.com/x\x1b\\I\x1b]8;;\x1b\\"
    );
    // The same text linked elsewhere is a change; the same link is none.
    let mut moved = frames[3].clone();
    moved.extras[2].link = link("http://e.com/y");
    let diff = String::from_utf8(encode_diff(&frames[3], &moved)).expect("utf8");
    assert!(diff.contains("http://e.com/y\x1b\\n"), "{diff:?}");
    let mut same = frames[3].clone();
    same.extras[2].link = link("http://e.com/x");
    assert!(encode_diff(&frames[3], &same).is_empty());
    // Styles change in place: single to curly to dotted in another colour, then none.
    let single = Style::new().add_modifier(Modifier::UNDERLINED);
    let dotted = Extra {
        underline: Underline::Dotted,
        underline_color: Color::Indexed(33),
        ..Extra::PLAIN
    };
    let steps = [
        styled(6, "ab", single, &plain),
        styled(6, "ab", single, &curly),
        styled(6, "ab", single, &dotted),
        styled(6, "ab", Style::new(), &plain),
    ];
    let bytes: Vec<String> = steps
        .windows(2)
        .map(|p| String::from_utf8(encode_diff(&p[0], &p[1])).expect("utf8"))
        .collect();
    assert!(bytes[0].contains("\x1b[4:3;58:2::255:0:0mab"), "{bytes:?}");
    assert!(bytes[1].contains("\x1b[4:4;58:5:33mab"), "{bytes:?}");
    replay(&steps);
}

#[test]
fn wide_and_narrow_replace_each_other() {
    let rows = [
        ["abcdefgh", "xyz"],
        ["漢🙂cdefg", "x漢"],
        ["a漢🙂defg", "漢漢漢漢"],
        ["ab 🙂 fgh", " 漢漢漢 "],
        ["abcdefgh", "xyz"],
    ];
    replay(&rows.map(|r| text(8, 2, None, &r)));
    // A coloured wide glyph replaced by plain text: both columns must lose the colour.
    let mut a = Frame::new(4, 1);
    a.buffer
        .set_string(0, 0, "🙂🙂", Style::new().bg(Color::Red));
    replay(&[a, text(4, 1, None, &["ab"])]);
    // Terminals disagree on emoji sequence widths: move absolutely after one.
    let a = text(6, 1, None, &["abcdef"]);
    let b = text(6, 1, None, &["\u{2764}\u{fe0f}xyz"]);
    let bytes = String::from_utf8(encode_diff(&a, &b)).expect("utf8");
    assert!(bytes.contains("\u{fe0f}\x1b[1;3Hxyz"), "{bytes:?}");
}

#[test]
fn bottom_right_cell_does_not_scroll() {
    let a = text(4, 3, None, &["top!", "mid.", "bot."]);
    let b = text(4, 3, None, &["top!", "midY", "botX"]);
    let mut c = text(4, 3, Some((3, 2)), &["top!", "midY", "bo"]);
    c.buffer
        .set_string(2, 2, "漢", Style::new().fg(Color::Green));
    let d = text(4, 3, Some((3, 2)), &["top!", "midY", "1234"]);
    replay(&[a, b, c, d]);
    // After printing into the last column, only absolute moves and CRLF are trusted.
    assert!(matches!(plan_move(Cursor::RowOnly(2), 5, 2).0, Move::Cup));
    assert!(matches!(plan_move(Cursor::RowOnly(2), 0, 3).0, Move::CrLf));
}

#[test]
fn resize_modes_and_cursor() {
    let a = text(10, 5, None, &["small"]);
    let b = text(12, 6, Some((1, 1)), &["bigger", "frame"]);
    assert_eq!(encode_diff(&a, &b), encode_full(&b));
    let mut c = b.clone();
    (c.application_cursor, c.application_keypad) = (true, true);
    assert_eq!(encode_diff(&b, &c), b"\x1b[?2026h\x1b[?1h\x1b=\x1b[?2026l");
    let (mut d, mut d_clamped) = (c.clone(), c.clone());
    (d.cursor, d_clamped.cursor) = (Some((99, 99)), Some((11, 5)));
    assert!(encode_diff(&d, &d_clamped).is_empty(), "clamped like a CUP");
    let mut e = b.clone();
    (e.cursor, e.application_cursor) = (None, true);
    replay(&[b.clone(), c, d_clamped, e, b]);
}

#[test]
fn unprintable_input_does_not_break_the_screen() {
    let mut a = text(4, 3, None, &["abcd", "efgh", "ijkl"]);
    a.buffer[(3, 0)].set_symbol("漢"); // wide in the last column: cannot fit
    a.buffer[(0, 1)].set_symbol("\x1b");
    a.buffer[(1, 1)].set_symbol("");
    a.buffer[(2, 1)].set_symbol("\u{301}");
    a.buffer[(3, 2)].set_symbol("🙂");
    let mut parser = parser(4, 3);
    parser.process(&encode_full(&a));
    let shown = text(4, 3, None, &["abc ", "   h", "ijk "]);
    assert_shows(parser.screen(), &shown, "sanitised");
    let b = text(4, 3, None, &["abcd", "efgh", "ijkl"]);
    parser.process(&encode_diff(&a, &b));
    assert_shows(parser.screen(), &b, "after");
    for (w, h) in [(0, 0), (0, 3), (3, 0)] {
        let f = text(w, h, Some((1, 1)), &[]);
        assert!(!encode_full(&f).is_empty());
        assert!(encode_diff(&f, &Frame::new(1, 1)).starts_with(SYNC_BEGIN));
    }
}

#[test]
fn a_cluster_takes_the_width_its_pane_gave_it_and_what_follows_is_placed_explicitly() {
    // A ZWJ sequence two columns wide (a terminal drawing its emoji one by one takes
    // six), a conjunct one column wide (two, one by one), a ZWJ sequence whose text
    // measures three columns but is drawn in two.
    let clusters = [
        ("\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}", 2u16),
        ("\u{915}\u{94d}\u{200d}\u{937}", 1),
        ("\u{1f3f3}\u{200d}\u{1f308}", 2),
    ];
    let mut frame = Frame::new(20, 2);
    let mut x = 0;
    let mut after = Vec::new();
    for (i, (symbol, width)) in clusters.iter().enumerate() {
        let cell = &mut frame.buffer[(x, 0)];
        cell.set_symbol(symbol);
        let w = std::num::NonZeroU16::new(*width).unwrap();
        cell.set_diff_option(CellDiffOption::ForcedWidth(w));
        x += width;
        let marker = char::from(b'a' + i as u8);
        frame.buffer[(x, 0)].set_char(marker);
        after.push((x, marker));
        x += 1;
    }
    let bytes = encode_full(&frame);
    let text = String::from_utf8_lossy(&bytes);
    for ((symbol, _), (x, marker)) in clusters.iter().zip(&after) {
        let placed = format!("{symbol}\x1b[1;{}H{marker}", x + 1);
        assert!(text.contains(&placed), "{placed:?} in {text:?}");
    }
    // On a terminal that draws each character of a cluster on its own, what follows a
    // cluster still lands where it belongs.
    let mut p = parser(20, 2);
    p.process(&bytes);
    for (x, marker) in after {
        assert_eq!(
            p.screen().cell(0, x).unwrap().contents(),
            marker.to_string()
        );
    }
}

#[test]
fn a_resume_with_one_unknown_row_costs_that_row() {
    let lines: Vec<String> = (0..50)
        .map(|y| format!("line {y} {}", "x".repeat(150)))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let a = text(200, 50, Some((3, 4)), &lines);
    let mut unknown = vec![false; 50];
    unknown[49] = true;
    let bytes = encode_resume(&a, &unknown, &a);
    assert!(
        bytes.len() < 250,
        "{}: {:?}",
        bytes.len(),
        String::from_utf8_lossy(&bytes)
    );
    assert!(encode_full(&a).len() > 7_000);
    assert_eq!(changed_rows(&a, &a), vec![false; 50]);
}
