//! Screens and rows as text: plain, as a history line, and as the escape sequences that
//! redraw them exactly (for a live handoff's image).

use super::cell::{Cell, Color, Ink, Pen, Underline};
use super::grid::Row;
use super::links::{self, Links};
use super::{
    MouseProtocolEncoding, MouseProtocolMode, Screen, APP_CURSOR, APP_KEYPAD, BRACKETED_PASTE,
};

/// Where formatted text goes: a `String`, or bytes checked to be UTF-8 once at the end.
pub(super) trait Sink {
    fn put(&mut self, s: &str);
    /// One ASCII character (a byte below 0x80).
    fn put_ascii(&mut self, b: u8);
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
    fn put_ascii(&mut self, b: u8) {
        self.push(char::from(b));
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    fn put_ascii(&mut self, b: u8) {
        self.push(b);
    }
}

/// After a wrapped row is drawn (the cursor waits past its last cell), wraps to the next
/// row and leaves its first cell empty: a blank wraps, is stepped back over and erased.
/// Whatever the next row starts with (text or a gap) is then drawn at its first column.
const WRAP: &str = " \x08\x1b[X";

pub(super) fn push_num(out: &mut impl Sink, n: u16) {
    let mut buf = [0u8; 5];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &buf[i..] {
        out.put_ascii(d);
    }
}

/// The bytes that draw `text` (one cell wide) in `cell`'s pen where the cursor is,
/// underlined if asked, the pen set back to the default after: a client showing a
/// character ahead of the host, or taking it back (a blank).
pub fn draw_in_pen_of(cell: &Cell, text: &str, underlined: bool, out: &mut Vec<u8>) {
    sgr(cell.pen(), out);
    if underlined {
        out.put("\x1b[4m");
    }
    out.put(text);
    out.put("\x1b[0m");
}

/// The SGR sequence that sets exactly `pen` (but its link, which is no SGR), from any
/// other.
pub fn sgr(pen: Pen, out: &mut impl Sink) {
    out.put("\x1b[0");
    // (Most pens have no attribute at all.)
    if pen.flags != 0 {
        for (on, code) in [
            (pen.bold(), ";1"),
            (pen.dim(), ";2"),
            (pen.italic(), ";3"),
            (pen.blink(), ";5"),
            (pen.rapid_blink(), ";6"),
            (pen.inverse(), ";7"),
            (pen.hidden(), ";8"),
            (pen.strikethrough(), ";9"),
            (pen.overline(), ";53"),
        ] {
            if on {
                out.put(code);
            }
        }
        match pen.underline_style() {
            Underline::None => {}
            Underline::Single => out.put(";4"),
            style => {
                out.put(";4:");
                push_num(out, style.sgr());
            }
        }
    }
    // The 16 basic colours in their short forms (30–37, 90–97; 40–47, 100–107).
    for (color, base, low, high) in [(pen.fg, 38, 30, 90), (pen.bg, 48, 40, 100)] {
        match color {
            Color::Default => {}
            Color::Idx(i) => {
                out.put(";");
                match i {
                    0..8 => push_num(out, low + u16::from(i)),
                    8..16 => push_num(out, high + u16::from(i) - 8),
                    _ => {
                        push_num(out, base);
                        out.put(";5;");
                        push_num(out, u16::from(i));
                    }
                }
            }
            Color::Rgb(r, g, b) => {
                out.put(";");
                push_num(out, base);
                out.put(";2");
                for v in [r, g, b] {
                    out.put(";");
                    push_num(out, u16::from(v));
                }
            }
        }
    }
    // The underline's colour in sub-parameters: a terminal that does not know SGR 58
    // skips it whole (the semicolon form would have it take `5` for blink).
    match pen.ul {
        Color::Default => {}
        Color::Idx(i) => {
            out.put(";58:5:");
            push_num(out, u16::from(i));
        }
        Color::Rgb(r, g, b) => {
            out.put(";58:2:");
            for v in [r, g, b] {
                out.put(":");
                push_num(out, u16::from(v));
            }
        }
    }
    out.put("m");
}

/// From the link `from` to the link `to` (ids in `links`; 0: none): the OSC 8 sequence
/// that ends one and opens the other. A link the table no longer has is none.
fn relink(links: &Links, from: u16, to: u16, out: &mut impl Sink) {
    match links.get(to) {
        Some(link) => link.open(out),
        None if from != 0 => out.put(links::CLOSE),
        None => {}
    }
}

fn push_cell(out: &mut String, cell: &Cell) {
    match cell.ascii() {
        Some(b) => out.push(char::from(b)),
        None => out.push_str(cell.contents()),
    }
}

/// A row leaving the screen, as a history line (built in `out`): its text from the
/// default pen, SGR where the pen changes, an empty cell as a blank; trailing blank
/// default cells cut. Its links (ids in `links`) are OSC 8 sequences, the last one ended
/// at the line's end, so the line stands on its own. Every row of a long output passes
/// through here: ASCII first.
pub(super) fn line<'a>(row: &Row, links: &Links, out: &'a mut Vec<u8>) -> &'a str {
    out.clear();
    let cells = row.used_cells();
    out.reserve(cells.len());
    let mut ink = Ink::DEFAULT;
    let mut end = 0;
    // The link open where the line ends so far.
    let mut open = 0;
    let mut i = 0;
    while i < cells.len() {
        let cell = &cells[i];
        if cell.ascii().is_some() {
            if cell.ink() != ink {
                repen(links, ink, cell.ink(), out);
                ink = cell.ink();
            }
            // The run of ASCII characters drawn with this ink, in one go.
            let run = cells[i + 1..]
                .iter()
                .position(|c| c.ascii().is_none() || c.ink() != ink)
                .map_or(cells.len(), |n| i + 1 + n);
            out.extend(cells[i..run].iter().map(Cell::ascii_byte));
            i = run;
            end = out.len();
            open = ink.link();
            continue;
        }
        i += 1;
        if cell.is_wide_continuation() {
            continue;
        }
        if cell.ink() != ink {
            repen(links, ink, cell.ink(), out);
            ink = cell.ink();
        }
        if cell.has_contents() {
            out.extend_from_slice(cell.bytes());
        } else {
            out.push(b' ');
            if ink == Ink::DEFAULT {
                continue;
            }
        }
        end = out.len();
        open = ink.link();
    }
    out.truncate(end);
    if links.get(open).is_some() {
        out.extend_from_slice(links::CLOSE.as_bytes());
    }
    // Made of whole characters: the check cannot fail.
    std::str::from_utf8(out).unwrap_or_default()
}

