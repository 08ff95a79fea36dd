//! Turns a client's rendered UI (a ratatui [`Buffer`] plus cursor and input modes) into the
//! terminal bytes that put it on the client's screen, sending only what changed.
//!
//! Invariant: replaying `encode_full(a)` then `encode_diff(a, b)` on a terminal emulator of the
//! same size yields exactly `b`: every cell's symbol, colours and attributes (with what a ratatui
//! cell cannot hold: the underline's style and colour, an overline, a hyperlink — the frame's
//! [`Extra`] per cell), the cursor position and visibility, and the DECCKM/DECKPAM modes. It
//! chains: `encode_diff(b, c)` may follow.
//!
//! To keep diffs small, every output leaves the terminal in a state the next `encode_diff`
//! relies on: the SGR pen reset, no hyperlink open and, if the frame shows a cursor, the cursor
//! exactly there. So
//! the caller must send every output and nothing in between that moves the cursor or changes the
//! pen; after anything else (reconnect, dropped bytes) send `encode_full`.
//!
//! Wide characters follow ratatui's `Buffer` convention: a cell whose symbol is two columns wide
//! is followed by a continuation cell whose content is ignored (`Buffer::set_string` resets it).

use std::io::Write as _;
use std::sync::Arc;

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui::style::Color;

use crate::term::vt::{Link, Underline};

mod glyph;
mod pen;

use glyph::{blank_tail_column, extend_glyphs, glyph_start, row_glyphs, uncertain_width, Glyph};
#[cfg(test)]
use glyph::{blank_tail_start, printable};
#[cfg(test)]
use pen::{palette_index, ATTRS};
use pen::{sgr_params, Pen};

const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";
const HIDE_CURSOR: &[u8] = b"\x1b[?25l";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";
/// Pen reset first so the clear paints the default background; `CSI r` resets any scroll
/// region a previous program left (and homes the cursor, as does `CSI H`).
const RESET_SCREEN: &[u8] = b"\x1b[0m\x1b[r\x1b[H\x1b[2J";
const ERASE_TO_EOL: &[u8] = b"\x1b[K";
/// Mode sequences indexed by the wanted state: [off, on].
const APPLICATION_CURSOR: [&[u8]; 2] = [b"\x1b[?1l", b"\x1b[?1h"];
const APPLICATION_KEYPAD: [&[u8]; 2] = [b"\x1b>", b"\x1b="];

/// What a frame cell shows that a ratatui cell cannot hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extra {
    /// The underline's style, for a cell with `Modifier::UNDERLINED` (None there: single).
    pub underline: Underline,
    /// The underline's colour (`Color::Reset`: the text's).
    pub underline_color: Color,
    pub overline: bool,
    /// The hyperlink the cell is part of.
    pub link: Option<Arc<Link>>,
}

impl Extra {
    pub const PLAIN: Extra = Extra {
        underline: Underline::None,
        underline_color: Color::Reset,
        overline: false,
        link: None,
    };

    /// `== Extra::PLAIN`, with no link to compare.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.link.is_none()
            && !self.overline
            && self.underline == Underline::None
            && self.underline_color == Color::Reset
    }
}

/// Everything the server shows one client.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Area always at x=0, y=0; width/height = client terminal size.
    pub buffer: Buffer,
    /// Per cell of `buffer`, in its order: what else it shows.
    pub extras: Vec<Extra>,
    /// (x, y) where the cursor is shown; `None` = hidden.
    pub cursor: Option<(u16, u16)>,
    /// DECCKM (`CSI ?1h` / `CSI ?1l`) mirrored from the focused pane.
    pub application_cursor: bool,
    /// DECKPAM (`ESC =`) / DECKPNM (`ESC >`).
    pub application_keypad: bool,
}

impl Frame {
    /// A blank frame with a hidden cursor and both modes off.
    pub fn new(width: u16, height: u16) -> Frame {
        Frame {
            buffer: Buffer::empty(Rect::new(0, 0, width, height)),
            extras: vec![Extra::PLAIN; usize::from(width) * usize::from(height)],
            cursor: None,
            application_cursor: false,
            application_keypad: false,
        }
    }

    pub fn size(&self) -> (u16, u16) {
        (self.buffer.area.width, self.buffer.area.height)
    }

    /// The extras of the cells of `rect` made plain (drawn over by something other than
    /// a pane).
    pub fn plain_extras(&mut self, rect: Rect) {
        let rect = rect.intersection(self.buffer.area);
        let width = usize::from(self.buffer.area.width);
        for y in rect.y..rect.bottom() {
            let row = usize::from(y) * width;
            let cols = row + usize::from(rect.x)..row + usize::from(rect.right());
            if let Some(extras) = self.extras.get_mut(cols) {
                extras.iter_mut().for_each(|e| *e = Extra::PLAIN);
            }
        }
    }

