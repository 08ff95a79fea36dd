//! A key event as bytes for one pane, the way its program asked ([`KeyMode`]): kitty
//! flags → the kitty keyboard protocol's forms; modifyOtherKeys 1 or 2 → `CSI 27 ; mod ;
//! code ~` where legacy bytes would lose a modifier (1) or for every modified key (2);
//! neither → legacy (xterm) bytes, modifiers with no legacy form dropped, as xterm does.
//!
//! Invariant: pure and total: every event gives some bytes or none, never garbage (a
//! key a mode cannot express gives nothing, a release only reaches a pane that asked).

use super::event::{self, Code, KeyEvent, Kind, ALT, CAPS_LOCK, CTRL, NUM_LOCK, SHIFT};
use super::keys::{Key, KeyCode, Mods};
use crate::term::vt::KeyMode;

/// The kitty flags.
const DISAMBIGUATE: u8 = 1;
const EVENT_TYPES: u8 = 2;
const ALTERNATES: u8 = 4;
const ALL_KEYS: u8 = 8;
const TEXT: u8 = 16;

/// The bytes for `ev` in `mode`.
pub fn encode(ev: &KeyEvent, mode: KeyMode) -> Vec<u8> {
    if mode.kitty != 0 {
        kitty(ev, mode.kitty, mode.app_cursor)
    } else if mode.modify_other_keys != 0 {
        modify_other_keys(ev, mode.modify_other_keys, mode.app_cursor)
    } else {
        legacy(ev, mode.app_cursor)
    }
}

/// Legacy bytes: a press or repeat of a key a legacy terminal can send.
pub fn legacy(ev: &KeyEvent, app_cursor: bool) -> Vec<u8> {
    if ev.kind == Kind::Release {
        return Vec::new();
    }
    match ev.key() {
        Some(key) => legacy_key(key, app_cursor),
        // Text with no key (an input method's) is typed as it is.
        None if ev.code == Code::Text => ev.text.as_bytes().to_vec(),
        None => Vec::new(),
    }
}

/// [`Key::to_bytes`], with cursor keys in application mode (DECCKM) as `SS3 A`.
fn legacy_key(key: Key, app_cursor: bool) -> Vec<u8> {
    if app_cursor && key.mods.is_empty() {
        let fin = match key.code {
            KeyCode::Up => Some(b'A'),
            KeyCode::Down => Some(b'B'),
            KeyCode::Right => Some(b'C'),
            KeyCode::Left => Some(b'D'),
            KeyCode::Home => Some(b'H'),
            KeyCode::End => Some(b'F'),
            _ => None,
        };
        if let Some(fin) = fin {
            return vec![0x1b, b'O', fin];
        }
    }
    key.to_bytes()
}

/// xterm's modifyOtherKeys (level 1 or 2); functional keys keep their legacy forms.
fn modify_other_keys(ev: &KeyEvent, level: u8, app_cursor: bool) -> Vec<u8> {
    if ev.kind == Kind::Release {
        return Vec::new();
    }
    let Some(key) = ev.key() else {
        return legacy(ev, app_cursor);
    };
    let m = key.mods;
    let (code, m) = match key.code {
        KeyCode::Char(c) => {
            // Level 1 leaves the keys whose legacy bytes say it all: ctrl + a key with a
            // control code, and alt + a key (ESC first).
            let plain = m.is_empty()
                || (level == 1
                    && ((m.contains(Mods::CTRL) && ctrl_code(c).is_some()) || m == Mods::ALT));
            if plain {
                return legacy_key(key, app_cursor);
            }
            let c = if m.contains(Mods::SHIFT) {
                c.to_ascii_uppercase()
            } else {
                c
            };
            (u32::from(c), m)
        }
        KeyCode::BackTab if level >= 2 || !m.is_empty() => (9, m | Mods::SHIFT),
        KeyCode::Enter | KeyCode::Tab | KeyCode::Backspace | KeyCode::Esc
            if !m.is_empty() && (level >= 2 || m != Mods::ALT) =>
        {
            let code = match key.code {
                KeyCode::Enter => 13,
                KeyCode::Tab => 9,
                KeyCode::Backspace => 127,
                _ => 27,
            };
            (code, m)
        }
        _ => return legacy_key(key, app_cursor),
    };
    format!("\x1b[27;{};{code}~", m.to_xterm()).into_bytes()
}

