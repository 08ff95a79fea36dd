//! The attributes vt100 does not know — strikethrough, underline styles and colours,
//! overline, blink, hidden — and hyperlinks (OSC 8): parsed in every form programs send,
//! kept per cell, written back out exactly; and against a real tmux where it is
//! installed.

use proptest::prelude::*;

use crate::term::vt::cell::{self, Underline};
use crate::term::vt::{Color, Pen, Terminal, MAX_LINKS};

fn pen_after(bytes: &[u8]) -> Pen {
    let mut t = Terminal::new(2, 10);
    t.process(bytes, 1);
    t.screen().pen()
}

fn pen(flags: u16, underline: Underline, ul: Color) -> Pen {
    let mut p = Pen {
        flags,
        ul,
        ..Pen::DEFAULT
    };
    p.set_underline(underline);
    p
}

#[test]
fn every_form_of_the_new_attributes_is_parsed() {
    use Underline::*;
    let none = Color::Default;
    let red = Color::Rgb(255, 0, 0);
    let cases: &[(&[u8], Pen)] = &[
        (b"\x1b[9m", pen(cell::STRIKE, None, none)),
        (b"\x1b[9;29m", Pen::DEFAULT),
        (b"\x1b[53m", pen(cell::OVERLINE, None, none)),
        (b"\x1b[53;55m", Pen::DEFAULT),
        (b"\x1b[5m", pen(cell::BLINK, None, none)),
        (b"\x1b[6m", pen(cell::RAPID_BLINK, None, none)),
        (b"\x1b[5;6;25m", Pen::DEFAULT),
        (b"\x1b[8m", pen(cell::HIDDEN, None, none)),
        (b"\x1b[8;28m", Pen::DEFAULT),
        (b"\x1b[4m", pen(0, Single, none)),
        (b"\x1b[4:0m", Pen::DEFAULT),
        (b"\x1b[4:1m", pen(0, Single, none)),
        (b"\x1b[4:2m", pen(0, Double, none)),
        (b"\x1b[21m", pen(0, Double, none)),
        (b"\x1b[4:3m", pen(0, Curly, none)),
        (b"\x1b[4:4m", pen(0, Dotted, none)),
        (b"\x1b[4:5m", pen(0, Dashed, none)),
        (b"\x1b[4:3;24m", Pen::DEFAULT),
        (b"\x1b[4:3m\x1b[4:9m", pen(0, Curly, none)),
        (b"\x1b[4:3m\x1b[4m", pen(0, Single, none)),
        (b"\x1b[58;5;9m", pen(0, None, Color::Idx(9))),
        (b"\x1b[58:5:9m", pen(0, None, Color::Idx(9))),
        (b"\x1b[58;2;255;0;0m", pen(0, None, red)),
        (b"\x1b[58:2::255:0:0m", pen(0, None, red)),
        (b"\x1b[58:2:255:0:0m", pen(0, None, red)),
        (b"\x1b[58:2:1:255:0:0m", pen(0, None, red)),
        (b"\x1b[58;2;255;0;0;59m", Pen::DEFAULT),
        (b"\x1b[4:3;58:2::255:0:0m", pen(0, Curly, red)),
        (
            b"\x1b[1;4:3;58:2::255:0:0;9;53m",
            pen(cell::BOLD | cell::STRIKE | cell::OVERLINE, Curly, red),
        ),
        // A bad colour value ends the sequence, as for 38 and 48.
        (b"\x1b[58;5;300;9m", Pen::DEFAULT),
        (b"\x1b[9;53;4:3;58;5;1;0m", Pen::DEFAULT),
    ];
    for (bytes, want) in cases {
        let shown = String::from_utf8_lossy(bytes);
        assert_eq!(pen_after(bytes), *want, "{shown:?}");
        // Byte by byte, through the parser only.
        let mut t = Terminal::new(2, 10);
        for (seq, b) in (1..).zip(bytes.iter()) {
            t.process(std::slice::from_ref(b), seq);
        }
        assert_eq!(t.screen().pen(), *want, "{shown:?} a byte at a time");
    }
    // The foreground and background take the colon forms with a colour space too.
    let p = pen_after(b"\x1b[38:2::1:2:3;48:2::4:5:6m");
    assert_eq!((p.fg, p.bg), (Color::Rgb(1, 2, 3), Color::Rgb(4, 5, 6)));
}

