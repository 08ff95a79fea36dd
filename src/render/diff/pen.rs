//! The SGR pen: what the next printed character looks like (colours, attributes, the
//! underline's style and colour, an open hyperlink), and the shortest SGR parameters that
//! change one pen into another.

use std::io::Write as _;

use ratatui::buffer::Cell;
use ratatui::style::{Color, Modifier};

use super::Extra;
use crate::term::vt::{Link, Underline};

/// The SGR state and open hyperlink: what the next printed character will look like.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pen<'a> {
    pub(super) fg: Color,
    pub(super) bg: Color,
    /// Never `UNDERLINED`: the underline is `underline`.
    pub(super) modifier: Modifier,
    pub(super) underline: Underline,
    pub(super) underline_color: Color,
    pub(super) overline: bool,
    pub(super) link: Option<&'a Link>,
}

impl Pen<'_> {
    pub(super) const DEFAULT: Pen<'static> = Pen {
        fg: Color::Reset,
        bg: Color::Reset,
        modifier: Modifier::empty(),
        underline: Underline::None,
        underline_color: Color::Reset,
        overline: false,
        link: None,
    };

    /// The pen a frame cell is drawn with.
    #[inline]
    pub(super) fn of<'a>(cell: &Cell, extra: &'a Extra) -> Pen<'a> {
        let underline = match (
            cell.modifier.contains(Modifier::UNDERLINED),
            extra.underline,
        ) {
            (false, _) => Underline::None,
            (true, Underline::None) => Underline::Single,
            (true, style) => style,
        };
        Pen {
            fg: cell.fg,
            bg: cell.bg,
            modifier: cell.modifier.difference(Modifier::UNDERLINED),
            underline,
            underline_color: extra.underline_color,
            overline: extra.overline,
            link: extra.link.as_deref(),
        }
    }

    /// Nothing but colours: what erasing paints alike on every terminal.
    #[inline]
    pub(super) fn plain(&self) -> bool {
        self.modifier.is_empty()
            && self.underline == Underline::None
            && !self.overline
            && self.link.is_none()
    }

    /// The same but the hyperlink.
    #[inline]
    pub(super) fn same_sgr(&self, other: &Pen) -> bool {
        (self.fg, self.bg, self.modifier, self.underline)
            == (other.fg, other.bg, other.modifier, other.underline)
            && (self.underline_color, self.overline) == (other.underline_color, other.overline)
    }

    #[inline]
    pub(super) fn same_link(&self, other: &Pen) -> bool {
        match (self.link, other.link) {
            (Some(a), Some(b)) => std::ptr::eq(a, b) || a == b,
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl PartialEq for Pen<'_> {
    fn eq(&self, other: &Pen) -> bool {
        self.same_sgr(other) && self.same_link(other)
    }
}

/// (attribute, on code, off code). Off codes 22 and 25 each clear two attributes. (The
/// underline is the pen's `underline`.)
pub(super) const ATTRS: [(Modifier, u16, u16); 8] = [
    (Modifier::BOLD, 1, 22),
    (Modifier::DIM, 2, 22),
    (Modifier::ITALIC, 3, 23),
    (Modifier::SLOW_BLINK, 5, 25),
    (Modifier::RAPID_BLINK, 6, 25),
    (Modifier::REVERSED, 7, 27),
    (Modifier::HIDDEN, 8, 28),
    (Modifier::CROSSED_OUT, 9, 29),
];

/// Palette index of a named or indexed colour, numbered as ratatui's crossterm backend does.
pub(super) fn palette_index(color: Color) -> Option<u8> {
    Some(match color {
        Color::Reset | Color::Rgb(..) => return None,
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
        Color::Indexed(n) => n,
    })
}

pub(super) fn push_params(params: &mut Vec<u8>, codes: &[u16]) {
    for &code in codes {
        if !params.is_empty() {
            params.push(b';');
        }
        push_num(params, code);
    }
}

/// `n` in decimal (there is one for every colour of every changed cell: no formatter).
pub(super) fn push_num(out: &mut Vec<u8>, n: u16) {
    let mut digits = [0u8; 5];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `base` is 30 for foreground, 40 for background.
pub(super) fn push_color(params: &mut Vec<u8>, color: Color, base: u16) {
    match (color, palette_index(color)) {
        (Color::Rgb(r, g, b), _) => {
            push_params(params, &[base + 8, 2, r.into(), g.into(), b.into()])
        }
        (_, None) => push_params(params, &[base + 9]),
        // The 16 base colours have short forms meaning the same palette entries as 38;5;n.
        (_, Some(n @ 0..=7)) => push_params(params, &[base + u16::from(n)]),
        (_, Some(n @ 8..=15)) => push_params(params, &[base + 52 + u16::from(n)]),
        (_, Some(n)) => push_params(params, &[base + 8, 5, n.into()]),
    }
}

/// A parameter with sub-parameters (`4:3`, `58:2::1:2:3`), after a separator.
pub(super) fn push_raw(params: &mut Vec<u8>, text: std::fmt::Arguments) {
    if !params.is_empty() {
        params.push(b';');
    }
    let _ = params.write_fmt(text);
}

/// SGR parameters that turn `from` into `to` without a reset.
pub(super) fn sgr_params(params: &mut Vec<u8>, from: Pen, to: Pen) {
    let removed = from.modifier.difference(to.modifier);
    let mut offs = Vec::new();
    for (flag, _, off) in ATTRS {
        if removed.contains(flag) && !offs.contains(&off) {
            offs.push(off);
        }
    }
    if from.underline != Underline::None && to.underline == Underline::None {
        offs.push(24);
    }
    if from.overline && !to.overline {
        offs.push(55);
    }
    push_params(params, &offs);
    for (flag, on, off) in ATTRS {
        // A shared off code also cleared the sibling: turn it back on if still wanted.
        if to.modifier.contains(flag) && (!from.modifier.contains(flag) || offs.contains(&off)) {
            push_params(params, &[on]);
        }
    }
    if to.underline != from.underline {
        match to.underline {
            Underline::None => {}
            Underline::Single => push_params(params, &[4]),
            style => push_raw(params, format_args!("4:{}", style.sgr())),
        }
    }
    if to.overline && !from.overline {
        push_params(params, &[53]);
    }
    if from.fg != to.fg {
        push_color(params, to.fg, 30);
    }
    if from.bg != to.bg {
        push_color(params, to.bg, 40);
    }
    if from.underline_color != to.underline_color {
        // In sub-parameters: a terminal that does not know SGR 58 skips it whole.
        match (to.underline_color, palette_index(to.underline_color)) {
            (Color::Rgb(r, g, b), _) => push_raw(params, format_args!("58:2::{r}:{g}:{b}")),
            (_, Some(n)) => push_raw(params, format_args!("58:5:{n}")),
            (_, None) => push_params(params, &[59]),
        }
    }
}