    /// The cursor clamped to the screen as the terminal clamps a CUP, so that we track where it
    /// really is.
    fn shown_cursor(&self) -> Option<(u16, u16)> {
        let (x, y) = self.cursor?;
        let (w, h) = self.size();
        Some((x.min(w.checked_sub(1)?), y.min(h.checked_sub(1)?)))
    }
}

/// Returns the bytes that draw `next` from an unknown terminal state.
pub fn encode_full(next: &Frame) -> Vec<u8> {
    encode(None, next)
}

/// Returns the bytes that turn a terminal showing `prev` into one showing `next`; empty when
/// nothing visible changed. A size change means the terminal reflowed: redraw everything.
pub fn encode_diff(prev: &Frame, next: &Frame) -> Vec<u8> {
    match (prev.size() == next.size(), prev == next) {
        (false, _) => encode_full(next),
        (true, true) => Vec::new(),
        (true, false) => encode(Some(prev), next),
    }
}

/// Like [`encode_diff`] for frames known to differ at most in the rows marked in `rows`
/// (one flag per row), and there, if `cols` is given, only in the columns `from..to` it
/// gives for the row: only those are compared, which keeps a keystroke's frame cheap.
pub fn encode_diff_rows(
    prev: &Frame,
    next: &Frame,
    rows: &[bool],
    cols: Option<&[(u16, u16)]>,
) -> Vec<u8> {
    if prev.size() != next.size() {
        return encode_full(next);
    }
    encode_with(Some(prev), next, Some(Changed { rows, cols }), None)
}

/// The rows (and within them the columns) two frames may differ in.
#[derive(Clone, Copy)]
struct Changed<'a> {
    rows: &'a [bool],
    cols: Option<&'a [(u16, u16)]>,
}

/// Returns the bytes that turn a terminal that shows `prev` except in the rows flagged in
/// `unknown` (frames it never got, something drawn over them) into one showing `next`;
/// its cursor, its modes and those rows are taken as unknown: the rows are erased and
/// drawn whole, the modes set. Frames of one size (else a full frame).
pub fn encode_resume(prev: &Frame, unknown: &[bool], next: &Frame) -> Vec<u8> {
    if prev.size() != next.size() {
        return encode_full(next);
    }
    let mut shown = prev.clone();
    let width = usize::from(shown.buffer.area.width);
    for (y, _) in unknown.iter().enumerate().filter(|(_, u)| **u) {
        let row = y * width..(y + 1) * width;
        if let Some(cells) = shown.buffer.content.get_mut(row.clone()) {
            cells.fill(ratatui::buffer::Cell::default());
        }
        if let Some(extras) = shown.extras.get_mut(row) {
            extras.fill(Extra::PLAIN);
        }
    }
    shown.cursor = None;
    encode_with(Some(&shown), next, None, Some(unknown))
}

/// One flag per row of two frames of one size: whether the row differs.
pub fn changed_rows(prev: &Frame, next: &Frame) -> Vec<bool> {
    let (width, height) = (usize::from(next.size().0), usize::from(next.size().1));
    if prev.size() != next.size() {
        return vec![true; height];
    }
    (0..height)
        .map(|y| {
            let row = y * width..(y + 1) * width;
            prev.buffer.content.get(row.clone()) != next.buffer.content.get(row.clone())
                || prev.extras.get(row.clone()) != next.extras.get(row)
        })
        .collect()
}

/// `prev` = `None` means the screen state is unknown, so it is cleared first.
fn encode(prev: Option<&Frame>, next: &Frame) -> Vec<u8> {
    encode_with(prev, next, None, None)
}

