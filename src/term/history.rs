//! Scrollback, kept compactly. A screen cell takes 40 bytes (58 MB for 10,000 lines of a
//! wide pane); here a line is the text it shows with SGR sequences for its colours and
//! attributes and OSC 8 for its links — about a byte per character. Rows are formatted
//! into this store as they scroll off the top of the screen, each with whether it was
//! wrapped (its text runs on into the next): rows joined along those marks are the
//! program's lines, whatever width they were drawn at, and are read and shown that way.

use std::collections::VecDeque;

/// Lines packed end to end in one string: no allocation per line, and a block of them
/// moves (to another process, in a live handoff) as one copy. Each line is
/// self-contained: it starts from the default pen and moves the cursor only rightwards
/// within its row (CUF), so it can be drawn at any row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lines {
    text: String,
    /// Where each line ends in `text`.
    ends: Vec<usize>,
    /// Which lines were wrapped rows (their text runs on into the next line).
    wraps: Vec<bool>,
}

impl Lines {
    pub fn push(&mut self, line: &str) {
        self.push_row(line, false);
    }

    /// A row; `wrapped` when its text runs on into the next one.
    pub fn push_row(&mut self, line: &str, wrapped: bool) {
        self.text.push_str(line);
        self.ends.push(self.text.len());
        self.wraps.push(wrapped);
    }

    /// Line `i` runs on into line `i + 1`.
    pub fn wrapped(&self, i: usize) -> bool {
        self.wraps.get(i).copied().unwrap_or(false)
    }

    /// The lines with their wrap marks.
    pub fn rows(
        &self,
    ) -> impl ExactSizeIterator<Item = (&str, bool)> + DoubleEndedIterator + Clone {
        self.iter().zip(self.wraps.iter().copied())
    }

