//! One key event with everything the richest encodings carry: the key, all eight kitty
//! modifiers, press/repeat/release, the shifted and base-layout keys, the text it types.
//! Decoded from what a terminal sent (legacy bytes, modifyOtherKeys' `CSI 27 ; m ; c ~`
//! or the kitty protocol's `CSI code:alternates ; mods:kind ; text u` and its `CSI 1 ; m
//! A`-style forms), and encoded again for each pane as it asked (`input::encode`).
//!
//! Invariants: decoding never panics and keeps at most [`MAX_TEXT`] characters of text;
//! a [`KeyEvent`] from a legacy [`Key`] encodes back to that key's bytes in legacy mode.

use super::keys::{Key, KeyCode, Mods};

/// Kitty modifier bits (the CSI parameter is 1 + these).
pub const SHIFT: u8 = 1;
pub const ALT: u8 = 2;
pub const CTRL: u8 = 4;
pub const SUPER: u8 = 8;
pub const HYPER: u8 = 16;
pub const META: u8 = 32;
pub const CAPS_LOCK: u8 = 64;
pub const NUM_LOCK: u8 = 128;

/// Characters of associated text kept from one report.
pub const MAX_TEXT: usize = 16;

/// Kitty's numbers for keys that have no Unicode code point (its private use area).
pub mod num {
    pub const F13: u32 = 57376;
    pub const F35: u32 = 57398;
    pub const KP_0: u32 = 57399;
    pub const KP_BEGIN: u32 = 57427;
    pub const LEFT_SHIFT: u32 = 57441;
    pub const ISO_LEVEL5_SHIFT: u32 = 57454;
    pub const FIRST: u32 = 57344;
    pub const LAST: u32 = 63743;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Press,
    Repeat,
    Release,
}

/// Which key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// A key herdr names: a text key as its unshifted character, or a functional key
    /// (F1 to F35 among them).
    Key(KeyCode),
    /// A key only the kitty protocol names, by its number there: keypad, lock, media
    /// and modifier keys.
    Other(u32),
    /// No key: text an input method composed (kitty's key number 0).
    Text,
}

/// A physical key: its code and base-layout key.
pub type KeyId = (Code, Option<char>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    pub code: Code,
    /// Kitty modifier bits.
    pub mods: u8,
    pub kind: Kind,
    /// The key with shift, as the layout has it (reported with shift held only).
    pub shifted: Option<char>,
    /// The key in the standard PC-101 layout.
    pub base: Option<char>,
    /// What the key types; empty when it types nothing (a control key, ctrl or alt held).
    pub text: String,
}

impl KeyEvent {
    /// The event a legacy key stands for: shift is known only for letters, the text
    /// only without ctrl and alt.
    pub fn from_key(key: Key) -> KeyEvent {
        let mut mods = key.mods.bits();
        let mut shifted = None;
        let code = match key.code {
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                mods |= SHIFT;
                shifted = Some(c);
                KeyCode::Char(c.to_ascii_lowercase())
            }
            KeyCode::BackTab => {
                mods |= SHIFT;
                KeyCode::Tab
            }
            KeyCode::Char(c) if mods & SHIFT != 0 && c.is_ascii_lowercase() => {
                shifted = Some(c.to_ascii_uppercase());
                KeyCode::Char(c)
            }
            code => code,
        };
        // (What shift does to a key other than a letter is the layout's secret.)
        let text = match key.code {
            KeyCode::Char(c)
                if mods & (CTRL | ALT) == 0
                    && (key.mods.is_empty() || c.is_ascii_alphabetic() || c == ' ') =>
            {
                match shifted {
                    Some(s) => s.to_string(),
                    None => c.to_string(),
                }
            }
            _ => String::new(),
        };
        KeyEvent {
            code: Code::Key(code),
            mods,
            kind: Kind::Press,
            shifted,
            base: None,
            text,
        }
    }

    /// The event a key token stands for: decoded from its bytes when they are an
    /// extended form, else from the key the parser read.
    pub fn of(key: Key, raw: &[u8]) -> KeyEvent {
        match extended(raw).then(|| decode(raw)).flatten() {
            Some(ev) => ev,
            None => KeyEvent::from_key(key),
        }
    }

    /// The key bindings see (as the parser gives it for legacy input): None for a
    /// release, and for keys and text that legacy terminals cannot send.
    pub fn key(&self) -> Option<Key> {
        if self.kind == Kind::Release {
            return None;
        }
        let mut bits = self.mods & (SHIFT | ALT | CTRL);
        if self.mods & META != 0 {
            bits |= ALT;
        }
        let mods = Mods::from_bits(bits);
        let code = match self.code {
            Code::Key(KeyCode::Char(c)) => {
                let typed = single(&self.text);
                if !mods.contains(Mods::CTRL) && !mods.contains(Mods::ALT) && typed.is_some() {
                    // What it typed is the key (shift+5 is %, AltGr+e is €).
                    return typed.map(|t| Key::plain(KeyCode::Char(t)));
                }
                match self.shifted {
                    Some(s) if mods.contains(Mods::SHIFT) && !mods.contains(Mods::CTRL) => {
                        return Some(
                            Key::new(KeyCode::Char(s), mods.difference(Mods::SHIFT)).normalize(),
                        );
                    }
                    _ => KeyCode::Char(c),
                }
            }
            Code::Key(code) => code,
            Code::Other(n) => keypad_key(n)?,
            Code::Text => return None,
        };
        Some(Key::new(code, mods).normalize())
    }

    /// A modifier key itself (shift, ctrl, …), reported only with "report all keys".
    pub fn is_modifier(&self) -> bool {
        matches!(self.code, Code::Other(n) if (num::LEFT_SHIFT..=num::ISO_LEVEL5_SHIFT).contains(&n))
    }

    /// Which physical key, for matching a release with its press.
    pub fn id(&self) -> KeyId {
        (self.code, self.base)
    }
}