/// The control code ctrl + `c` gives in legacy mode, for the keys that have one.
fn ctrl_code(c: char) -> Option<u8> {
    Some(match c {
        ' ' | '@' | '2' => 0,
        'a'..='z' => c as u8 - b'a' + 1,
        '[' | '3' => 27,
        '\\' | '4' => 28,
        ']' | '5' => 29,
        '^' | '6' | '~' => 30,
        '_' | '/' | '7' => 31,
        '?' | '8' => 127,
        _ => return None,
    })
}

/// The kitty keyboard protocol with `flags`.
fn kitty(ev: &KeyEvent, flags: u8, app_cursor: bool) -> Vec<u8> {
    let all = flags & ALL_KEYS != 0;
    let disambiguate = flags & DISAMBIGUATE != 0 || all;
    let events = flags & EVENT_TYPES != 0;
    if ev.kind == Kind::Release && !events {
        return Vec::new();
    }
    if ev.is_modifier() && !all {
        return Vec::new();
    }
    // Lock modifiers count only where every key is reported.
    let mods = if all {
        ev.mods
    } else {
        ev.mods & !(CAPS_LOCK | NUM_LOCK)
    };
    let with_kind = events && ev.kind != Kind::Press;
    let typed = !ev.text.is_empty();
    let report = Report {
        number: 0,
        fin: b'u',
        shifted: None,
        base: None,
        mods,
        kind: with_kind.then_some(ev.kind),
        text: "",
    };
    match ev.code {
        Code::Text if !all => {
            if ev.kind == Kind::Release {
                Vec::new()
            } else {
                ev.text.as_bytes().to_vec()
            }
        }
        Code::Text => Report {
            text: if flags & TEXT != 0 { &ev.text } else { "" },
            ..report
        }
        .bytes(),
        Code::Key(KeyCode::Char(c)) => {
            if typed && !all && ev.kind != Kind::Release {
                return ev.text.as_bytes().to_vec();
            }
            let alternates = flags & ALTERNATES != 0
                && ((mods & SHIFT != 0 && ev.shifted.is_some()) || ev.base.is_some());
            let text = if all && flags & TEXT != 0 && typed {
                ev.text.as_str()
            } else {
                ""
            };
            if !with_kind && !alternates && text.is_empty() {
                if mods == 0 && !all {
                    return c.to_string().into_bytes();
                }
                if !disambiguate {
                    if let Some(bytes) = legacy_text_key(c, mods) {
                        return bytes;
                    }
                }
            }
            Report {
                number: u32::from(c),
                shifted: if alternates && mods & SHIFT != 0 {
                    ev.shifted
                } else {
                    None
                },
                base: if alternates { ev.base } else { None },
                text,
                ..report
            }
            .bytes()
        }
        _ => {
            let Some((number, fin)) = functional(ev.code) else {
                return Vec::new();
            };
            let c0 = matches!(
                ev.code,
                Code::Key(KeyCode::Enter | KeyCode::Tab | KeyCode::Backspace)
            );
            if c0 && !all {
                // Kept usable at a shell prompt a program left in this mode.
                if ev.kind == Kind::Release {
                    return Vec::new();
                }
                if mods == 0 {
                    return legacy(ev, false);
                }
            }
            if !disambiguate && !with_kind && mods & !(SHIFT | ALT | CTRL) == 0 {
                let bytes = legacy(ev, app_cursor);
                if !bytes.is_empty() {
                    return bytes;
                }
            }
            Report {
                number,
                fin,
                ..report
            }
            .bytes()
        }
    }
}

