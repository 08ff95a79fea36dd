//! Grapheme clusters: each kind is one cell (two for a wide one), however the output is
//! cut, with the width modern terminals draw it.

use crate::term::vt::{Cell, Terminal};

const FAMILY: &str = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
const FLAG: &str = "\u{1f1eb}\u{1f1f7}";
const THUMB: &str = "\u{1f44d}\u{1f3fd}";

/// Each cell of row `row` up to `cols`: its text, and W (wide), C (its other half) or -.
fn row(t: &Terminal, row: u16) -> Vec<String> {
    let s = t.screen();
    (0..s.size().1)
        .filter_map(|c| s.cell(row, c))
        .map(|c: &Cell| {
            let kind = match (c.is_wide(), c.is_wide_continuation()) {
                (true, _) => "W",
                (_, true) => "C",
                _ => "-",
            };
            format!("{}{kind}", c.contents())
        })
        .collect()
}

fn drawn(out: &str, cols: u16) -> Terminal {
    let mut t = Terminal::new(3, cols);
    t.process(out.as_bytes(), 1);
    t
}

/// The cells a wide cluster makes.
fn wide(text: &str) -> Vec<String> {
    vec![format!("{text}W"), "C".into()]
}

/// The cell a narrow cluster makes.
fn narrow(text: &str) -> Vec<String> {
    vec![format!("{text}-")]
}

#[test]
fn each_kind_of_cluster_is_one_cell() {
    let cases: Vec<(&str, Vec<String>)> = vec![
        // ZWJ sequence: one wide cell, the marker right after it.
        (FAMILY, wide(FAMILY)),
        // A flag: two regional indicators; a third starts a cluster of its own, which a
        // fourth makes a flag too.
        (FLAG, wide(FLAG)),
        (
            "\u{1f1eb}\u{1f1f7}\u{1f1e9}",
            [wide(FLAG), narrow("\u{1f1e9}")].concat(),
        ),
        (
            "\u{1f1eb}\u{1f1f7}\u{1f1e9}\u{1f1ea}",
            [wide(FLAG), wide("\u{1f1e9}\u{1f1ea}")].concat(),
        ),
        // Skin tone, also on a character that is narrow alone.
        (THUMB, wide(THUMB)),
        ("\u{261d}\u{1f3fd}", wide("\u{261d}\u{1f3fd}")),
        // Emoji presentation (VS16) widens, text presentation (VS15) narrows a character
        // that has a text form.
        ("\u{2764}\u{fe0f}", wide("\u{2764}\u{fe0f}")),
        ("\u{231a}\u{fe0e}", narrow("\u{231a}\u{fe0e}")),
        ("\u{1f600}\u{fe0e}", wide("\u{1f600}\u{fe0e}")),
        // Combining marks, after ASCII too.
        ("e\u{301}\u{323}", narrow("e\u{301}\u{323}")),
        // Hangul jamo: a syllable of three.
        ("\u{1100}\u{1161}\u{11a8}", wide("\u{1100}\u{1161}\u{11a8}")),
        // A keycap: a digit, VS16 and the enclosing mark.
        ("1\u{fe0f}\u{20e3}", wide("1\u{fe0f}\u{20e3}")),
        // A pictograph joined by ZWJ makes the sequence wide.
        (
            "\u{1f3f3}\u{200d}\u{1f308}",
            wide("\u{1f3f3}\u{200d}\u{1f308}"),
        ),
    ];
    for (text, mut want) in cases {
        let t = drawn(&format!("{text}x"), 10);
        want.push("x-".into());
        assert_eq!(row(&t, 0)[..want.len()], want[..], "{text:?}");
        assert_eq!(
            t.screen().cursor_position(),
            (0, want.len() as u16),
            "the marker right after {text:?}"
        );
    }
}