/// The SGR and OSC 8 sequences from ink `from` to ink `to`.
fn repen(links: &Links, from: Ink, to: Ink, out: &mut impl Sink) {
    if from.without_link() != to.without_link() {
        sgr(to.pen(), out);
    }
    if from.link() != to.link() {
        relink(links, from.link(), to.link(), out);
    }
}

/// Cells `start..start + width` of `row`, drawn exactly from the default pen at the
/// row's first column: empty cells are skipped (CUF) or erased with their pen (ECH),
/// so they stay empty; trailing empty default cells are left out; a link (ids in
/// `links`) still open at the end is ended.
pub(super) fn write_exact(out: &mut String, row: &Row, links: &Links, start: u16, width: u16) {
    let cells = row.used_cells();
    let end = usize::from(start.saturating_add(width)).min(cells.len());
    let cells = cells.get(usize::from(start)..end).unwrap_or(&[]);
    let mut ink = Ink::DEFAULT;
    // Empty default cells not yet skipped.
    let mut gap: u16 = 0;
    let mut i = 0;
    while i < cells.len() {
        let cell = &cells[i];
        if cell.is_wide_continuation() {
            i += 1;
            continue;
        }
        let p = cell.ink();
        if !cell.has_contents() && p == Ink::DEFAULT {
            gap += 1;
            i += 1;
            continue;
        }
        if gap > 0 {
            out.push_str("\x1b[");
            push_num(out, gap);
            out.push('C');
            gap = 0;
        }
        if p != ink {
            repen(links, ink, p, out);
            ink = p;
        }
        if cell.has_contents() {
            push_cell(out, cell);
            i += 1;
        } else {
            let run = cells[i..]
                .iter()
                .take_while(|c| !c.has_contents() && !c.is_wide_continuation() && c.ink() == p)
                .count() as u16;
            out.push_str("\x1b[");
            push_num(out, run);
            out.push_str("X\x1b[");
            push_num(out, run);
            out.push('C');
            i += usize::from(run);
        }
    }
    if links.get(ink.link()).is_some() {
        out.push_str(links::CLOSE);
    }
}

