//! Scrollback, kept compactly. vt100 stores every cell of every scrollback row (about 30
//! bytes a cell: 40 MB for 10,000 lines of a wide pane); here a line is the text it shows
//! with SGR sequences for its colours — about a byte per character. Rows leave vt100's
//! scrollback for this store as soon as they scroll off the screen.

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

#[derive(Clone, Copy, PartialEq, Eq)]
struct Pen {
    fg: vt100::Color,
    bg: vt100::Color,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
}

impl Pen {
    const DEFAULT: Pen = Pen {
        fg: vt100::Color::Default,
        bg: vt100::Color::Default,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        inverse: false,
    };

    fn of(cell: &vt100::Cell) -> Pen {
        Pen {
            fg: cell.fgcolor(),
            bg: cell.bgcolor(),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        }
    }

    /// The SGR sequence that sets exactly this pen (from any other).
    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        out.push_str("\x1b[0");
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline, "4"),
            (self.inverse, "7"),
        ] {
            if on {
                out.push(';');
                out.push_str(code);
            }
        }
        // The 16 basic colours in their short forms (30–37, 90–97; 40–47, 100–107).
        for (color, base, low, high) in [(self.fg, 38, 30, 90), (self.bg, 48, 40, 100)] {
            let _ = match color {
                vt100::Color::Default => Ok(()),
                vt100::Color::Idx(i) if i < 8 => write!(out, ";{}", low + u16::from(i)),
                vt100::Color::Idx(i) if i < 16 => write!(out, ";{}", high + u16::from(i) - 8),
                vt100::Color::Idx(i) => write!(out, ";{base};5;{i}"),
                vt100::Color::Rgb(r, g, b) => write!(out, ";{base};2;{r};{g};{b}"),
            };
        }
        out.push('m');
    }
}

/// Row `row` of `screen` (as it is in view) as a standalone line: text and SGR only,
/// trailing blanks left out.
pub fn format_row(screen: &vt100::Screen, row: u16, cols: u16) -> String {
    let mut out = String::new();
    let mut pen = Pen::DEFAULT;
    // Where the line ends once trailing default blanks are cut.
    let mut end = 0;
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            break;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let p = Pen::of(cell);
        if p != pen {
            p.write(&mut out);
            pen = p;
        }
        if cell.has_contents() {
            out.push_str(cell.contents());
        } else {
            out.push(' ');
        }
        if cell.has_contents() || p != Pen::DEFAULT {
            end = out.len();
        }
    }
    out.truncate(end);
    out
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

    fn screen_of(bytes: &[u8]) -> vt100::Parser {
        let mut p = vt100::Parser::new(
            std::num::NonZeroU16::new(3).unwrap(),
            std::num::NonZeroU16::new(20).unwrap(),
            0,
        );
        p.process(bytes);
        p
    }

    #[test]
    fn a_row_becomes_a_line_that_redraws_the_same_cells_anywhere() {
        let p = screen_of(
            b"\x1b[41mA\x1b[0m  \x1b[41mB\x1b[0m \x1b[1;38;2;1;2;3mrgb\x1b[0m \xe6\xbc\xa2",
        );
        let line = format_row(p.screen(), 0, 20);
        assert_eq!(plain(&line), "A  B rgb \u{6f22}");
        // Drawn on another row of another screen, every cell matches.
        let mut q = screen_of(b"");
        q.process(format!("\x1b[3;1H{line}").as_bytes());
        for col in 0..20 {
            let (a, b) = (
                p.screen().cell(0, col).unwrap(),
                q.screen().cell(2, col).unwrap(),
            );
            assert_eq!(a.contents(), b.contents(), "col {col}");
            assert!(Pen::of(a) == Pen::of(b), "col {col}");
        }
    }

    #[test]
    fn plain_text_keeps_the_gaps_cursor_moves_skip() {
        assert_eq!(plain("a\x1b[3Cb\x1b[C\x1b[31mc\x1b[2X  "), "a   b c");
        let p = screen_of(b"x    \x1b[44m  \x1b[0m  y");
        let fast = p.screen().rows_formatted(0, 20).next().unwrap();
        assert_eq!(plain(&fast), "x        y");
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