fn single(text: &str) -> Option<char> {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

/// The non-keypad key a keypad key stands for in legacy encodings.
pub fn keypad_key(n: u32) -> Option<KeyCode> {
    let digit = |d: u32| char::from_digit(d, 10).map(KeyCode::Char);
    Some(match n {
        57399..=57408 => return digit(n - num::KP_0),
        57409 => KeyCode::Char('.'),
        57410 => KeyCode::Char('/'),
        57411 => KeyCode::Char('*'),
        57412 => KeyCode::Char('-'),
        57413 => KeyCode::Char('+'),
        57414 => KeyCode::Enter,
        57415 => KeyCode::Char('='),
        57416 => KeyCode::Char(','),
        57417 => KeyCode::Left,
        57418 => KeyCode::Right,
        57419 => KeyCode::Up,
        57420 => KeyCode::Down,
        57421 => KeyCode::PageUp,
        57422 => KeyCode::PageDown,
        57423 => KeyCode::Home,
        57424 => KeyCode::End,
        57425 => KeyCode::Insert,
        57426 => KeyCode::Delete,
        _ => return None,
    })
}

/// Whether `raw` is a form only extended key reporting sends (a `CSI … u`, a CSI with
/// sub-parameters, modifyOtherKeys' `CSI 27 ; m ; c ~`): legacy panes need it encoded
/// again; any other key's bytes reach them as they are.
pub fn extended(raw: &[u8]) -> bool {
    let Some(body) = raw.strip_prefix(b"\x1b[") else {
        return false;
    };
    let Some((&fin, params)) = body.split_last() else {
        return false;
    };
    fin == b'u' || params.contains(&b':') || (fin == b'~' && params.starts_with(b"27;"))
}

/// One field of a CSI: its sub-parameters (None where empty).
type Field = Vec<Option<u32>>;

fn fields(params: &[u8]) -> Option<Vec<Field>> {
    params
        .split(|&b| b == b';')
        .map(|f| {
            f.split(|&b| b == b':')
                .map(|s| {
                    if s.is_empty() {
                        return Some(None);
                    }
                    if s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
                        return None;
                    }
                    std::str::from_utf8(s).ok()?.parse::<u32>().ok().map(Some)
                })
                .collect::<Option<Field>>()
        })
        .collect()
}