/// `erase`: rows the terminal is to be cleared of first (as blank as in `prev`), for a
/// terminal whose modes are not known either.
fn encode_with(
    prev: Option<&Frame>,
    next: &Frame,
    changed: Option<Changed>,
    erase: Option<&[bool]>,
) -> Vec<u8> {
    let was_shown = prev.and_then(Frame::shown_cursor);
    let cursor = match (prev, was_shown) {
        (None, _) => Cursor::At(0, 0), // where RESET_SCREEN leaves it
        (Some(_), Some((x, y))) => Cursor::At(x, y),
        (Some(_), None) => Cursor::Unknown,
    };
    let mut enc = Encoder {
        out: Vec::new(),
        pen: Pen::DEFAULT,
        cursor,
        width: next.size().0,
        moves: 0,
    };
    let blank;
    let shown = match prev {
        Some(prev) => prev,
        None => {
            blank = Frame::new(next.size().0, next.size().1); // what RESET_SCREEN leaves
            &blank
        }
    };
    enc.draw(shown, next, changed);
    enc.set_pen(Pen::DEFAULT);
    // (Unknown modes are set whatever they were.)
    let known = prev.filter(|_| erase.is_none());
    // What cannot tear goes as it is; the rest in one synchronized update.
    let bare = known.is_some_and(|p| in_place(p, next, &enc));
    let mut out = Vec::with_capacity(enc.out.len() + 64);
    if !bare {
        out.extend_from_slice(SYNC_BEGIN);
    }
    let start = out.len();
    // Hide while drawing, or the cursor visibly jumps around on terminals without sync updates.
    let hid = !bare
        && (prev.is_none() || erase.is_some() || (!enc.out.is_empty() && was_shown.is_some()));
    if hid {
        out.extend_from_slice(HIDE_CURSOR);
    }
    if prev.is_none() {
        out.extend_from_slice(RESET_SCREEN);
    }
    for (y, _) in erase
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter(|(_, e)| **e)
    {
        let _ = write!(out, "\x1b[{}H\x1b[0m\x1b[2K", y + 1);
    }
    let (cursor_keys, keypad) = (next.application_cursor, next.application_keypad);
    if known.map(|p| p.application_cursor) != Some(cursor_keys) {
        out.extend_from_slice(APPLICATION_CURSOR[usize::from(cursor_keys)]);
    }
    if known.map(|p| p.application_keypad) != Some(keypad) {
        out.extend_from_slice(APPLICATION_KEYPAD[usize::from(keypad)]);
    }
    out.extend_from_slice(&enc.out);
    match next.shown_cursor() {
        Some((x, y)) => {
            if enc.cursor != Cursor::At(x, y) {
                let _ = write!(out, "\x1b[{};{}H", u32::from(y) + 1, u32::from(x) + 1);
            }
            if hid || was_shown.is_none() {
                out.extend_from_slice(SHOW_CURSOR);
            }
        }
        None if was_shown.is_some() && !hid => out.extend_from_slice(HIDE_CURSOR),
        None => {}
    }
    if out.len() == start {
        return Vec::new(); // only invisible differences, e.g. in continuation cells
    }
    if !bare {
        out.extend_from_slice(SYNC_END);
    }
    out
}

/// Whether what `enc` drew over `prev` shows `next` as it is, without synchronized output
/// or the cursor hidden around it: the same modes, and a visible cursor that only moves
/// (then no more than the move is sent) or stays where the drawing leaves it, all of it
/// printed from the cursor on (a keystroke's echo as the program printed it: the
/// character, not 29 bytes around it); or a hidden cursor and one stretch of a row.
/// Nothing on screen can then tear, or show the cursor where it does not belong.
fn in_place(prev: &Frame, next: &Frame, enc: &Encoder) -> bool {
    if prev.application_cursor != next.application_cursor
        || prev.application_keypad != next.application_keypad
    {
        return false;
    }
    match (prev.shown_cursor(), next.shown_cursor()) {
        (Some(_), Some((x, y))) => {
            enc.out.is_empty() || (enc.moves == 0 && enc.cursor == Cursor::At(x, y))
        }
        (None, None) => enc.moves <= 1,
        _ => false,
    }
}

/// Where the terminal's cursor is, as far as the bytes emitted so far tell.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cursor {
    Unknown,
    At(u16, u16),
    /// On this row, but its column must not be used for relative moves: either we just printed
    /// into the last column (pending wrap, where terminals disagree on what relative moves do)
    /// or printed an emoji sequence whose width terminals disagree on.
    RowOnly(u16),
}

fn digits(n: u32) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

enum Move {
    Cup,
    /// Forward by n columns (0: stay).
    Cuf(u16),
    /// To the start of the next row. Not a bare LF, which the tty may turn into CRLF (ONLCR).
    /// The target row exists, so the LF never scrolls.
    CrLf,
}

/// The shortest cursor movement from `from` to (x, y) and its length in bytes. Glyphs are
/// printed left to right, so moves within a row only go forward.
fn plan_move(from: Cursor, x: u16, y: u16) -> (Move, usize) {
    let cup = 4 + digits(u32::from(x) + 1) + digits(u32::from(y) + 1);
    match from {
        Cursor::At(fx, fy) if fy == y && fx <= x => {
            let cuf = match x - fx {
                0 => 0,
                1 => 3,
                n => 3 + digits(n.into()),
            };
            if cuf < cup {
                (Move::Cuf(x - fx), cuf)
            } else {
                (Move::Cup, cup)
            }
        }
        Cursor::At(_, fy) | Cursor::RowOnly(fy) if x == 0 && u32::from(fy) + 1 == u32::from(y) => {
            (Move::CrLf, 2)
        }
        _ => (Move::Cup, cup),
    }
}

