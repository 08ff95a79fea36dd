//! One cell of the screen and the pen it was drawn with, kept small: the text inline
//! (a character and the marks combined with it), colours and attributes in bytes.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Color {
    #[default]
    Default,
    Idx(u8),
    Rgb(u8, u8, u8),
}

pub(super) const BOLD: u8 = 1;
pub(super) const DIM: u8 = 2;
pub(super) const ITALIC: u8 = 4;
pub(super) const UNDERLINE: u8 = 8;
pub(super) const INVERSE: u8 = 16;

/// The drawing attributes a cell takes from the pen that drew or erased it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Pen {
    pub fg: Color,
    pub bg: Color,
    pub flags: u8,
}

impl Pen {
    pub const DEFAULT: Pen = Pen {
        fg: Color::Default,
        bg: Color::Default,
        flags: 0,
    };

    pub fn bold(&self) -> bool {
        self.flags & BOLD != 0
    }
    pub fn dim(&self) -> bool {
        self.flags & DIM != 0
    }
    pub fn italic(&self) -> bool {
        self.flags & ITALIC != 0
    }
    pub fn underline(&self) -> bool {
        self.flags & UNDERLINE != 0
    }
    pub fn inverse(&self) -> bool {
        self.flags & INVERSE != 0
    }
}

/// A pen packed in a word, as cells keep it: colours in 26 bits each (a 2-bit kind and
/// 24 bits of index or RGB), then the attribute flags. Copied and compared at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Ink(u64);

impl Ink {
    pub const DEFAULT: Ink = Ink(0);

    pub fn pen(self) -> Pen {
        fn color(v: u64) -> Color {
            match v >> 24 {
                1 => Color::Idx(v as u8),
                2 => Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8),
                _ => Color::Default,
            }
        }
        Pen {
            fg: color(self.0 & 0x3ff_ffff),
            bg: color((self.0 >> 26) & 0x3ff_ffff),
            flags: (self.0 >> 52) as u8,
        }
    }
}

impl Pen {
    pub fn ink(&self) -> Ink {
        fn bits(c: Color) -> u64 {
            match c {
                Color::Default => 0,
                Color::Idx(i) => 1 << 24 | u64::from(i),
                Color::Rgb(r, g, b) => {
                    2 << 24 | u64::from(r) << 16 | u64::from(g) << 8 | u64::from(b)
                }
            }
        }
        Ink(bits(self.fg) | bits(self.bg) << 26 | u64::from(self.flags) << 52)
    }
}

/// Bytes of text a cell holds: a character and the marks combined with it.
const TEXT: usize = 22;
const WIDE: u8 = 0x80;
const WIDE_CONT: u8 = 0x40;
const LEN: u8 = 0x1f;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    text: [u8; TEXT],
    /// Length of `text`, with the WIDE and WIDE_CONT flags in its high bits.
    len: u8,
    ink: Ink,
}

impl Default for Cell {
    fn default() -> Cell {
        Cell::EMPTY
    }
}

impl Cell {
    pub const EMPTY: Cell = Cell {
        text: [0; TEXT],
        len: 0,
        ink: Ink::DEFAULT,
    };

    fn n(&self) -> usize {
        usize::from(self.len & LEN)
    }

    /// The text of the cell ("" for an empty one).
    pub fn contents(&self) -> &str {
        std::str::from_utf8(&self.text[..self.n()]).unwrap_or("")
    }

    /// The cell's text, as bytes (UTF-8).
    pub(super) fn bytes(&self) -> &[u8] {
        &self.text[..self.n()]
    }

    /// The last character of the cell's text (found from its end: no look at the rest).
    pub(super) fn last_char(&self) -> Option<char> {
        let (&last, rest) = self.text.get(..self.n())?.split_last()?;
        if last < 0x80 {
            return Some(char::from(last));
        }
        // Continuation bytes back to the lead byte (the text is whole characters).
        let mut code = u32::from(last & 0x3f);
        let mut shift = 6;
        for &b in rest.iter().rev() {
            if b & 0xc0 != 0x80 {
                let lead = u32::from(b) & (0x7f >> (shift / 6 + 1));
                return char::from_u32(code | lead << shift);
            }
            code |= u32::from(b & 0x3f) << shift;
            shift += 6;
            if shift > 18 {
                return None;
            }
        }
        None
    }

    /// The cell's text as one ASCII byte, when it is one.
    pub(super) fn ascii(&self) -> Option<u8> {
        (self.len & LEN == 1).then_some(self.text[0])
    }

