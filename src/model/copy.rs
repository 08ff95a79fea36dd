//! Copy mode over a pane's text, as tmux's vi copy mode: a cursor on a row and column of
//! the whole text (history first, the screen's rows after it), vi motions, search, and
//! the three kinds of selection. Pure: the text comes through [`Text`].

/// The rows copy mode reads: numbered from the oldest row of history, the screen's rows
/// after it; each as plain text.
pub trait Text {
    fn rows(&self) -> usize;
    fn row(&self, i: usize) -> String;
}

/// Copy mode's keys as the help lists them (key, what it does).
pub const KEYS: &[(&str, &str)] = &[
    ("h j k l", "move a character or row"),
    ("w b e", "next word, back a word, end of word"),
    ("0 ^ $", "start, first non-blank, end of row"),
    ("g G", "oldest row of history, last row"),
    ("H M L", "top, middle, bottom of the view"),
    ("{ }", "previous, next paragraph"),
    ("PgUp PgDn C-b C-f", "a page up, down"),
    ("C-u C-d", "half a page up, down"),
    ("/ ?", "search forward, backward (smart case)"),
    ("n N", "next, previous match"),
    ("v Space", "select characters"),
    ("V", "select rows"),
    ("C-v", "select a rectangle"),
    ("y Enter", "copy the selection and leave"),
    ("q Esc C-c", "leave copy mode"),
];

/// A selection's kind: `v` from one character to another, `V` whole rows, ctrl+v a
/// rectangle of columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectKind {
    Char,
    Line,
    Rect,
}

/// Scroll/copy mode of one terminal (shared by every client looking at it, like tmux).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scroll {
    /// The cursor: a row of the whole text and a column (in characters).
    pub row: usize,
    pub col: usize,
    /// Where the selection started, and its kind.
    pub anchor: Option<(usize, usize, SelectKind)>,
    /// A search being typed after `/` (forward: towards newer rows) or `?`.
    pub prompt: Option<(bool, String)>,
    /// The last search run, for `n` and `N` and the highlighted matches.
    pub search: Option<(bool, String)>,
}

impl Scroll {
    pub fn at(row: usize, col: usize) -> Scroll {
        Scroll {
            row,
            col,
            anchor: None,
            prompt: None,
            search: None,
        }
    }
}

/// What a character is, for word motions: vi's words are runs of word characters or
/// runs of other non-blank ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Blank,
    Word,
    Punct,
}

fn class(c: char) -> Class {
    if c.is_whitespace() {
        Class::Blank
    } else if c.is_alphanumeric() || c == '_' {
        Class::Word
    } else {
        Class::Punct
    }
}

/// The text as a run of (row, col, char) positions, with a blank between rows, so word
/// motions cross rows as vi's do.
fn chars_of(text: &dyn Text, row: usize) -> Vec<char> {
    let mut v: Vec<char> = text.row(row).chars().collect();
    v.push(' ');
    v
}

/// `w`: the start of the next word.
pub fn word_forward(text: &dyn Text, row: usize, col: usize) -> (usize, usize) {
    let (mut r, mut c) = (row, col);
    let mut line = chars_of(text, r);
    let start = line.get(c).copied().map(class).unwrap_or(Class::Blank);
    let mut seen_blank = start == Class::Blank;
    loop {
        c += 1;
        if c >= line.len() {
            if r + 1 >= text.rows() {
                return (r, line.len().saturating_sub(2));
            }
            r += 1;
            c = 0;
            line = chars_of(text, r);
            seen_blank = true;
            if line.first().is_some_and(|ch| class(*ch) != Class::Blank) {
                return (r, 0);
            }
            continue;
        }
        let k = class(line[c]);
        if k == Class::Blank {
            seen_blank = true;
        } else if seen_blank || k != start {
            return (r, c);
        }
    }
}

/// `b`: the start of this word, or of the one before.
pub fn word_back(text: &dyn Text, row: usize, col: usize) -> (usize, usize) {
    let (mut r, mut c) = (row, col);
    let mut line = chars_of(text, r);
    // Step back over blanks (across rows) to the previous non-blank.
    loop {
        if c == 0 {
            if r == 0 {
                return (0, 0);
            }
            r -= 1;
            line = chars_of(text, r);
            c = line.len() - 1;
        } else {
            c -= 1;
        }
        if class(line[c]) != Class::Blank {
            break;
        }
    }
    let k = class(line[c]);
    while c > 0 && class(line[c - 1]) == k {
        c -= 1;
    }
    (r, c)
}