struct Encoder<'a> {
    out: Vec<u8>,
    pen: Pen<'a>,
    cursor: Cursor,
    width: u16,
    /// Cursor movements emitted (each starts a stretch printed elsewhere).
    moves: u16,
}

impl<'a> Encoder<'a> {
    /// Draws the rows of `next` that differ from `prev`, which the terminal shows.
    ///
    /// Only the stretch of a row whose cells differ is split into glyphs, from the glyph
    /// covering its first cell to where both rows' glyphs meet again after its last: the
    /// glyphs around it are the same in both (made of the same cells), so unchanged. An
    /// echoed keystroke changes one cell of a row.
    fn draw(&mut self, prev: &'a Frame, next: &'a Frame, within: Option<Changed>) {
        let width = usize::from(self.width);
        let (mut old, mut new, mut changed) = (
            Vec::with_capacity(width),
            Vec::with_capacity(width),
            Vec::with_capacity(width),
        );
        for y in 0..next.buffer.area.height {
            let rows = within.map(|c| c.rows);
            if rows.is_some_and(|r| !r.get(usize::from(y)).copied().unwrap_or(true)) {
                continue;
            }
            // Past these columns the row is the same in both (all of it when not known).
            let (lo, hi) = within
                .and_then(|c| c.cols?.get(usize::from(y)).copied())
                .map_or((0, width), |(lo, hi)| {
                    (usize::from(lo).min(width), usize::from(hi).min(width))
                });
            let row = usize::from(y) * width..(usize::from(y) + 1) * width;
            let (Some(before), Some(after), Some(was), Some(is)) = (
                prev.buffer.content.get(row.clone()),
                next.buffer.content.get(row.clone()),
                prev.extras.get(row.clone()),
                next.extras.get(row),
            ) else {
                continue;
            };
            // (Most cells of a row are blank in both: told apart without comparing
            // their symbols as strings.)
            let same_cell = |a: &Cell, b: &Cell| match (super::is_blank(a), super::is_blank(b)) {
                (true, true) => true,
                (false, false) => a == b,
                _ => false,
            };
            let same_extra = |a: &Extra, b: &Extra| (a.is_plain() && b.is_plain()) || a == b;
            let differ =
                |i: &usize| !same_cell(&before[*i], &after[*i]) || !same_extra(&was[*i], &is[*i]);
            let Some(first) = (lo..hi).find(differ) else {
                continue;
            };
            let last = (lo..hi).rev().find(differ).unwrap_or(first) + 1;
            // Columns fit in u16: the row is `self.width` wide.
            let (first, last) = (first as u16, last as u16);
            // The cells before `first` are the same in both, so are the glyph boundaries.
            let from = glyph_start(&next.buffer, y, first);
            row_glyphs(prev, y, from, last, &mut old);
            row_glyphs(next, y, from, last, &mut new);
            // A wide glyph across `last` in one row only: go on until both meet.
            loop {
                let end = |g: &[Glyph]| g.last().map_or(from, |g| g.x + g.width);
                let (old_end, new_end) = (end(&old), end(&new));
                match old_end.cmp(&new_end) {
                    std::cmp::Ordering::Less => {
                        extend_glyphs(prev, y, old_end, old_end + 1, &mut old)
                    }
                    std::cmp::Ordering::Greater => {
                        extend_glyphs(next, y, new_end, new_end + 1, &mut new)
                    }
                    std::cmp::Ordering::Equal => break,
                }
            }
            // Where the row's blank tail starts among `new`, looked for only when a changed
            // glyph could be in it (a keystroke's is not: then the row is not scanned).
            let mut tail = None;
            let mut tail_of = || {
                *tail.get_or_insert_with(|| {
                    let column = blank_tail_column(next, y);
                    new.iter().position(|g| g.x >= column).unwrap_or(new.len())
                })
            };
            self.draw_row(y, &old, &new, &mut tail_of, &mut changed);
        }
    }