/// Decodes a key report in CSI form (`ESC [ … final`); None if it is not one.
pub fn decode(raw: &[u8]) -> Option<KeyEvent> {
    let body = raw.strip_prefix(b"\x1b[")?;
    let (&fin, params) = body.split_last()?;
    let f = fields(params)?;
    if f.len() > 3 || f.iter().take(2).any(|x| x.len() > 3) {
        return None;
    }
    let sub = |i: usize, j: usize| f.get(i).and_then(|x| x.get(j)).copied().flatten();
    let mods = u8::try_from(sub(1, 0).unwrap_or(1).saturating_sub(1)).ok()?;
    let kind = match sub(1, 1) {
        None | Some(1) => Kind::Press,
        Some(2) => Kind::Repeat,
        Some(3) => Kind::Release,
        _ => return None,
    };
    let number = sub(0, 0);
    let mut ev = KeyEvent {
        code: Code::Text,
        mods,
        kind,
        shifted: None,
        base: None,
        text: String::new(),
    };
    ev.code = match fin {
        b'u' => {
            ev.shifted = sub(0, 1).and_then(printable);
            ev.base = sub(0, 2).and_then(printable);
            ev.text = f
                .get(2)
                .into_iter()
                .flatten()
                .filter_map(|c| c.and_then(printable))
                .take(MAX_TEXT)
                .collect();
            let (code, extra) = code_of(number?)?;
            ev.mods |= extra;
            code
        }
        b'~' if number == Some(27) && f.len() == 3 => {
            // modifyOtherKeys: the code is the character typed (shifted already).
            let (code, extra) = code_of(sub(2, 0)?)?;
            ev.mods |= extra;
            if let Code::Key(KeyCode::Char(c)) = code {
                if c.is_ascii_uppercase() {
                    ev.mods |= SHIFT;
                    ev.shifted = Some(c);
                    ev.code = Code::Key(KeyCode::Char(c.to_ascii_lowercase()));
                    return Some(ev);
                }
            }
            code
        }
        b'~' if f.len() <= 2 => match number? {
            // Menu, and the keypad's middle key, which kitty names.
            29 => Code::Other(57363),
            num::KP_BEGIN => Code::Other(num::KP_BEGIN),
            n => Code::Key(KeyCode::from_tilde(n)?),
        },
        b'A'..=b'H' | b'P'..=b'S' if f.len() <= 2 && matches!(number, None | Some(1)) => {
            match fin {
                b'E' => Code::Other(num::KP_BEGIN),
                _ => Code::Key(KeyCode::from_final(fin)?),
            }
        }
        _ => return None,
    };
    Some(ev)
}

fn printable(cp: u32) -> Option<char> {
    char::from_u32(cp).filter(|c| !c.is_control())
}

