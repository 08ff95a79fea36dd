//! Scrollback, kept compactly. A screen cell takes 32 bytes (46 MB for 10,000 lines of a
//! wide pane); here a line is the text it shows with SGR sequences for its colours —
//! about a byte per character. Rows are formatted into this store as they scroll off the
//! top of the screen.

use std::collections::VecDeque;

/// One line of history. `text` is self-contained: it starts from the default pen and
/// moves the cursor only rightwards within its row (CUF), so it can be drawn at any row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: Box<str>,
    /// The line continued on the next one (it was wrapped at the right margin).
    pub wrapped: bool,
}

#[derive(Debug)]
pub struct History {
    lines: VecDeque<Line>,
    cap: usize,
}

impl History {
    pub fn new(cap: usize) -> History {
        History {
            lines: VecDeque::new(),
            cap,
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn push(&mut self, line: Line) {
        if self.cap == 0 {
            return;
        }
        if self.lines.len() == self.cap {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    pub fn get(&self, i: usize) -> Option<&Line> {
        self.lines.get(i)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Line> + Clone {
        self.lines.iter()
    }
}

/// `text` as plain characters: SGR and erase sequences dropped, cursor-forward moves
/// turned into the blanks they skip; trailing blanks trimmed.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\x1b') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(csi) = after.strip_prefix('[') else {
            rest = after;
            continue;
        };
        let Some(end) = csi.find(|c: char| ('@'..='~').contains(&c)) else {
            rest = "";
            break;
        };
        if csi.as_bytes()[end] == b'C' {
            let n = csi[..end].parse::<usize>().unwrap_or(1).max(1);
            out.extend(std::iter::repeat_n(' ', n));
        }
        rest = &csi[end + 1..];
    }
    out.push_str(rest);
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::vt::Terminal;

    fn screen_of(bytes: &[u8]) -> Terminal {
        let mut t = Terminal::new(3, 20);
        t.process(bytes, 1);
        t
    }

    #[test]
    fn a_row_becomes_a_line_that_redraws_the_same_cells_anywhere() {
        let p = screen_of(
            b"\x1b[41mA\x1b[0m  \x1b[41mB\x1b[0m \x1b[1;38;2;1;2;3mrgb\x1b[0m \xe6\xbc\xa2",
        );
        let line = p.screen().line(0);
        assert_eq!(plain(&line), "A  B rgb \u{6f22}");
        // Drawn on another row of another screen, every cell matches.
        let q = screen_of(format!("\x1b[3;1H{line}").as_bytes());
        for col in 0..20 {
            let (a, b) = (
                p.screen().cell(0, col).unwrap(),
                q.screen().cell(2, col).unwrap(),
            );
            assert_eq!(a.contents(), b.contents(), "col {col}");
            assert_eq!(a.pen(), b.pen(), "col {col}");
        }
    }

    #[test]
    fn plain_text_keeps_the_gaps_cursor_moves_skip() {
        assert_eq!(plain("a\x1b[3Cb\x1b[C\x1b[31mc\x1b[2X  "), "a   b c");
        let p = screen_of(b"x    \x1b[44m  \x1b[0m  y");
        let exact = p.screen().rows_formatted(0, 20).next().unwrap();
        assert_eq!(plain(&exact), "x        y");
    }

    #[test]
    fn history_is_bounded() {
        let mut h = History::new(2);
        for i in 0..5 {
            h.push(Line {
                text: i.to_string().into(),
                wrapped: false,
            });
        }
        assert_eq!(h.len(), 2);
        assert_eq!(&*h.get(0).unwrap().text, "3");
    }
}