/// `e`: the end of this word, or of the next.
pub fn word_end(text: &dyn Text, row: usize, col: usize) -> (usize, usize) {
    let (mut r, mut c) = (row, col + 1);
    let mut line = chars_of(text, r);
    loop {
        if c >= line.len() {
            if r + 1 >= text.rows() {
                return (r, col);
            }
            r += 1;
            c = 0;
            line = chars_of(text, r);
            continue;
        }
        if class(line[c]) != Class::Blank {
            break;
        }
        c += 1;
    }
    let k = class(line[c]);
    while c + 1 < line.len() && class(line[c + 1]) == k {
        c += 1;
    }
    (r, c)
}

/// `^`: the first non-blank character of the row.
pub fn first_non_blank(text: &dyn Text, row: usize) -> usize {
    text.row(row)
        .chars()
        .position(|c| !c.is_whitespace())
        .unwrap_or(0)
}

/// `$`: the last character of the row.
pub fn line_end(text: &dyn Text, row: usize) -> usize {
    text.row(row).trim_end().chars().count().saturating_sub(1)
}

/// `{` / `}`: the previous / next blank row (the edge of the text if none).
pub fn paragraph(text: &dyn Text, row: usize, forward: bool) -> usize {
    let blank = |r: usize| text.row(r).trim().is_empty();
    if forward {
        (row + 1..text.rows())
            .find(|r| blank(*r))
            .unwrap_or(text.rows().saturating_sub(1))
    } else {
        (0..row).rev().find(|r| blank(*r)).unwrap_or(0)
    }
}

/// Whether `pattern` is matched case-sensitively: only when it has a capital (smart case).
fn folded(pattern: &str) -> Option<String> {
    (!pattern.chars().any(char::is_uppercase)).then(|| pattern.to_lowercase())
}

/// Where `pattern` occurs in one row: the columns (in characters) each match starts at.
pub fn matches_in(line: &str, pattern: &str) -> Vec<usize> {
    if pattern.is_empty() {
        return Vec::new();
    }
    let (hay, needle) = match folded(pattern) {
        Some(p) => (line.to_lowercase(), p),
        None => (line.to_string(), pattern.to_string()),
    };
    // Lower-casing can change a string's length: columns are only right where it does
    // not, which is every text people search in copy mode but a few scripts'.
    hay.match_indices(&needle)
        .map(|(at, _)| hay[..at].chars().count())
        .collect()
}

/// The next match of `pattern` after (forward) or before the cursor, wrapping round the
/// whole text; `None` when it occurs nowhere.
pub fn search(
    text: &dyn Text,
    (row, col): (usize, usize),
    pattern: &str,
    forward: bool,
) -> Option<(usize, usize)> {
    let n = text.rows();
    if n == 0 || pattern.is_empty() {
        return None;
    }
    for step in 0..=n {
        let r = if forward {
            (row + step) % n
        } else {
            (row + n - step % n) % n
        };
        let cols = matches_in(&text.row(r), pattern);
        let hit = match (step, forward) {
            (0, true) => cols.into_iter().find(|c| *c > col),
            (0, false) => cols.into_iter().rev().find(|c| *c < col),
            (s, true) if s == n => cols.into_iter().find(|c| *c <= col),
            (s, false) if s == n => cols.into_iter().rev().find(|c| *c >= col),
            (_, true) => cols.into_iter().next(),
            (_, false) => cols.into_iter().next_back(),
        };
        if let Some(c) = hit {
            return Some((r, c));
        }
    }
    None
}