/// Plain text of cells `start..start + width`: empty cells as blanks, trailing empty
/// cells left out.
fn write_plain(out: &mut String, row: &Row, start: u16, width: u16) {
    let cells = row.used_cells();
    let end = usize::from(start.saturating_add(width)).min(cells.len());
    let cells = cells.get(usize::from(start)..end).unwrap_or(&[]);
    let last = cells
        .iter()
        .rposition(Cell::has_contents)
        .map_or(0, |i| i + 1);
    for cell in &cells[..last] {
        if cell.is_wide_continuation() {
            continue;
        }
        if cell.has_contents() {
            push_cell(out, cell);
        } else {
            out.push(' ');
        }
    }
}

impl Screen {
    /// Row `row` of the shown screen as a history line would keep it.
    pub fn line(&self, row: u16) -> String {
        self.grid()
            .row(row)
            .map(|r| line(r, &self.links, &mut Vec::new()).to_string())
            .unwrap_or_default()
    }

    /// Row `row` of the shown screen as plain text; `trim` cuts its trailing blanks.
    pub fn row_plain(&self, row: u16, trim: bool) -> String {
        let mut s = String::new();
        if let Some(r) = self.grid().row(row) {
            write_plain(&mut s, r, 0, self.size().1);
        }
        if trim {
            s.truncate(s.trim_end().len());
        }
        s
    }