/// The key a kitty key number names, and the modifiers a C0 control code implies.
fn code_of(n: u32) -> Option<(Code, u8)> {
    Some(match n {
        0 => (Code::Text, 0),
        13 => (Code::Key(KeyCode::Enter), 0),
        9 => (Code::Key(KeyCode::Tab), 0),
        8 | 127 => (Code::Key(KeyCode::Backspace), 0),
        27 => (Code::Key(KeyCode::Esc), 0),
        1..=31 => {
            let k = super::parse::control_key(n as u8);
            (Code::Key(k.code), k.mods.bits())
        }
        num::F13..=num::F35 => (Code::Key(KeyCode::F((n - num::F13 + 13) as u8)), 0),
        num::FIRST..=num::LAST => (Code::Other(n), 0),
        _ => (Code::Key(KeyCode::Char(printable(n)?)), 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(raw: &str) -> KeyEvent {
        decode(raw.as_bytes()).unwrap_or_else(|| panic!("{raw:?}"))
    }
    fn key(raw: &str) -> Option<String> {
        ev(raw).key().map(|k| k.to_string())
    }

    #[test]
    #[rustfmt::skip]
    fn kitty_reports_decode_to_the_keys_bindings_see() {
        let cases: &[(&str, Option<&str>)] = &[
            ("\x1b[97u", Some("a")), ("\x1b[97;5u", Some("C-a")), ("\x1b[98;5u", Some("C-b")),
            ("\x1b[13;2u", Some("S-Enter")), ("\x1b[13u", Some("Enter")), ("\x1b[9;5u", Some("C-Tab")),
            ("\x1b[9;2u", Some("BTab")), ("\x1b[27u", Some("Escape")), ("\x1b[127;5u", Some("C-BSpace")),
            // Shifted keys: by the text, or the shifted key reported beside it.
            ("\x1b[97;2;65u", Some("A")), ("\x1b[53:37;2u", Some("%")), ("\x1b[53;2;37u", Some("%")),
            ("\x1b[97:65;2u", Some("A")), ("\x1b[97;2u", Some("A")), ("\x1b[97:65;6u", Some("C-S-a")),
            ("\x1b[97:65;4u", Some("M-A")), ("\x1b[101;;8364u", Some("€")),
            // Presses and repeats are keys, releases are not.
            ("\x1b[98;5:1u", Some("C-b")), ("\x1b[98;5:2u", Some("C-b")), ("\x1b[98;5:3u", None),
            ("\x1b[1;5:3A", None), ("\x1b[1;5:2A", Some("C-Up")), ("\x1b[A", Some("Up")),
            ("\x1b[13~", Some("F3")), ("\x1b[1;2P", Some("S-F1")), ("\x1b[3;5:1~", Some("C-Delete")),
            // Keypad keys are the keys they stand for; other keys none.
            ("\x1b[57414u", Some("Enter")), ("\x1b[57400;5u", Some("C-1")), ("\x1b[57419u", Some("Up")),
            ("\x1b[57441;2u", None), ("\x1b[57428u", None), ("\x1b[0;;26085:26412u", None),
            // Super and the locks do not change the key; meta is alt.
            ("\x1b[98;13u", Some("C-b")), ("\x1b[98;69u", Some("C-b")), ("\x1b[120;33u", Some("M-x")),
            // modifyOtherKeys.
            ("\x1b[27;5;98~", Some("C-b")), ("\x1b[27;2;13~", Some("S-Enter")), ("\x1b[27;6;72~", Some("C-S-h")),
        ];
        for (raw, want) in cases {
            assert_eq!(key(raw).as_deref(), *want, "{raw:?}");
        }
        assert!(ev("\x1b[57441;2u").is_modifier());
        assert_eq!(ev("\x1b[0;;26085:26412u").text, "日本");
        assert_eq!(ev("\x1b[97;1:3u").kind, Kind::Release);
        assert_eq!(ev("\x1b[57376u").code, Code::Key(KeyCode::F(13)));
    }

    #[test]
    fn bad_reports_are_no_keys() {
        for raw in [
            "\x1b[u",
            "\x1b[97;1:4u",
            "\x1b[97;999u",
            "\x1b[1:2:3:4u",
            "\x1b[99999999999u",
            "\x1b[2;1;1~",
            "\x1b[2A",
            "\x1b[97;;x u",
            "\x1b[55296u",
            "\x1b[1;2;3A",
        ] {
            assert_eq!(decode(raw.as_bytes()), None, "{raw:?}");
        }
        // Text is bounded and never holds a control character.
        let mut long = "\x1b[0;;".to_string();
        long.push_str(&vec!["65"; 100].join(":"));
        long.push('u');
        assert_eq!(ev(&long).text.chars().count(), MAX_TEXT);
        assert_eq!(ev("\x1b[97;;13:97u").text, "a");
    }

    #[test]
    fn extended_forms_are_told_from_legacy_ones() {
        for raw in ["\x1b[97u", "\x1b[1;5:3A", "\x1b[27;5;9~", "\x1b[13;2u"] {
            assert!(extended(raw.as_bytes()), "{raw:?}");
        }
        for raw in [
            "\x1b[A",
            "\x1b[1;5A",
            "\x1b[3~",
            "\x1bOA",
            "a",
            "\x1b\r",
            "\x1b[27~",
        ] {
            assert!(!extended(raw.as_bytes()), "{raw:?}");
        }
    }
}

#[cfg(test)]
mod parser_tests {
    use crate::input::{InputParser, Key, Token};

    #[test]
    fn the_parser_gives_kitty_presses_as_keys_and_the_rest_as_reports() {
        let mut p = InputParser::new();
        let tokens = p.feed(b"\x1b[98;5u\x1b[98;5:3u\x1b[57441;2u\x1b[13;2u\x1b[0;;97u\x1b[?1u");
        let key = |n: &str, raw: &[u8]| Token::Key {
            key: Key::parse(n).unwrap(),
            raw: raw.to_vec(),
        };
        assert_eq!(
            tokens,
            [
                key("C-b", b"\x1b[98;5u"),
                Token::Report(b"\x1b[98;5:3u".to_vec()),
                Token::Report(b"\x1b[57441;2u".to_vec()),
                key("S-Enter", b"\x1b[13;2u"),
                Token::Report(b"\x1b[0;;97u".to_vec()),
                Token::Unknown(b"\x1b[?1u".to_vec()),
            ]
        );
    }
}
