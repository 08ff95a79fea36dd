//! One cell of the screen and the pen it was drawn with, kept small: the text inline
//! (a character and the marks combined with it), colours and attributes in bytes.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Color {
    #[default]
    Default,
    Idx(u8),
    Rgb(u8, u8, u8),
}

pub(super) const BOLD: u16 = 1;
pub(super) const DIM: u16 = 1 << 1;
pub(super) const ITALIC: u16 = 1 << 2;
/// The underline's style (an [`Underline`]) takes three bits from here.
const UNDERLINE_SHIFT: u16 = 3;
pub(super) const UNDERLINE: u16 = 7 << UNDERLINE_SHIFT;
pub(super) const INVERSE: u16 = 1 << 6;
pub(super) const STRIKE: u16 = 1 << 7;
pub(super) const OVERLINE: u16 = 1 << 8;
pub(super) const BLINK: u16 = 1 << 9;
pub(super) const RAPID_BLINK: u16 = 1 << 10;
pub(super) const HIDDEN: u16 = 1 << 11;
/// Every flag bit; an [`Ink`] has room for these twelve.
const FLAGS: u16 = (1 << 12) - 1;

/// How text is underlined (SGR `4:0` to `4:5`; 21 is double).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Underline {
    #[default]
    None,
    Single,
    Double,
    Curly,
    Dotted,
    Dashed,
}

impl Underline {
    /// The style of SGR `4:n`; None for a style there is not.
    pub fn from_sgr(n: u16) -> Option<Underline> {
        Some(match n {
            0 => Underline::None,
            1 => Underline::Single,
            2 => Underline::Double,
            3 => Underline::Curly,
            4 => Underline::Dotted,
            5 => Underline::Dashed,
            _ => return None,
        })
    }

    /// `n` of SGR `4:n`.
    pub fn sgr(self) -> u16 {
        self as u16
    }
}

/// The drawing attributes a cell takes from the pen that drew or erased it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Pen {
    pub fg: Color,
    pub bg: Color,
    /// The underline's colour (SGR 58); Default: the text's.
    pub ul: Color,
    pub flags: u16,
    /// The hyperlink of what the pen draws (OSC 8): an id in the screen's link table, 0
    /// for none.
    pub link: u16,
}

impl Pen {
    pub const DEFAULT: Pen = Pen {
        fg: Color::Default,
        bg: Color::Default,
        ul: Color::Default,
        flags: 0,
        link: 0,
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
    /// Underlined, in any style.
    pub fn underline(&self) -> bool {
        self.flags & UNDERLINE != 0
    }
    pub fn underline_style(&self) -> Underline {
        Underline::from_sgr((self.flags & UNDERLINE) >> UNDERLINE_SHIFT).unwrap_or_default()
    }
    pub fn set_underline(&mut self, style: Underline) {
        self.flags = (self.flags & !UNDERLINE) | style.sgr() << UNDERLINE_SHIFT;
    }
    pub fn inverse(&self) -> bool {
        self.flags & INVERSE != 0
    }
    pub fn strikethrough(&self) -> bool {
        self.flags & STRIKE != 0
    }
    pub fn overline(&self) -> bool {
        self.flags & OVERLINE != 0
    }
    pub fn blink(&self) -> bool {
        self.flags & BLINK != 0
    }
    pub fn rapid_blink(&self) -> bool {
        self.flags & RAPID_BLINK != 0
    }
    pub fn hidden(&self) -> bool {
        self.flags & HIDDEN != 0
    }
}

/// A pen packed as cells keep it: colours in 26 bits each (a 2-bit kind and 24 bits of
/// index or RGB) — the text's and the background's in `lo` with the twelve attribute
/// flags, the underline's in `hi` — and the link id. Copied and compared at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Ink {
    lo: u64,
    hi: u32,
    link: u16,
}

fn color_bits(c: Color) -> u32 {
    match c {
        Color::Default => 0,
        Color::Idx(i) => 1 << 24 | u32::from(i),
        Color::Rgb(r, g, b) => 2 << 24 | u32::from(r) << 16 | u32::from(g) << 8 | u32::from(b),
    }
}

fn color_of(v: u32) -> Color {
    match v >> 24 {
        1 => Color::Idx(v as u8),
        2 => Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8),
        _ => Color::Default,
    }
}

const COLOR: u64 = 0x3ff_ffff;

impl Ink {
    pub const DEFAULT: Ink = Ink {
        lo: 0,
        hi: 0,
        link: 0,
    };

    pub fn pen(self) -> Pen {
        Pen {
            fg: color_of((self.lo & COLOR) as u32),
            bg: color_of(((self.lo >> 26) & COLOR) as u32),
            ul: color_of(self.hi),
            flags: (self.lo >> 52) as u16,
            link: self.link,
        }
    }