    /// The shown screen's rows as plain text (columns `start..start + width`).
    pub fn rows(&self, start: u16, width: u16) -> impl Iterator<Item = String> + '_ {
        self.grid().rows().map(move |row| {
            let mut s = String::new();
            write_plain(&mut s, row, start, width);
            s
        })
    }

    /// The shown screen's rows, each as sequences that draw it exactly from the default
    /// pen at its first column.
    pub fn rows_formatted(&self, start: u16, width: u16) -> impl Iterator<Item = String> + '_ {
        self.grid().rows().map(move |row| {
            let mut s = String::new();
            write_exact(&mut s, row, &self.links, start, width);
            s
        })
    }

    /// The shown screen as plain text: a wrapped row runs on into the next, the others
    /// end with a newline; trailing empty rows are left out.
    pub fn contents(&self) -> String {
        let mut out = String::new();
        let cols = self.size().1;
        let mut wrapping = false;
        for row in self.grid().rows() {
            let before = out.len();
            write_plain(&mut out, row, 0, cols);
            // An empty row continuing a wrapped one ends a line of its own.
            if wrapping && out.len() == before {
                out.push('\n');
            }
            if !row.wrapped() {
                out.push('\n');
            }
            wrapping = row.wrapped();
        }
        let trimmed = out.trim_end_matches('\n').len();
        out.truncate(trimmed);
        out
    }

    /// Sequences that, on a cleared screen of this size, redraw the shown screen and
    /// put the cursor and pen back.
    pub fn contents_formatted(&self) -> String {
        let mut out = String::from("\x1b[H\x1b[J");
        let cols = self.size().1;
        let mut prev_wrapped = false;
        for (i, row) in self.grid().rows().enumerate() {
            out.push_str("\x1b[0m");
            if prev_wrapped {
                self.wrap_into(i as u16, &mut out);
            } else {
                cup(&mut out, i as u16, 0);
            }
            write_exact(&mut out, row, &self.links, 0, cols);
            prev_wrapped = row.wrapped();
        }
        out.push_str("\x1b[0m");
        out.push_str(&self.cursor_state_formatted());
        out.push_str(&self.attributes_formatted());
        out
    }

    /// After wrapped row `row - 1` was drawn: goes on to row `row` so that the row above
    /// stays wrapped. Its last cell is empty when a wide character that did not fit there
    /// went on to `row`: a wide blank drawn in the last column wraps the same way, and is
    /// erased again.
    pub fn wrap_into(&self, row: u16, out: &mut String) {
        let cols = self.size().1;
        let padded = row > 0
            && self
                .cell(row - 1, cols - 1)
                .is_some_and(|c| !c.has_contents() && !c.is_wide_continuation());
        if padded && cols > 1 {
            cup(out, row - 1, cols - 1);
            out.push_str("\u{3000}\r\x1b[2X");
        } else {
            out.push_str(WRAP);
        }
    }

    /// Sets the scroll region and origin mode, moves the cursor where it is (a pending
    /// wrap is made again by redrawing the last cell) and shows or hides it.
    pub fn cursor_state_formatted(&self) -> String {
        let mut out = String::new();
        let (rows, cols) = self.size();
        let (top, bottom) = self.scroll_region();
        if (top, bottom) != (0, rows - 1) {
            out.push_str("\x1b[");
            push_num(&mut out, top + 1);
            out.push(';');
            push_num(&mut out, bottom + 1);
            out.push('r');
        }
        // Rows count from the region's top in origin mode. (A cursor outside the region
        // in origin mode, left by restoring a cursor saved elsewhere, cannot be placed
        // again: there the position is kept and origin mode is not.)
        let (at, col) = self.cursor_position();
        let origin = self.origin_mode() && (top..=bottom).contains(&at);
        let row = if origin {
            out.push_str("\x1b[?6h");
            at - top
        } else {
            at
        };
        if col >= cols {
            // The last character again: a wide one starts a column earlier.
            let last = match self.cell(at, cols - 1) {
                Some(c) if c.is_wide_continuation() && cols > 1 => cols - 2,
                _ => cols - 1,
            };
            cup(&mut out, row, last);
            if let Some(cell) = self.cell(at, last) {
                if cell.has_contents() {
                    sgr(cell.pen(), &mut out);
                    relink(&self.links, 0, cell.link(), &mut out);
                    push_cell(&mut out, cell);
                    relink(&self.links, cell.link(), 0, &mut out);
                } else {
                    // A blank, then erased again behind the saved cursor (DECSC keeps
                    // the pending wrap).
                    out.push_str(" \x1b7\x08");
                    sgr(cell.pen(), &mut out);
                    out.push_str("\x1b[X\x1b8");
                }
            }
        } else {
            cup(&mut out, row, col);
        }
        out.push_str(if self.hide_cursor() {
            "\x1b[?25l"
        } else {
            "\x1b[?25h"
        });
        out
    }

    /// The pen, as SGR, and the link it draws, as OSC 8.
    pub fn attributes_formatted(&self) -> String {
        let mut out = String::new();
        sgr(self.pen, &mut out);
        relink(&self.links, 0, self.pen.link, &mut out);
        out
    }

    /// The input modes that are on, as the sequences that set them.
    pub fn input_mode_formatted(&self) -> String {
        let mut out = String::new();
        if self.modes & APP_KEYPAD != 0 {
            out.push_str("\x1b=");
        }
        if self.modes & APP_CURSOR != 0 {
            out.push_str("\x1b[?1h");
        }
        if self.modes & BRACKETED_PASTE != 0 {
            out.push_str("\x1b[?2004h");
        }
        out.push_str(match self.mouse_mode {
            MouseProtocolMode::None => "",
            MouseProtocolMode::Press => "\x1b[?9h",
            MouseProtocolMode::PressRelease => "\x1b[?1000h",
            MouseProtocolMode::ButtonMotion => "\x1b[?1002h",
            MouseProtocolMode::AnyMotion => "\x1b[?1003h",
        });
        out.push_str(match self.mouse_encoding {
            MouseProtocolEncoding::Default => "",
            MouseProtocolEncoding::Utf8 => "\x1b[?1005h",
            MouseProtocolEncoding::Sgr => "\x1b[?1006h",
        });
        out
    }
}

pub(super) fn cup(out: &mut String, row: u16, col: u16) {
    out.push_str("\x1b[");
    push_num(out, row.saturating_add(1));
    out.push(';');
    push_num(out, col.saturating_add(1));
    out.push('H');
}