    /// Prints, left to right, each glyph of `next` that the terminal does not already show at
    /// the same place. Printing over part of an old wide glyph makes the terminal blank all of
    /// it; every column so blanked belongs to another changed glyph (an unchanged one cannot
    /// overlap the old glyph), which is printed later or was already printed before the damage
    /// could happen, since damage only reaches glyphs overlapping the one being printed.
    /// `next` may be a stretch of the row; `tail` gives the index in it where the row's
    /// blank end begins (its length when that is beyond it).
    fn draw_row(
        &mut self,
        y: u16,
        prev: &[Glyph],
        next: &[Glyph<'a>],
        tail: &mut dyn FnMut() -> usize,
        changed: &mut Vec<bool>,
    ) {
        changed.clear();
        let mut p = 0;
        for g in next {
            while prev.get(p).is_some_and(|o| o.x < g.x) {
                p += 1;
            }
            changed.push(prev.get(p) != Some(g));
        }
        let mut last = None;
        for (i, g) in next.iter().enumerate() {
            if !changed.get(i).copied().unwrap_or_default() {
                continue;
            }
            self.move_to(next, last, i, y);
            self.set_pen(g.pen);
            // (Only a blank glyph in a plain pen can be in the blank tail.)
            let blank = g.symbol == " " && g.pen.plain();
            if blank && i >= tail() && erase_pays_off(changed.get(i..).unwrap_or_default()) {
                // The rest of the row is blank in one style: erase it rather than print it.
                self.out.extend_from_slice(ERASE_TO_EOL);
                return;
            }
            self.out.extend_from_slice(g.symbol.as_bytes());
            last = Some(i);
            let end = g.x + g.width;
            self.cursor = if end >= self.width || uncertain_width(g) {
                Cursor::RowOnly(y)
            } else {
                Cursor::At(end, y)
            };
        }
    }

    /// Puts the cursor on glyph `i` of row `y`. When the cursor sits right after glyph `last`,
    /// reprinting the unchanged glyphs in between may be shorter than a movement.
    fn move_to(&mut self, row: &[Glyph], last: Option<usize>, i: usize, y: u16) {
        let Some(&Glyph { x, .. }) = row.get(i) else {
            return;
        };
        let (mv, cost) = plan_move(self.cursor, x, y);
        let gap = match (self.cursor, last) {
            (Cursor::At(..), Some(l)) => row.get(l + 1..i).unwrap_or_default(),
            _ => &[],
        };
        let gap_bytes: usize = gap.iter().map(|g| g.symbol.len()).sum();
        let reprint = gap
            .iter()
            .all(|g| g.width == 1 && g.pen == self.pen && !uncertain_width(g));
        let out = &mut self.out;
        if !gap.is_empty() && reprint && gap_bytes < cost {
            gap.iter()
                .for_each(|g| out.extend_from_slice(g.symbol.as_bytes()));
        } else {
            if !matches!(mv, Move::Cuf(0)) {
                self.moves = self.moves.saturating_add(1);
            }
            let _ = match mv {
                Move::Cup => write!(out, "\x1b[{};{}H", u32::from(y) + 1, u32::from(x) + 1),
                Move::Cuf(0) => Ok(()),
                Move::Cuf(1) => write!(out, "\x1b[C"),
                Move::Cuf(n) => write!(out, "\x1b[{n}C"),
                Move::CrLf => write!(out, "\r\n"),
            };
        }
        self.cursor = Cursor::At(x, y);
    }

    fn set_pen(&mut self, to: Pen<'a>) {
        if !self.pen.same_sgr(&to) {
            // Turning attributes off one by one can cost more than starting over.
            let (mut params, mut reset) = (Vec::with_capacity(16), vec![b'0']);
            sgr_params(&mut params, self.pen, to);
            sgr_params(&mut reset, Pen::DEFAULT, to);
            if reset.len() < params.len() {
                params = reset;
            }
            self.out.extend_from_slice(b"\x1b[");
            self.out.extend_from_slice(&params);
            self.out.push(b'm');
        }
        if !self.pen.same_link(&to) {
            // (A link's id and URI are printable ASCII: `Link::parse` takes no other.)
            let _ = match to.link {
                Some(link) if link.id().is_empty() => {
                    write!(self.out, "\x1b]8;;{}\x1b\\", link.uri())
                }
                Some(link) => write!(self.out, "\x1b]8;id={};{}\x1b\\", link.id(), link.uri()),
                None => write!(self.out, "\x1b]8;;\x1b\\"),
            };
        }
        self.pen = to;
    }
}

/// Whether `CSI K` (3 bytes) beats printing each changed blank (1 byte each, plus at least 3
/// bytes of movement per skipped stretch).
fn erase_pays_off(changed: &[bool]) -> bool {
    let count = changed.iter().filter(|&&c| c).count();
    let runs = changed.windows(2).filter(|w| !w[0] && w[1]).count();
    count + 3 * runs > ERASE_TO_EOL.len()
}

#[cfg(test)]
mod tests;