#[test]
fn a_cell_keeps_what_it_was_drawn_with() {
    let mut t = Terminal::new(2, 20);
    t.process(b"\x1b[9ma\x1b[0;4:3;58:5:200mb\x1b[0;53;8mc\x1b[0md", 1);
    let s = t.screen();
    let cell = |col| s.cell(0, col).unwrap().pen();
    assert!(cell(0).strikethrough());
    assert_eq!(cell(1).underline_style(), Underline::Curly);
    assert_eq!(cell(1).ul, Color::Idx(200));
    assert!(cell(2).overline() && cell(2).hidden());
    assert_eq!(cell(3), Pen::DEFAULT);
}

#[test]
fn the_pen_is_written_back_exactly() {
    let mut t = Terminal::new(2, 80);
    t.process(b"\x1b[1;3;5;6;7;8;9;53;4:3;31;48;2;1;2;3;58:2::255:0:0m", 1);
    assert_eq!(
        t.screen().attributes_formatted(),
        "\x1b[0;1;3;5;6;7;8;9;53;4:3;31;48;2;1;2;3;58:2::255:0:0m"
    );
    t.process(b"\x1b[0;4;58:5:9m", 2);
    assert_eq!(t.screen().attributes_formatted(), "\x1b[0;4;58:5:9m");
    t.process(b"\x1b[0;21m", 3);
    assert_eq!(t.screen().attributes_formatted(), "\x1b[0;4:2m");
}