    /// Takes the last line off.
    fn pop(&mut self) -> Option<(String, bool)> {
        let end = self.ends.pop()?;
        let start = self.ends.last().copied().unwrap_or(0);
        let text = self.text.get(start..end).unwrap_or("").to_string();
        self.text.truncate(start);
        Some((text, self.wraps.pop().unwrap_or(false)))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of text, all lines told.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone {
        (0..self.len()).map(|i| self.get(i).unwrap_or(""))
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.wraps.clear();
    }
}

/// Lines go into blocks of about this many bytes; memory is given back a block at a time.
const BLOCK: usize = 32 << 10;

/// The last `cap` lines scrolled off the screen, oldest first.
#[derive(Debug)]
pub struct History {
    blocks: VecDeque<Lines>,
    /// Lines of the first block already dropped.
    skip: usize,
    len: usize,
    cap: usize,
}

impl History {
    pub fn new(cap: usize) -> History {
        History {
            blocks: VecDeque::new(),
            skip: 0,
            len: 0,
            cap,
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn push(&mut self, line: &str) {
        self.push_row(line, false);
    }

    /// A row; `wrapped` when its text runs on into the next one.
    pub fn push_row(&mut self, line: &str, wrapped: bool) {
        if self.cap == 0 {
            return;
        }
        match self.blocks.back_mut() {
            Some(b) if b.bytes() + line.len() <= BLOCK || b.is_empty() => b.push_row(line, wrapped),
            _ => {
                let mut b = Lines::default();
                b.text.reserve(BLOCK);
                b.push_row(line, wrapped);
                self.blocks.push_back(b);
            }
        }
        self.len += 1;
        if self.len > self.cap {
            self.drop_first();
        }
    }

    /// Takes a block of lines as they are (the last `cap` of them are kept).
    pub fn append(&mut self, lines: Lines) {
        if self.cap == 0 || lines.is_empty() {
            return;
        }
        self.len += lines.len();
        self.blocks.push_back(lines);
        while self.len > self.cap {
            self.drop_first();
        }
    }

    fn drop_first(&mut self) {
        self.skip += 1;
        self.len -= 1;
        if self.blocks.front().is_some_and(|b| self.skip >= b.len()) {
            self.blocks.pop_front();
            self.skip = 0;
        }
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        self.at(i).and_then(|(b, i)| b.get(i))
    }

    /// Line `i` runs on into line `i + 1` (or, for the last line, into the screen's
    /// first row).
    pub fn wrapped(&self, i: usize) -> bool {
        self.at(i).is_some_and(|(b, i)| b.wrapped(i))
    }

    /// The block holding line `i`, and its index there.
    fn at(&self, i: usize) -> Option<(&Lines, usize)> {
        if i >= self.len {
            return None;
        }
        let mut i = i + self.skip;
        for b in &self.blocks {
            if i < b.len() {
                return Some((b, i));
            }
            i -= b.len();
        }
        None
    }

    /// The newest line runs on (into the screen's first row).
    pub fn wrapped_last(&self) -> bool {
        self.len > 0 && self.wrapped(self.len - 1)
    }

    /// Takes the newest line back out (a row a resize lays out again).
    pub fn pop(&mut self) -> Option<(String, bool)> {
        if self.len == 0 {
            return None;
        }
        let b = self.blocks.back_mut()?;
        let line = b.pop();
        self.len -= 1;
        let first = self.blocks.len() == 1;
        if self
            .blocks
            .back()
            .is_some_and(|b| b.len() <= if first { self.skip } else { 0 })
        {
            self.blocks.pop_back();
            if first {
                self.skip = 0;
            }
        }
        line
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        let skip = self.skip;
        let lines = self
            .blocks
            .iter()
            .enumerate()
            .flat_map(move |(n, b)| b.iter().skip(if n == 0 { skip } else { 0 }));
        Counted {
            inner: lines,
            left: self.len,
        }
    }

    /// The lines with their wrap marks from line `i` on.
    pub fn rows_from(&self, i: usize) -> impl Iterator<Item = (&str, bool)> + Clone {
        // The block holding line `i`, and where in it (blocks before it are not walked
        // line by line).
        let mut at = (self.blocks.len(), 0);
        let mut left = i.saturating_add(self.skip);
        if i < self.len {
            for (n, b) in self.blocks.iter().enumerate() {
                if left < b.len() {
                    at = (n, left);
                    break;
                }
                left -= b.len();
            }
        }
        let (first, skip) = at;
        self.blocks
            .iter()
            .enumerate()
            .skip(first)
            .flat_map(move |(n, b)| b.rows().skip(if n == first { skip } else { 0 }))
    }

    /// The lines with their wrap marks, newest first.
    pub fn rows_rev(&self) -> impl Iterator<Item = (&str, bool)> + Clone {
        let skip = self.skip;
        self.blocks
            .iter()
            .enumerate()
            .rev()
            .flat_map(move |(n, b)| b.rows().skip(if n == 0 { skip } else { 0 }).rev())
    }

    /// The lines with their wrap marks, oldest first.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = (&str, bool)> + Clone {
        let skip = self.skip;
        let rows = self
            .blocks
            .iter()
            .enumerate()
            .flat_map(move |(n, b)| b.rows().skip(if n == 0 { skip } else { 0 }));
        Counted {
            inner: rows,
            left: self.len,
        }
    }
}

/// An iterator that knows how many items it has left.
#[derive(Clone)]
struct Counted<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left = self.left.saturating_sub(1);
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}

/// `text` as plain characters: SGR and erase sequences and hyperlinks (OSC 8) dropped,
/// cursor-forward moves turned into the blanks they skip; trailing blanks trimmed.
pub fn plain(text: &str) -> String {
    let mut out = plain_untrimmed(text);
    out.truncate(out.trim_end().len());
    out
}

/// [`plain`] keeping trailing blanks (a wrapped row's last blanks are in the line).
pub fn plain_untrimmed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\x1b') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(osc) = after.strip_prefix(']') {
            // To its ST (ESC and a backslash) or BEL.
            rest = match osc.find(['\x07', '\x1b']) {
                Some(end) if osc[end..].starts_with('\x07') => &osc[end + 1..],
                Some(end) => osc[end + 1..].strip_prefix('\\').unwrap_or(&osc[end + 1..]),
                None => "",
            };
            continue;
        }
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
    out
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
        assert_eq!(
            plain("\x1b]8;id=1;http://x/;y\x1b\\link\x1b]8;;\x1b\\ \x1b]8;;u\x07z"),
            "link z"
        );
        let p = screen_of(b"x    \x1b[44m  \x1b[0m  y");
        let exact = p.screen().rows_formatted(0, 20).next().unwrap();
        assert_eq!(plain(&exact), "x        y");
    }

    #[test]
    fn history_is_bounded_and_keeps_the_newest_lines_in_order() {
        let mut h = History::new(2);
        for i in 0..5 {
            h.push(&i.to_string());
        }
        assert_eq!(h.len(), 2);
        assert_eq!(h.get(0), Some("3"));
        assert_eq!(h.iter().collect::<Vec<_>>(), ["3", "4"]);
        // Across blocks: long lines fill several, and old blocks are let go.
        let mut h = History::new(1000);
        let long = "x".repeat(1000);
        for i in 0..3000 {
            h.push(&format!("{i} {long}"));
        }
        assert_eq!(h.len(), 1000);
        assert!(
            h.blocks.len() <= 1000 * 1006 / BLOCK + 2,
            "{}",
            h.blocks.len()
        );
        let numbers: Vec<usize> = h
            .iter()
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(numbers, (2000..3000).collect::<Vec<_>>());
        assert_eq!(h.iter().len(), 1000);
        assert!(h.get(999).unwrap().starts_with("2999 "));
        assert_eq!(h.get(1000), None);
        // A block taken whole keeps only what fits.
        let mut lines = Lines::default();
        for i in 0..1500 {
            lines.push(&i.to_string());
        }
        h.append(lines);
        assert_eq!(h.len(), 1000);
        assert_eq!(h.get(0), Some("500"));
        assert_eq!(h.iter().last(), Some("1499"));
    }
}
