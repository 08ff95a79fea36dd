//! Keys: what a user typed, independent of how the terminal encoded it.
//!
//! A [`Key`] is a [`KeyCode`] plus [`Mods`] (ctrl/alt/shift). It has three faces:
//! * tmux-style notation (`C-b`, `M-x`, `S-Up`, `PageUp`, `%`) via [`Key::parse`] and
//!   `Display`, used by configuration files and scripts;
//! * the legacy (xterm) byte encoding via [`Key::to_bytes`], used to send a literal
//!   prefix or a named key to a pane;
//! * the decoded form produced by `InputParser` from raw terminal input.
//!
//! Invariants:
//! * [`Key::parse`] returns *normalized* keys ([`Key::normalize`]): spellings that a
//!   terminal cannot tell apart collapse to the one form the parser emits (`C-i` is
//!   `Tab`, `C-B` is `C-b`, `S-a` is `A`, `S-Tab` is `BTab`), so a binding compares
//!   equal to what the parser produces for the same keystroke.
//! * For every normalized key `k`, `Key::parse(&k.to_string()) == Ok(k)`.
//! * Nothing here panics, whatever the input.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};
use std::str::FromStr;

/// Modifier set. The bit values are the xterm ones (shift 1, alt 2, ctrl 4) so that
/// the CSI modifier parameter is simply `1 + bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mods(u8);

impl Mods {
    pub const NONE: Mods = Mods(0);
    pub const SHIFT: Mods = Mods(1);
    pub const ALT: Mods = Mods(2);
    pub const CTRL: Mods = Mods(4);

    /// Builds a set from raw bits; unknown bits are dropped.
    pub const fn from_bits(bits: u8) -> Mods {
        Mods(bits & 7)
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// True when every modifier of `other` is in `self`.
    pub const fn contains(self, other: Mods) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn union(self, other: Mods) -> Mods {
        Mods(self.0 | other.0)
    }
    pub const fn difference(self, other: Mods) -> Mods {
        Mods(self.0 & !other.0)
    }
    /// Decodes an xterm modifier parameter (`CSI 1 ; <param> A`). Meta (bit 8) is folded
    /// into alt because most terminals use the two interchangeably; super/hyper and
    /// lock bits are dropped. 0 and 1 both mean "no modifier".
    pub fn from_xterm(param: u32) -> Mods {
        let bits = param.saturating_sub(1);
        let mut m = Mods::from_bits((bits & 7) as u8);
        if bits & 8 != 0 {
            m |= Mods::ALT;
        }
        m
    }
    /// The xterm modifier parameter for this set (1 = none).
    pub const fn to_xterm(self) -> u8 {
        1 + self.0
    }
}

impl BitOr for Mods {
    type Output = Mods;
    fn bitor(self, rhs: Mods) -> Mods {
        self.union(rhs)
    }
}

impl BitOrAssign for Mods {
    fn bitor_assign(&mut self, rhs: Mods) {
        *self = self.union(rhs);
    }
}

/// A key without its modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCode {
    /// A printable character (`' '` is Space). Never a control character when produced
    /// by this module or the parser: control bytes become `Char(letter)` + ctrl.
    Char(char),
    Enter,
    Tab,
    /// Shift+Tab as terminals send it (`CSI Z`).
    BackTab,
    Backspace,
    Esc,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Insert,
    Delete,
    /// Function key; notation and encodings cover F1..=F12.
    F(u8),
}

impl KeyCode {
    /// The key a legacy `CSI n ~` names (VT220 numbering, as xterm sends it).
    pub fn from_tilde(n: u32) -> Option<KeyCode> {
        Some(match n {
            1 | 7 => KeyCode::Home,
            2 => KeyCode::Insert,
            3 => KeyCode::Delete,
            4 | 8 => KeyCode::End,
            5 => KeyCode::PageUp,
            6 => KeyCode::PageDown,
            11..=15 => KeyCode::F((n - 10) as u8),
            17..=21 => KeyCode::F((n - 11) as u8),
            23 | 24 => KeyCode::F((n - 12) as u8),
            _ => return None,
        })
    }