fn any_color() -> impl Strategy<Value = Color> {
    prop_oneof![
        Just(Color::Default),
        any::<u8>().prop_map(Color::Idx),
        any::<(u8, u8, u8)>().prop_map(|(r, g, b)| Color::Rgb(r, g, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// Any pen, written as SGR and read back, is the same pen.
    #[test]
    fn any_pen_survives_its_sgr(
        fg in any_color(),
        bg in any_color(),
        ul in any_color(),
        flags in 0u16..(1 << 12),
        style in 0u16..6,
    ) {
        let mut want = Pen { fg, bg, ul, flags, link: 0 };
        // (Bold and dim exclude each other in SGR: 1 ends 2 and 2 ends 1.)
        if want.bold() {
            want.flags &= !cell::DIM;
        }
        want.set_underline(Underline::from_sgr(style).unwrap_or_default());
        let mut sgr = String::new();
        crate::term::vt::format::sgr(want, &mut sgr);
        prop_assert_eq!(pen_after(sgr.as_bytes()), want, "{:?}", sgr);
    }
}

/// The URI of the link of cell (row, col), if any.
fn uri_at(t: &Terminal, row: u16, col: u16) -> Option<String> {
    let s = t.screen();
    let id = s.cell(row, col)?.link();
    s.link(id).map(|l| l.uri().to_string())
}

#[test]
fn a_link_is_kept_per_cell_and_erasing_does_not_spread_it() {
    let mut t = Terminal::new(3, 20);
    t.process(
        b"a\x1b]8;id=x;http://e.com/1\x1b\\link\x1b]8;;\x1b\\b \x1b]8;;http://e.com/2\x07two",
        1,
    );
    let want = |s: &str| Some(s.to_string());
    assert_eq!(uri_at(&t, 0, 0), None);
    for col in 1..5 {
        assert_eq!(uri_at(&t, 0, col), want("http://e.com/1"), "col {col}");
    }
    assert_eq!(uri_at(&t, 0, 5), None);
    assert_eq!(uri_at(&t, 0, 7), want("http://e.com/2"));
    let s = t.screen();
    assert_eq!(s.link(s.cell(0, 1).unwrap().link()).unwrap().id(), "x");
    // SGR resets leave the link open; erasing with it open gives the cells none.
    t.process(b"\x1b[0m\x1b[41m\x1b[K\x1b[2;1H\x1b[2K\x1b[3X", 2);
    assert_eq!(t.screen().pen().link, t.screen().cell(0, 7).unwrap().link());
    for col in 0..20 {
        assert_eq!(uri_at(&t, 1, col), None, "erased col {col}");
        assert_eq!(uri_at(&t, 0, 10 + col / 2), None, "erased col {col}");
    }
    // Text drawn now has it; a URI that is too long ends it.
    t.process(b"x", 3);
    assert_eq!(uri_at(&t, 1, 0), want("http://e.com/2"));
    let mut long = b"\x1b]8;;http://e.com/".to_vec();
    long.resize(long.len() + crate::term::vt::MAX_URI, b'x');
    long.extend_from_slice(b"\x1b\\y");
    t.process(&long, 4);
    assert_eq!(uri_at(&t, 1, 1), None);
    assert_eq!(t.screen().pen().link, 0);
    // A reset forgets every link.
    t.process(b"\x1b]8;;http://e.com/3\x1b\\z\x1bc", 5);
    assert_eq!(t.screen().links.len(), 0);
}

#[test]
fn lines_and_screens_carry_their_links() {
    let mut t = Terminal::new(2, 30);
    t.process(
        b"\x1b[9mgo \x1b]8;id=7;http://e.com/a;b\x1b\\here\x1b]8;;\x1b\\ or \x1b]8;;file:///x\x1b\\there",
        1,
    );
    let line = t.screen().line(0);
    assert_eq!(
        line,
        "\x1b[0;9mgo \x1b]8;id=7;http://e.com/a;b\x1b\\here\x1b]8;;\x1b\\ or \x1b]8;;file:///x\x1b\\there\x1b]8;;\x1b\\"
    );
    // Scrolled into history, the same.
    t.process(b"\x1b[0m\r\n\r\n", 2);
    let dropped: Vec<String> = t.dropped().iter().map(str::to_string).collect();
    assert_eq!(dropped, std::slice::from_ref(&line));
    // Drawn again (the history view, a handoff image), every cell has its link back.
    let mut again = Terminal::new(2, 30);
    again.process(line.as_bytes(), 1);
    for col in 0..30 {
        assert_eq!(uri_at(&again, 0, col), linked(col), "col {col}");
    }
    assert_eq!(again.screen().pen().link, 0, "the line ends its link");
    let row = again.screen().rows_formatted(0, 30).next().unwrap();
    assert!(row.ends_with("there\x1b]8;;\x1b\\"), "{row:?}");
    // The pen's own link is part of its state.
    again.process(b"\x1b]8;;http://e.com/open\x1b\\", 2);
    assert_eq!(
        again.screen().attributes_formatted(),
        "\x1b[0;9m\x1b]8;;http://e.com/open\x1b\\"
    );
}

/// Where the line of `lines_and_screens_carry_their_links` links column `col` to.
fn linked(col: u16) -> Option<String> {
    match col {
        3..=6 => Some("http://e.com/a;b".into()),
        11..=15 => Some("file:///x".into()),
        _ => None,
    }
}

#[test]
fn a_million_links_keep_the_table_bounded_and_ids_come_back() {
    let mut t = Terminal::new(24, 80);
    let mut out = Vec::new();
    for i in 0..1_000_000u32 {
        out.extend_from_slice(format!("\x1b]8;;https://e.com/{i}\x1b\\x").as_bytes());
        if out.len() > 64 << 10 {
            t.process(&out, u64::from(i));
            out.clear();
            t.dropped().clear();
            assert!(t.screen().links.len() <= MAX_LINKS);
        }
    }
    t.process(&out, 1 << 40);
    let s = t.screen();
    assert!(s.links.len() <= MAX_LINKS);
    // Every cell on the screen still points to its own link: the last ones printed.
    let mut last = None;
    for row in 0..24 {
        for col in 0..80 {
            let uri = uri_at(&t, row, col).expect("a link");
            let n: u32 = uri.rsplit('/').next().unwrap().parse().unwrap();
            assert!(last.is_none_or(|l| n == l + 1), "{uri} after {last:?}");
            last = Some(n);
        }
    }
    assert_eq!(last, Some(999_999));
    // With all ids in use on screen, a new link is dropped, never a panic.
    let mut t = Terminal::new(64, 80);
    let mut out = Vec::new();
    for i in 0..(MAX_LINKS + 100) {
        out.extend_from_slice(format!("\x1b]8;;u{i}\x1b\\x").as_bytes());
    }
    t.process(&out, 1);
    assert_eq!(t.screen().links.len(), MAX_LINKS);
    assert_eq!(uri_at(&t, 0, 0).as_deref(), Some("u0"));
    let (row, col) = ((MAX_LINKS + 50) / 80, (MAX_LINKS + 50) % 80);
    assert_eq!(uri_at(&t, row as u16, col as u16), None);
}

/// A real tmux, fed the same bytes: each cell's attributes as tmux keeps them (read back
/// with `capture-pane -e`) must be what herdr keeps. Skipped when tmux is not installed.
#[test]
fn tmux_keeps_the_attributes_herdr_keeps() {
    let Some(captured) = tmux_capture(ATTRIBUTES, 60, 6) else {
        eprintln!("tmux is not installed: skipped");
        return;
    };
    let mut ours = Terminal::new(6, 60);
    ours.process(ATTRIBUTES, 1);
    let mut theirs = Terminal::new(8, 60);
    theirs.process(captured.replace('\n', "\r\n").as_bytes(), 1);
    for row in 0..4 {
        for col in 0..60 {
            let (a, b) = (
                ours.screen().cell(row, col).unwrap(),
                theirs.screen().cell(row, col).unwrap(),
            );
            let (mut p, q) = (a.pen(), b.pen());
            // tmux 3.3a writes an overline back as `5:3`, and links not at all; it
            // keeps one kind of blink.
            p.flags &= !cell::OVERLINE;
            p.link = 0;
            if p.rapid_blink() {
                p.flags ^= cell::RAPID_BLINK | cell::BLINK;
            }
            assert_eq!(
                (a.contents(), p),
                (b.contents(), q),
                "row {row} col {col} of {captured:?}"
            );
        }
    }
}

/// Every attribute in each of its forms, one run of text each.
const ATTRIBUTES: &[u8] = b"\x1b[9mstrike\x1b[29m \x1b[4:3;58:2::255:0:0mcurly\x1b[0m \
\x1b[5mblink\x1b[25m \x1b[6mrapid\x1b[0m \x1b[8mhid\x1b[28m \x1b[21mdbl\x1b[24m \
\x1b[4:4mdot\x1b[4:5mdash\x1b[4:0m\r\n\
\x1b[4;58;5;9mul9\x1b[59mdef\x1b[0m \x1b[4:2;58:5:33mcol\x1b[0m \
\x1b[4:1;58;2;1;2;3mrgb\x1b[0m \x1b[4:3;58:2:9:8:7mnocs\x1b[0m\r\n\
\x1b[1;9;38;5;100;48;2;5;6;7mmixed\x1b[22;29m \x1b[53mover\x1b[55m \
\x1b]8;;http://e.com/\x1b\\link\x1b]8;;\x1b\\ end\r\n";

/// What a tmux pane of this size shows after `bytes` (its rows with SGR), or None
/// without tmux.
fn tmux_capture(bytes: &[u8], cols: u16, rows: u16) -> Option<String> {
    use std::process::Command;
    let dir = tempfile::tempdir().ok()?;
    let file = dir.path().join("out");
    std::fs::write(&file, [bytes, b"\x1b]2;fed\x07"].concat()).ok()?;
    let socket = format!("herdr-attr-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
    };
    let command = format!("cat '{}'; exec sleep 60", file.display());
    let (c, r) = (cols.to_string(), rows.to_string());
    let started = tmux(&["new-session", "-d", "-x", &c, "-y", &r, &command]).ok()?;
    if !started.status.success() {
        return None;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut captured = None;
    while std::time::Instant::now() < deadline {
        let title = tmux(&["display-message", "-p", "#{pane_title}"]).ok()?;
        if String::from_utf8_lossy(&title.stdout).trim() == "fed" {
            let out = tmux(&["capture-pane", "-p", "-e"]).ok()?;
            captured = Some(String::from_utf8_lossy(&out.stdout).into_owned());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = tmux(&["kill-server"]);
    Some(captured.expect("tmux showed the output within 20 s"))
}