/// The columns of row `r` a selection covers: `[from, to)` in characters (`to` may run
/// past the row's end: to its end).
pub fn selected_cols(scroll: &Scroll, r: usize) -> Option<(usize, usize)> {
    let (ar, ac, kind) = scroll.anchor?;
    let (top, bottom) = (ar.min(scroll.row), ar.max(scroll.row));
    if r < top || r > bottom {
        return None;
    }
    match kind {
        SelectKind::Line => Some((0, usize::MAX)),
        SelectKind::Rect => Some((ac.min(scroll.col), ac.max(scroll.col) + 1)),
        SelectKind::Char => {
            let ((sr, sc), (er, ec)) = if (ar, ac) <= (scroll.row, scroll.col) {
                ((ar, ac), (scroll.row, scroll.col))
            } else {
                ((scroll.row, scroll.col), (ar, ac))
            };
            let from = if r == sr { sc } else { 0 };
            let to = if r == er { ec + 1 } else { usize::MAX };
            Some((from, to))
        }
    }
}

/// The selected text: rows joined by newlines, each row's trailing blanks dropped.
pub fn selection(text: &dyn Text, scroll: &Scroll) -> Option<String> {
    let (ar, _, _) = scroll.anchor?;
    let (top, bottom) = (ar.min(scroll.row), ar.max(scroll.row));
    let rows: Vec<String> = (top..=bottom.min(text.rows().saturating_sub(1)))
        .map(|r| {
            let line = text.row(r);
            let (from, to) = selected_cols(scroll, r).unwrap_or((0, 0));
            let part: String = line
                .chars()
                .skip(from)
                .take(to.saturating_sub(from))
                .collect();
            part.trim_end().to_string()
        })
        .collect();
    Some(rows.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rows(Vec<&'static str>);

    impl Text for Rows {
        fn rows(&self) -> usize {
            self.0.len()
        }
        fn row(&self, i: usize) -> String {
            self.0.get(i).copied().unwrap_or_default().to_string()
        }
    }

    fn text() -> Rows {
        Rows(vec![
            "fn main() {",
            "    let x = 42;",
            "",
            "    println!(\"{x}\");",
            "}",
        ])
    }

    #[test]
    fn words_move_as_in_vi() {
        let t = text();
        assert_eq!(word_forward(&t, 0, 0), (0, 3), "fn → main");
        assert_eq!(word_forward(&t, 0, 3), (0, 7), "main → (");
        assert_eq!(word_forward(&t, 0, 10), (1, 4), "across the row's end");
        assert_eq!(word_back(&t, 1, 4), (0, 10), "back across it");
        assert_eq!(word_back(&t, 0, 5), (0, 3), "to this word's start");
        assert_eq!(word_end(&t, 0, 0), (0, 1));
        assert_eq!(word_end(&t, 0, 1), (0, 6), "main");
        assert_eq!(first_non_blank(&t, 1), 4);
        assert_eq!(line_end(&t, 1), 14);
        assert_eq!(paragraph(&t, 0, true), 2);
        assert_eq!(paragraph(&t, 4, false), 2);
        assert_eq!(
            paragraph(&t, 2, false),
            0,
            "the top when there is no blank row"
        );
    }

    #[test]
    fn search_wraps_and_is_smart_about_case() {
        let t = Rows(vec!["Error one", "fine", "error two", "ERROR three"]);
        assert_eq!(search(&t, (0, 0), "error", true), Some((2, 0)));
        assert_eq!(search(&t, (2, 0), "error", true), Some((3, 0)), "any case");
        assert_eq!(search(&t, (3, 0), "error", true), Some((0, 0)), "wraps");
        assert_eq!(
            search(&t, (0, 0), "Error", true),
            Some((0, 0)),
            "only itself"
        );
        assert_eq!(search(&t, (3, 0), "error", false), Some((2, 0)));
        assert_eq!(search(&t, (0, 0), "nowhere", true), None);
        assert_eq!(matches_in("a-b-a-b", "a"), vec![0, 4]);
    }

    #[test]
    fn each_kind_of_selection_copies_its_text() {
        let t = text();
        let mut s = Scroll::at(1, 8);
        s.anchor = Some((0, 3, SelectKind::Char));
        assert_eq!(selection(&t, &s).unwrap(), "main() {\n    let x");
        s.anchor = Some((0, 3, SelectKind::Line));
        assert_eq!(selection(&t, &s).unwrap(), "fn main() {\n    let x = 42;");
        s.anchor = Some((0, 3, SelectKind::Rect));
        assert_eq!(selection(&t, &s).unwrap(), "main()\n let x");
        s.anchor = None;
        assert_eq!(selection(&t, &s), None, "nothing selected");
    }
}