    /// The key a legacy letter final names (`CSI A`, `SS3 P`): the arrows, Home, End and
    /// F1 to F4.
    pub fn from_final(fin: u8) -> Option<KeyCode> {
        Some(match fin {
            b'A' => KeyCode::Up,
            b'B' => KeyCode::Down,
            b'C' => KeyCode::Right,
            b'D' => KeyCode::Left,
            b'H' => KeyCode::Home,
            b'F' => KeyCode::End,
            b'P'..=b'S' => KeyCode::F(fin - b'P' + 1),
            _ => return None,
        })
    }
}

/// A key press: code plus modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCode,
    pub mods: Mods,
}

/// Error from [`Key::parse`]; its message names the bad text and the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyParseError {
    /// The text that was rejected.
    pub text: String,
}

impl fmt::Display for KeyParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid key {:?}: expected a single printable character (e.g. %, h, H, \") or a \
             key name (Enter, Tab, BTab, BSpace, Escape, Space, Up, Down, Left, Right, Home, \
             End, PageUp/PPage, PageDown/NPage, Insert/IC, Delete/DC, F1..F12), optionally \
             prefixed by modifiers C- (ctrl), M- (alt), S- (shift), e.g. C-b, M-x, C-M-a, S-Up",
            self.text
        )
    }
}

impl std::error::Error for KeyParseError {}

/// Key names accepted by [`Key::parse`] (case-insensitive). The first spelling listed
/// for a code is the canonical one written by `Display`.
const NAMES: &[(&str, KeyCode)] = &[
    ("Enter", KeyCode::Enter),
    ("Tab", KeyCode::Tab),
    ("BTab", KeyCode::BackTab),
    ("BSpace", KeyCode::Backspace),
    ("Escape", KeyCode::Esc),
    ("Esc", KeyCode::Esc),
    ("Space", KeyCode::Char(' ')),
    ("Up", KeyCode::Up),
    ("Down", KeyCode::Down),
    ("Left", KeyCode::Left),
    ("Right", KeyCode::Right),
    ("Home", KeyCode::Home),
    ("End", KeyCode::End),
    ("PageUp", KeyCode::PageUp),
    ("PPage", KeyCode::PageUp),
    ("PgUp", KeyCode::PageUp),
    ("PageDown", KeyCode::PageDown),
    ("NPage", KeyCode::PageDown),
    ("PgDn", KeyCode::PageDown),
    ("Insert", KeyCode::Insert),
    ("IC", KeyCode::Insert),
    ("Delete", KeyCode::Delete),
    ("DC", KeyCode::Delete),
];

impl Key {
    pub const fn new(code: KeyCode, mods: Mods) -> Key {
        Key { code, mods }
    }
    /// A key without modifiers.
    pub const fn plain(code: KeyCode) -> Key {
        Key::new(code, Mods::NONE)
    }
    /// Ctrl + `c` (e.g. `Key::ctrl('b')` is the default prefix).
    pub const fn ctrl(c: char) -> Key {
        Key::new(KeyCode::Char(c), Mods::CTRL)
    }