#[test]
fn a_cluster_cut_across_reads_at_any_byte_is_the_same() {
    let text = format!(
        "a{FAMILY}b{FLAG}\u{1f1e9}c{THUMB}d\u{231a}\u{fe0e}e\u{301}\u{1100}\u{1161}\u{11a8}z"
    );
    let bytes = text.as_bytes();
    let whole = drawn(&text, 20);
    for cut in 0..=bytes.len() {
        let mut t = Terminal::new(3, 20);
        t.process(&bytes[..cut], 1);
        t.process(&bytes[cut..], 2);
        assert_eq!(row(&t, 0), row(&whole, 0), "cut at {cut}");
        assert_eq!(
            t.screen().cursor_position(),
            whole.screen().cursor_position()
        );
    }
    let mut t = Terminal::new(3, 20);
    for (seq, b) in (1..).zip(bytes) {
        t.process(std::slice::from_ref(b), seq);
    }
    assert_eq!(row(&t, 0), row(&whole, 0), "a byte at a time");
}

#[test]
fn a_cluster_that_widens_in_the_last_column_moves_to_the_next_row() {
    let t = drawn(&format!("abc{FLAG}x"), 4);
    assert_eq!(row(&t, 0), ["a-", "b-", "c-", "-"]);
    assert_eq!(
        row(&t, 1),
        [format!("{FLAG}W"), "C".into(), "x-".into(), "-".into()]
    );
    // A skin tone after a narrow character there, on the bottom row (the screen scrolls).
    let t = drawn("\x1b[3;1Habc\u{261d}\u{1f3fd}y", 4);
    assert_eq!(row(&t, 2)[..3], ["\u{261d}\u{1f3fd}W", "C", "y-"]);
    assert_eq!(row(&t, 1), ["a-", "b-", "c-", "-"]);
}

#[test]
fn narrowing_gives_back_the_second_half() {
    // The cursor steps back with it: what comes next is drawn right after.
    let t = drawn("\u{231a}\u{fe0e}x", 6);
    assert_eq!(row(&t, 0)[..3], ["\u{231a}\u{fe0e}-", "x-", "-"]);
    // In the last columns, waiting to wrap: it is then in the last column.
    let t = drawn("abcd\u{231a}\u{fe0e}", 6);
    assert_eq!(
        row(&t, 0),
        ["a-", "b-", "c-", "d-", "\u{231a}\u{fe0e}-", "-"]
    );
    assert_eq!(t.screen().cursor_position(), (0, 5));
}

#[test]
fn a_cluster_longer_than_a_cell_keeps_whole_characters_and_its_width() {
    // Ten people joined: more than a cell holds. The characters that do not fit are
    // dropped, the cluster stays two columns wide, and what follows it is judged by the
    // cluster's real last character: a new emoji after it starts a cell of its own.
    let mut text = "\u{1f468}\u{200d}".repeat(9);
    text.push('\u{1f468}');
    for cut in [text.len(), 3, 17] {
        let mut t = Terminal::new(3, 10);
        let out = format!("{text}\u{1f600}x");
        t.process(&out.as_bytes()[..cut], 1);
        t.process(&out.as_bytes()[cut..], 2);
        let cells = row(&t, 0);
        let first = t.screen().cell(0, 0).unwrap();
        assert!(first.is_wide() && text.starts_with(first.contents()));
        assert!(first.contents().chars().count() < text.chars().count());
        assert_eq!(cells[1..4], ["C", "\u{1f600}W", "C"], "cut at {cut}");
        assert_eq!(cells[4], "x-");
    }
    // A flood of marks on one character: bounded, and nothing moves.
    let mut t = Terminal::new(3, 10);
    let marks = format!("e{}x", "\u{301}".repeat(100_000));
    t.process(marks.as_bytes(), 1);
    assert_eq!(row(&t, 0)[1], "x-");
    assert!(t.screen().cell(0, 0).unwrap().contents().len() <= 64);
}

#[test]
fn ascii_after_a_cluster_starts_a_new_cell() {
    let t = drawn(&format!("{FAMILY}\u{200d}a{FLAG}1"), 10);
    assert_eq!(
        row(&t, 0)[..6],
        [
            format!("{FAMILY}\u{200d}W"),
            "C".into(),
            "a-".into(),
            format!("{FLAG}W"),
            "C".into(),
            "1-".into()
        ]
    );
}

#[test]
fn grapheme_clustering_is_reported_as_permanently_set() {
    let mut t = Terminal::new(3, 10);
    t.process(b"\x1b[?2027$p", 1);
    assert_eq!(t.take_effects().responses, b"\x1b[?2027;3$y");
}
