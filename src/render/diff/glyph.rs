//! A frame's rows as the glyphs a terminal draws: each symbol with its column, width and
//! pen, made printable, and where a row's blank tail starts.

use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};

use super::pen::Pen;
use super::{Extra, Frame};

/// One thing the terminal draws: `symbol` at column `x`, covering `width` columns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Glyph<'a> {
    pub(super) x: u16,
    pub(super) width: u16,
    pub(super) symbol: &'a str,
    pub(super) pen: Pen<'a>,
}

pub(super) static BLANK_CELL: Cell = Cell::EMPTY;

/// The symbol as printed and its width. Control characters would be interpreted and zero-width
/// ones would merge into the previous cell, desynchronising our cursor model: print a space.
pub(super) fn printable(symbol: &str) -> (&str, u16) {
    if let [b' '..=b'~'] = symbol.as_bytes() {
        return (symbol, 1); // most cells: one ASCII character
    }
    if symbol.chars().any(char::is_control) {
        return (" ", 1);
    }
    match symbol.cell_width() {
        0 => (" ", 1),
        w => (symbol, w),
    }
}

/// The glyph a cell starts at column `x` of a row `width` wide: its symbol as printed and
/// its width (a grapheme cluster's as the pane's emulator gave it: a forced width).
#[inline]
pub(super) fn glyph_of(cell: &Cell, x: u16, width: u16) -> (&str, u16) {
    let (symbol, w) = match cell.diff_option {
        CellDiffOption::ForcedWidth(w) if !cell.symbol().chars().any(char::is_control) => {
            (cell.symbol(), w.get())
        }
        _ => printable(cell.symbol()),
    };
    if w > width - x {
        // A terminal would wrap it onto the next row; a space is the best we can do.
        return (" ", 1);
    }
    (symbol, w)
}

/// Splits row `y` into glyphs the way ratatui's `Buffer::diff` reads it: a wide symbol covers
/// the following cell, whose content is ignored. Only the glyphs starting in `from..`, up to
/// the first one that ends at or after `until` (`from` must be where a glyph starts).
pub(super) fn row_glyphs<'a>(
    frame: &'a Frame,
    y: u16,
    from: u16,
    until: u16,
    out: &mut Vec<Glyph<'a>>,
) {
    out.clear();
    extend_glyphs(frame, y, from, until, out);
}

pub(super) static PLAIN: Extra = Extra::PLAIN;

/// [`row_glyphs`] appended to `out`.
#[inline]
pub(super) fn extend_glyphs<'a>(
    frame: &'a Frame,
    y: u16,
    from: u16,
    until: u16,
    out: &mut Vec<Glyph<'a>>,
) {
    let width = frame.buffer.area.width;
    let row = usize::from(y) * usize::from(width);
    let mut x = from;
    while x < width && x < until {
        let i = row + usize::from(x);
        let cell = frame.buffer.content.get(i).unwrap_or(&BLANK_CELL);
        let extra = frame.extras.get(i).unwrap_or(&PLAIN);
        let (symbol, w) = glyph_of(cell, x, width);
        out.push(Glyph {
            x,
            width: w,
            symbol,
            pen: Pen::of(cell, extra),
        });
        x += w;
    }
}

/// Where the glyph covering column `at` of row `y` starts (walking from the row's start,
/// as [`row_glyphs`] does).
pub(super) fn glyph_start(buf: &Buffer, y: u16, at: u16) -> u16 {
    let width = buf.area.width;
    let row = usize::from(y) * usize::from(width);
    let mut x = 0;
    while x < at {
        let cell = buf.content.get(row + usize::from(x)).unwrap_or(&BLANK_CELL);
        let (_, w) = glyph_of(cell, x, width);
        if x + w > at {
            break;
        }
        x += w;
    }
    x
}

/// The column where row `y` ends in blank glyphs of one plain style, found from the row's
/// end cell by cell: erasing to the end of the row there paints just those.
pub(super) fn blank_tail_column(frame: &Frame, y: u16) -> u16 {
    let width = frame.buffer.area.width;
    let row = usize::from(y) * usize::from(width);
    let range = row..row + usize::from(width);
    let cells = frame.buffer.content.get(range.clone()).unwrap_or_default();
    let extras = frame.extras.get(range).unwrap_or_default();
    let pen = |x: u16| {
        let i = usize::from(x);
        Pen::of(&cells[i], extras.get(i).unwrap_or(&PLAIN))
    };
    if cells.is_empty() {
        return 0;
    }
    let tail_pen = pen(width - 1);
    if !tail_pen.plain() {
        return width;
    }
    let last = &cells[usize::from(width - 1)];
    // A space of the tail's colours and nothing else is blank in its pen: what the full
    // test below says of it, read from the fields alone (most of a row is such cells).
    let plain_space = |x: u16| {
        let cell = &cells[usize::from(x)];
        let extra = extras.get(usize::from(x)).unwrap_or(&PLAIN);
        cell.symbol() == " "
            && (cell.fg, cell.bg) == (last.fg, last.bg)
            && cell.modifier.is_empty()
            && extra.link.is_none()
            && !extra.overline
            && extra.underline_color == tail_pen.underline_color
    };
    let mut x = width;
    while x > 0 {
        let blank = plain_space(x - 1)
            || (glyph_of(&cells[usize::from(x - 1)], x - 1, width).0 == " "
                && pen(x - 1) == tail_pen);
        if !blank {
            break;
        }
        x -= 1;
    }
    x
}

/// Whether terminals may disagree on how wide `g` is: a sequence of characters (a
/// grapheme cluster) that is wide, or whose characters' own widths add up to another
/// width than its own (a terminal that draws them one by one moves further).
pub(super) fn uncertain_width(g: &Glyph) -> bool {
    use unicode_width::UnicodeWidthChar as _;
    let mut chars = g.symbol.chars();
    if chars.nth(1).is_none() {
        return false;
    }
    let sum: usize = g.symbol.chars().map(|c| c.width().unwrap_or(0)).sum();
    g.width > 1 || sum != usize::from(g.width)
}

/// Index of the first glyph of the row's trailing run of spaces in one attribute-free style
/// (the row length if none), from a whole row's glyphs: what [`blank_tail_column`] finds
/// from the cells, as the tests check. Erasing paints the background on every terminal
/// (and the foreground too in vt100's model); attributes are excluded as terminals disagree
/// on them.
#[cfg(test)]
pub(super) fn blank_tail_start(row: &[Glyph]) -> usize {
    let Some(last) = row.last() else { return 0 };
    let blank = |g: &Glyph| g.symbol == " " && g.pen == last.pen && g.pen.plain();
    row.iter().rposition(|g| !blank(g)).map_or(0, |i| i + 1)
}