    /// Parses tmux-style notation; see the module doc and [`KeyParseError`].
    pub fn parse(text: &str) -> Result<Key, KeyParseError> {
        let err = || KeyParseError {
            text: text.to_string(),
        };
        let mut mods = Mods::NONE;
        let mut rest = text;
        // A modifier prefix needs something after it, so "C-" and "-" stay key names.
        loop {
            let mut chars = rest.chars();
            let (Some(m), Some(second)) = (chars.next(), chars.next()) else {
                break;
            };
            let after = chars.as_str();
            if second == '-' && !after.is_empty() {
                match m {
                    'C' | 'c' => mods |= Mods::CTRL,
                    'M' | 'm' => mods |= Mods::ALT,
                    'S' | 's' => mods |= Mods::SHIFT,
                    _ => break,
                }
                rest = after;
            } else if m == '^' {
                // tmux also accepts ^x for C-x.
                mods |= Mods::CTRL;
                rest = &rest[1..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) if !c.is_control() => KeyCode::Char(c),
            (Some(_), Some(_)) => lookup_name(rest).ok_or_else(err)?,
            _ => return Err(err()),
        };
        Ok(Key::new(code, mods).normalize())
    }

    /// Collapses spellings that produce identical bytes into the form the input parser
    /// emits, so bindings can be compared with parsed keys by plain equality.
    /// `C-h` is deliberately kept: it shares 0x08 with Backspace on some terminals, and
    /// folding it would make a `C-h` binding swallow every Backspace.
    pub fn normalize(self) -> Key {
        let Key { code, mut mods } = self;
        let code = match code {
            KeyCode::Char(c) if mods.contains(Mods::CTRL) => {
                let folded = match c.to_ascii_lowercase() {
                    'i' => Some(KeyCode::Tab),
                    'm' => Some(KeyCode::Enter),
                    '[' => Some(KeyCode::Esc),
                    '?' => Some(KeyCode::Backspace),
                    _ => None,
                };
                match folded {
                    Some(k) => {
                        mods = mods.difference(Mods::CTRL);
                        k
                    }
                    None if c == '@' => KeyCode::Char(' '),
                    None => KeyCode::Char(c.to_ascii_lowercase()),
                }
            }
            KeyCode::Char(c) if mods.contains(Mods::SHIFT) && c.is_ascii_alphabetic() => {
                mods = mods.difference(Mods::SHIFT);
                KeyCode::Char(c.to_ascii_uppercase())
            }
            KeyCode::Tab if mods.contains(Mods::SHIFT) => {
                mods = mods.difference(Mods::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        // One fold can enable another (C-S-i → S-Tab → BTab); every fold drops a
        // modifier or settles a case, so this recursion is at most a few levels deep.
        let key = Key::new(code, mods);
        if key == self {
            key
        } else {
            key.normalize()
        }
    }

    /// The bytes a (legacy, xterm-like) terminal sends for this key, cursor keys in
    /// normal (not application) mode. Modifiers with no legacy encoding are dropped
    /// (e.g. C-Enter sends `\r`, C-1 sends `1`), as tmux does without extended keys.
    /// Returns an empty vector for keys with no encoding at all (F13 and above).
    pub fn to_bytes(&self) -> Vec<u8> {
        let m = self.mods;
        // Cursor/editing/function keys are CSI (or SS3) sequences carrying every
        // modifier in the xterm parameter; all other keys are one character, with
        // alt sent as an ESC prefix.
        let (num, fin) = match self.code {
            KeyCode::Up => (1, b'A'),
            KeyCode::Down => (1, b'B'),
            KeyCode::Right => (1, b'C'),
            KeyCode::Left => (1, b'D'),
            KeyCode::Home => (1, b'H'),
            KeyCode::End => (1, b'F'),
            KeyCode::Insert => (2, b'~'),
            KeyCode::Delete => (3, b'~'),
            KeyCode::PageUp => (5, b'~'),
            KeyCode::PageDown => (6, b'~'),
            KeyCode::F(n @ 1..=4) if m.is_empty() => return vec![0x1b, b'O', b'P' + n - 1],
            KeyCode::F(n @ 1..=4) => (1, b'P' + n - 1),
            KeyCode::F(n) => match fkey_tilde_code(n) {
                Some(code) => (code, b'~'),
                None => return Vec::new(),
            },
            _ => return self.char_bytes(),
        };
        let mut s = String::from("\x1b[");
        if fin == b'~' || !m.is_empty() {
            s.push_str(&num.to_string());
        }
        if !m.is_empty() {
            s.push_str(&format!(";{}", m.to_xterm()));
        }
        s.push(char::from(fin));
        s.into_bytes()
    }

    /// `to_bytes` for keys that are a single character (plus an ESC prefix for alt).
    fn char_bytes(&self) -> Vec<u8> {
        let m = self.mods;
        let mut out = if m.contains(Mods::ALT) {
            vec![0x1b]
        } else {
            Vec::new()
        };
        match self.code {
            KeyCode::Char(c) => match ctrl_byte(c).filter(|_| m.contains(Mods::CTRL)) {
                Some(b) => out.push(b),
                None => {
                    let c = if m.contains(Mods::SHIFT) {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
                }
            },
            KeyCode::Enter => out.push(b'\r'),
            KeyCode::Tab if m.contains(Mods::SHIFT) => out.extend_from_slice(b"\x1b[Z"),
            KeyCode::BackTab => out.extend_from_slice(b"\x1b[Z"),
            KeyCode::Tab => out.push(b'\t'),
            KeyCode::Backspace => out.push(0x7f),
            KeyCode::Esc => out.push(0x1b),
            _ => {}
        }
        out
    }
}

/// The `CSI <code> ~` number of F5..F12 (the gaps at 16 and 22 are historical).
fn fkey_tilde_code(n: u8) -> Option<u8> {
    match n {
        5 => Some(15),
        6..=10 => Some(n + 11),
        11 | 12 => Some(n + 12),
        _ => None,
    }
}

/// The C0 byte for ctrl + `c`, when one exists.
fn ctrl_byte(c: char) -> Option<u8> {
    match c {
        'a'..='z' | 'A'..='Z' => Some((c as u8) & 0x1f),
        ' ' | '@' => Some(0),
        '[' => Some(0x1b),
        '\\' => Some(0x1c),
        ']' => Some(0x1d),
        '^' => Some(0x1e),
        '_' => Some(0x1f),
        '?' => Some(0x7f),
        _ => None,
    }
}

fn lookup_name(name: &str) -> Option<KeyCode> {
    if let Some((_, code)) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Some(*code);
    }
    let digits = name.strip_prefix('F').or_else(|| name.strip_prefix('f'))?;
    // Reject "F01" and "F+1" so that Display round-trips exactly.
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match digits.parse::<u8>() {
        Ok(n @ 1..=12) => Some(KeyCode::F(n)),
        _ => None,
    }
}

impl FromStr for Key {
    type Err = KeyParseError;
    fn from_str(s: &str) -> Result<Key, KeyParseError> {
        Key::parse(s)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // tmux's canonical modifier order.
        for (m, s) in [(Mods::CTRL, "C-"), (Mods::ALT, "M-"), (Mods::SHIFT, "S-")] {
            if self.mods.contains(m) {
                f.write_str(s)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "F{n}"),
            code => {
                let name = NAMES.iter().find(|(_, c)| *c == code).map(|(n, _)| *n);
                f.write_str(name.unwrap_or("?"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode, mods: Mods) -> Key {
        Key::new(code, mods)
    }

    #[test]
    #[rustfmt::skip]
    fn parses_tmux_notation() {
        use KeyCode::*;
        let (none, c, m, s) = (Mods::NONE, Mods::CTRL, Mods::ALT, Mods::SHIFT);
        let cases = [
            ("C-b", k(Char('b'), c)), ("M-x", k(Char('x'), m)), ("C-M-a", k(Char('a'), c | m)),
            ("M-C-a", k(Char('a'), c | m)), ("c-b", k(Char('b'), c)), ("^b", k(Char('b'), c)),
            ("S-Up", k(Up, s)), ("Up", k(Up, none)), ("up", k(Up, none)), ("Left", k(Left, none)),
            ("PageUp", k(PageUp, none)), ("PPage", k(PageUp, none)), ("Home", k(Home, none)),
            ("PageDown", k(PageDown, none)), ("NPage", k(PageDown, none)), ("End", k(End, none)),
            ("Enter", k(Enter, none)), ("Tab", k(Tab, none)), ("BTab", k(BackTab, none)),
            ("BSpace", k(Backspace, none)), ("Escape", k(Esc, none)), ("IC", k(Insert, none)),
            ("DC", k(Delete, none)), ("Space", k(Char(' '), none)), ("C-Space", k(Char(' '), c)),
            ("F1", k(F(1), none)), ("F12", k(F(12), none)), ("C--", k(Char('-'), c)),
        ];
        for (text, want) in cases {
            assert_eq!(Key::parse(text), Ok(want), "{text}");
            assert_eq!(text.parse::<Key>(), Ok(want), "{text}");
        }
        // Single characters are themselves; an uppercase letter is not S-letter.
        for ch in "%\"?[hH-^é".chars() {
            assert_eq!(Key::parse(&ch.to_string()), Ok(k(Char(ch), none)), "{ch}");
        }
    }

    #[test]
    fn parse_normalizes_aliases() {
        let p = |s: &str| Key::parse(s).unwrap();
        assert_eq!(p("C-i"), p("Tab"));
        assert_eq!(p("C-m"), p("Enter"));
        assert_eq!(p("C-["), p("Escape"));
        assert_eq!(p("C-B"), p("C-b"));
        assert_eq!(p("C-@"), p("C-Space"));
        assert_eq!(p("S-a"), p("A"));
        assert_eq!(p("M-S-a"), p("M-A"));
        assert_eq!(p("S-Tab"), p("BTab"));
        assert_eq!(p("C-S-i"), p("BTab"));
        assert_eq!(p("C-h"), Key::ctrl('h'));
    }

    #[test]
    fn rejects_bad_text_with_helpful_message() {
        for bad in [
            "", "C-", "M-", "Foo", "F0", "F13", "F01", "C-Nope", "ab", "\u{1}", "S-",
        ] {
            let err = Key::parse(bad).unwrap_err();
            assert_eq!(err.text, bad);
            let msg = err.to_string();
            assert!(msg.contains(&format!("{bad:?}")), "{msg}");
            assert!(msg.contains("C-b") && msg.contains("PageUp"), "{msg}");
        }
    }

    fn sample_keys() -> Vec<Key> {
        let names = "a Z % Space - ^ é Enter Tab BTab BSpace Escape Up Down Left Right Home End \
                     PageUp PageDown Insert Delete F1 F5 F12";
        let mut keys = Vec::new();
        for name in names.split_whitespace() {
            let code = Key::parse(name).unwrap().code;
            for bits in 0..8 {
                keys.push(Key::new(code, Mods::from_bits(bits)).normalize());
            }
        }
        keys
    }

    #[test]
    fn display_round_trips() {
        for key in sample_keys() {
            let text = key.to_string();
            assert_eq!(Key::parse(&text), Ok(key), "{text}");
        }
        assert_eq!(Key::ctrl('b').to_string(), "C-b");
        assert_eq!(Key::parse("M-C-S-Up").unwrap().to_string(), "C-M-S-Up");
        assert_eq!(Key::parse("PPage").unwrap().to_string(), "PageUp");
    }

    #[test]
    #[rustfmt::skip]
    fn encodes_bytes() {
        let cases: &[(&str, &[u8])] = &[
            ("C-b", b"\x02"), ("C-Space", b"\x00"), ("C-\\", b"\x1c"), ("C-_", b"\x1f"),
            ("M-x", b"\x1bx"), ("C-M-a", b"\x1b\x01"), ("a", b"a"), ("é", "é".as_bytes()),
            ("Up", b"\x1b[A"), ("S-Up", b"\x1b[1;2A"), ("C-Left", b"\x1b[1;5D"),
            ("M-Right", b"\x1b[1;3C"), ("Home", b"\x1b[H"), ("End", b"\x1b[F"),
            ("PageUp", b"\x1b[5~"), ("C-PageDown", b"\x1b[6;5~"), ("Insert", b"\x1b[2~"),
            ("Delete", b"\x1b[3~"), ("F1", b"\x1bOP"), ("S-F4", b"\x1b[1;2S"), ("F5", b"\x1b[15~"),
            ("F6", b"\x1b[17~"), ("F10", b"\x1b[21~"), ("F11", b"\x1b[23~"), ("C-F12", b"\x1b[24;5~"),
            ("Enter", b"\r"), ("M-Enter", b"\x1b\r"), ("Tab", b"\t"), ("BTab", b"\x1b[Z"),
            ("BSpace", b"\x7f"), ("Escape", b"\x1b"), ("M-Escape", b"\x1b\x1b"),
            ("C-Enter", b"\r"), ("C-1", b"1"),
        ];
        for (text, want) in cases {
            assert_eq!(Key::parse(text).unwrap().to_bytes(), *want, "{text}");
        }
        assert_eq!(k(KeyCode::Char('a'), Mods::SHIFT).to_bytes(), b"A");
        assert_eq!(k(KeyCode::Tab, Mods::SHIFT).to_bytes(), b"\x1b[Z");
        assert!(Key::plain(KeyCode::F(13)).to_bytes().is_empty());
        assert!(Key::plain(KeyCode::F(0)).to_bytes().is_empty());
    }

    #[test]
    fn xterm_modifier_parameter() {
        assert_eq!(Mods::from_xterm(0), Mods::NONE);
        assert_eq!(Mods::from_xterm(1), Mods::NONE);
        assert_eq!(Mods::from_xterm(2), Mods::SHIFT);
        assert_eq!(Mods::from_xterm(5), Mods::CTRL);
        assert_eq!(Mods::from_xterm(8), Mods::CTRL | Mods::ALT | Mods::SHIFT);
        assert_eq!(Mods::from_xterm(9), Mods::ALT); // meta folds into alt
        assert_eq!(Mods::from_xterm(u32::MAX).bits() & !7, 0);
        for bits in 0..8 {
            let m = Mods::from_bits(bits);
            assert_eq!(Mods::from_xterm(u32::from(m.to_xterm())), m);
        }
    }
}