    /// The link id (0: none).
    pub fn link(self) -> u16 {
        self.link
    }

    /// The same without its link: what erasing with the pen leaves.
    pub fn without_link(self) -> Ink {
        Ink { link: 0, ..self }
    }
}

impl Pen {
    pub fn ink(&self) -> Ink {
        Ink {
            lo: u64::from(color_bits(self.fg))
                | u64::from(color_bits(self.bg)) << 26
                | u64::from(self.flags & FLAGS) << 52,
            hi: color_bits(self.ul),
            link: self.link,
        }
    }
}

/// Bytes of text a cell holds: a character and the marks combined with it (a family
/// emoji of four people joined by ZWJ takes 25).
const TEXT: usize = 25;
const WIDE: u8 = 0x80;
const WIDE_CONT: u8 = 0x40;
const LEN: u8 = 0x1f;

/// 40 bytes: the ink's words first, then the length and the text, with no padding (so a
/// row of cells can be compared as bytes: `NoUninit` fails to build if padding appears).
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::NoUninit)]
#[repr(C)]
pub struct Cell {
    /// The ink, as [`Ink`] keeps it (laid out here so that no padding is needed).
    lo: u64,
    hi: u32,
    link: u16,
    /// Length of `text`, with the WIDE and WIDE_CONT flags in its high bits.
    len: u8,
    text: [u8; TEXT],
}

impl Default for Cell {
    fn default() -> Cell {
        Cell::EMPTY
    }
}

impl Cell {
    pub const EMPTY: Cell = Cell {
        lo: 0,
        hi: 0,
        link: 0,
        len: 0,
        text: [0; TEXT],
    };

    #[inline]
    fn set_ink(&mut self, ink: Ink) {
        self.lo = ink.lo;
        self.hi = ink.hi;
        self.link = ink.link;
    }

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

    /// The first byte of the cell's text: the whole of it for an ASCII character.
    #[inline]
    pub(super) fn ascii_byte(&self) -> u8 {
        self.text[0]
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
        self.ink().pen()
    }
    #[inline]
    pub fn ink(&self) -> Ink {
        Ink {
            lo: self.lo,
            hi: self.hi,
            link: self.link,
        }
    }
    /// The id of the cell's hyperlink in its screen's link table (0: none).
    pub fn link(&self) -> u16 {
        self.link
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
        self.set_ink(ink);
    }

    pub(super) fn set(&mut self, c: char, wide: bool, ink: Ink) {
        let n = c.encode_utf8(&mut self.text).len() as u8;
        self.len = n | if wide { WIDE } else { 0 };
        self.set_ink(ink);
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

    /// Empties the cell, giving it `ink` without its link (erased cells link nowhere).
    pub(super) fn clear(&mut self, ink: Ink) {
        self.len = 0;
        self.set_ink(ink.without_link());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ink_keeps_every_pen() {
        let colours = [
            Color::Default,
            Color::Idx(0),
            Color::Idx(255),
            Color::Rgb(1, 2, 255),
            Color::Rgb(255, 0, 7),
        ];
        let styles = [
            Underline::None,
            Underline::Single,
            Underline::Double,
            Underline::Curly,
            Underline::Dotted,
            Underline::Dashed,
        ];
        for fg in colours {
            for bg in colours {
                for ul in colours {
                    for flags in [0, BOLD | INVERSE, STRIKE | OVERLINE, FLAGS & !UNDERLINE] {
                        for style in styles {
                            for link in [0, 1, u16::MAX] {
                                let mut pen = Pen {
                                    fg,
                                    bg,
                                    ul,
                                    flags,
                                    link,
                                };
                                pen.set_underline(style);
                                assert_eq!(pen.ink().pen(), pen);
                                assert_eq!(pen.underline_style(), style);
                                assert_eq!(pen.underline(), style != Underline::None);
                                let mut cell = Cell::EMPTY;
                                cell.set('x', false, pen.ink());
                                assert_eq!(cell.pen(), pen);
                                cell.clear(pen.ink());
                                assert_eq!(cell.pen(), Pen { link: 0, ..pen });
                            }
                        }
                    }
                }
            }
        }
        let all = Pen {
            flags: FLAGS,
            ..Pen::DEFAULT
        };
        let each = [
            all.bold(),
            all.dim(),
            all.italic(),
            all.inverse(),
            all.strikethrough(),
            all.overline(),
            all.blink(),
            all.rapid_blink(),
            all.hidden(),
        ];
        assert!(each.iter().all(|&on| on));
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
        assert!(std::mem::size_of::<Cell>() <= 40);
        // Room for a family emoji: four people joined by ZWJ.
        assert!(TEXT >= "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{200d}\u{1f466}".len());
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