/// Legacy bytes of a text key with modifiers, for kitty flags without disambiguation:
/// alt sends ESC first, ctrl the control code, shift the shifted character.
fn legacy_text_key(c: char, mods: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let rest = mods & !ALT;
    if mods & ALT != 0 {
        out.push(0x1b);
    }
    match rest {
        0 => out.extend_from_slice(c.to_string().as_bytes()),
        SHIFT if c.is_ascii_lowercase() => out.push(c.to_ascii_uppercase() as u8),
        CTRL => out.push(ctrl_code(c)?),
        _ => return None,
    }
    Some(out)
}

/// The number and final byte of a functional key in the kitty protocol.
fn functional(code: Code) -> Option<(u32, u8)> {
    Some(match code {
        Code::Key(k) => match k {
            KeyCode::Esc => (27, b'u'),
            KeyCode::Enter => (13, b'u'),
            KeyCode::Tab | KeyCode::BackTab => (9, b'u'),
            KeyCode::Backspace => (127, b'u'),
            KeyCode::Insert => (2, b'~'),
            KeyCode::Delete => (3, b'~'),
            KeyCode::Left => (1, b'D'),
            KeyCode::Right => (1, b'C'),
            KeyCode::Up => (1, b'A'),
            KeyCode::Down => (1, b'B'),
            KeyCode::PageUp => (5, b'~'),
            KeyCode::PageDown => (6, b'~'),
            KeyCode::Home => (1, b'H'),
            KeyCode::End => (1, b'F'),
            KeyCode::F(1) => (1, b'P'),
            KeyCode::F(2) => (1, b'Q'),
            // Not `CSI R`: that is a cursor position report.
            KeyCode::F(3) => (13, b'~'),
            KeyCode::F(4) => (1, b'S'),
            KeyCode::F(n @ 5..=12) => (
                match n {
                    5 => 15,
                    6..=10 => u32::from(n) + 11,
                    _ => u32::from(n) + 12,
                },
                b'~',
            ),
            KeyCode::F(n @ 13..=35) => (event::num::F13 + u32::from(n) - 13, b'u'),
            KeyCode::F(_) | KeyCode::Char(_) => return None,
        },
        Code::Other(event::num::KP_BEGIN) => (1, b'E'),
        Code::Other(n) => (n, b'u'),
        Code::Text => return None,
    })
}

/// `CSI number:shifted:base ; mods+1:kind ; text u` with the parts that are present.
struct Report<'a> {
    number: u32,
    fin: u8,
    shifted: Option<char>,
    base: Option<char>,
    mods: u8,
    kind: Option<Kind>,
    text: &'a str,
}

impl Report<'_> {
    fn bytes(&self) -> Vec<u8> {
        use std::fmt::Write as _;
        let mut s = String::from("\x1b[");
        let alternates = self.shifted.is_some() || self.base.is_some();
        let second = self.mods != 0 || self.kind.is_some();
        let third = !self.text.is_empty();
        if self.number != 1 || alternates || second || third {
            let _ = write!(s, "{}", self.number);
        }
        if alternates {
            s.push(':');
            if let Some(c) = self.shifted {
                let _ = write!(s, "{}", u32::from(c));
            }
            if let Some(c) = self.base {
                let _ = write!(s, ":{}", u32::from(c));
            }
        }
        if second || third {
            s.push(';');
        }
        if second {
            let _ = write!(s, "{}", u16::from(self.mods) + 1);
            if let Some(kind) = self.kind {
                let k = match kind {
                    Kind::Press => 1,
                    Kind::Repeat => 2,
                    Kind::Release => 3,
                };
                let _ = write!(s, ":{k}");
            }
        }
        if third {
            s.push(';');
            let cps: Vec<String> = self
                .text
                .chars()
                .map(|c| u32::from(c).to_string())
                .collect();
            s.push_str(&cps.join(":"));
        }
        s.push(char::from(self.fin));
        s.into_bytes()
    }
}

#[cfg(test)]
mod tests;