    pub fn has_contents(&self) -> bool {
        self.len & LEN != 0
    }
    pub fn is_wide(&self) -> bool {
        self.len & WIDE != 0
    }
    pub fn is_wide_continuation(&self) -> bool {
        self.len & WIDE_CONT != 0
    }
    pub fn pen(&self) -> Pen {
        self.ink.pen()
    }
    pub fn ink(&self) -> Ink {
        self.ink
    }
    pub fn fgcolor(&self) -> Color {
        self.pen().fg
    }
    pub fn bgcolor(&self) -> Color {
        self.pen().bg
    }
    pub fn bold(&self) -> bool {
        self.pen().bold()
    }
    pub fn dim(&self) -> bool {
        self.pen().dim()
    }
    pub fn italic(&self) -> bool {
        self.pen().italic()
    }
    pub fn underline(&self) -> bool {
        self.pen().underline()
    }
    pub fn inverse(&self) -> bool {
        self.pen().inverse()
    }

    /// Sets the cell to one ASCII character (the common case, kept short).
    #[inline]
    pub(super) fn set_ascii(&mut self, b: u8, ink: Ink) {
        self.text[0] = b;
        self.len = 1;
        self.ink = ink;
    }

    pub(super) fn set(&mut self, c: char, wide: bool, ink: Ink) {
        let n = c.encode_utf8(&mut self.text).len() as u8;
        self.len = n | if wide { WIDE } else { 0 };
        self.ink = ink;
    }

    /// Adds `c` to the cell's text (a mark, or the rest of a grapheme cluster), if there
    /// is room left for all of it; returns false when it was dropped. A mark on an empty
    /// cell combines with a blank. The width is the caller's to change.
    pub(super) fn append(&mut self, c: char) -> bool {
        let mut n = self.n();
        if n == 0 {
            self.text[0] = b' ';
            n = 1;
        }
        if n + c.len_utf8() > TEXT {
            self.len = (self.len & !LEN) | n as u8;
            return false;
        }
        n += c.encode_utf8(&mut self.text[n..]).len();
        self.len = (self.len & !LEN) | n as u8;
        true
    }

    pub(super) fn set_wide(&mut self, wide: bool) {
        if wide {
            self.len |= WIDE;
        } else {
            self.len &= !WIDE;
        }
    }

    pub(super) fn set_wide_continuation(&mut self, on: bool) {
        if on {
            self.len |= WIDE_CONT;
        } else {
            self.len &= !WIDE_CONT;
        }
    }

    /// Empties the cell, giving it `ink`.
    pub(super) fn clear(&mut self, ink: Ink) {
        self.len = 0;
        self.ink = ink;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ink_keeps_every_pen() {
        for fg in [
            Color::Default,
            Color::Idx(0),
            Color::Idx(255),
            Color::Rgb(1, 2, 255),
        ] {
            for bg in [Color::Default, Color::Idx(9), Color::Rgb(255, 0, 7)] {
                for flags in [0, BOLD | INVERSE, 31] {
                    let pen = Pen { fg, bg, flags };
                    assert_eq!(pen.ink().pen(), pen);
                }
            }
        }
    }

    #[test]
    fn the_last_character_is_found_from_the_end() {
        let mut c = Cell::EMPTY;
        assert_eq!(c.last_char(), None);
        for (first, next) in [('a', 'b'), ('\u{e9}', '\u{301}'), ('\u{6f22}', '\u{200d}')] {
            c.set(first, false, Ink::DEFAULT);
            assert_eq!(c.last_char(), Some(first));
            c.append(next);
            assert_eq!(c.last_char(), Some(next));
            c.append('\u{1f468}');
            assert_eq!(c.last_char(), Some('\u{1f468}'));
        }
    }

    #[test]
    fn a_cell_is_small() {
        assert!(std::mem::size_of::<Cell>() <= 32);
    }

    #[test]
    fn marks_combine_until_the_cell_is_full() {
        let mut c = Cell::EMPTY;
        c.set('e', false, Ink::DEFAULT);
        assert!(c.append('\u{301}'));
        assert_eq!(c.contents(), "e\u{301}");
        assert!(!c.is_wide());
        let mut kept = 1;
        for _ in 0..20 {
            kept += usize::from(c.append('\u{301}'));
        }
        assert!(kept < 21 && c.contents().len() <= TEXT);
        // Whole characters only: a 4-byte one where 3 bytes are left is dropped whole.
        assert!(c.contents().chars().all(|ch| ch == 'e' || ch == '\u{301}'));
        let mut c = Cell::EMPTY;
        c.append('\u{301}');
        assert_eq!(c.contents(), " \u{301}", "on an empty cell, with a blank");
    }
}
