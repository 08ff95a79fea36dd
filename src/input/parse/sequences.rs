//! The table of escape sequences: what each one the user's terminal sends means. CSI
//! (`ESC [`): cursor and function keys by final byte and `CSI n ~` number, xterm
//! modifiers, modifyOtherKeys, kitty keyboard reports, SGR and X10 mouse, focus, the
//! paste start marker; SS3 (`ESC O`): application-mode keys; OSC/DCS/APC strings
//! (`ESC ]`, `ESC P`, `ESC _`): replies, passed through whole. Every function gets the
//! buffer starting at the ESC and answers with `Parsed::Done(item, len)` or `Pending`;
//! the parser above decides what to do with pending bytes.
//!
//! Invariants: never panics (all indexing is checked); `Pending` is only returned when
//! more bytes could complete the sequence and `eof` is false; a byte that cannot
//! continue a CSI/SS3 turns the introducer into an alt key (`ESC [` → M-[) so that the
//! rest is read again as ordinary input.

use super::token::{control_key, head, key, key_of, unknown, Item, Parsed, Token, ESC, PENDING};
use crate::input::event;
use crate::input::keys::{Key, KeyCode, Mods};
use crate::input::mouse::MouseEvent;

/// Alt + the byte after ESC as a plain character (`ESC [` → M-[ when it is not a CSI).
fn alt_char(buf: &[u8]) -> Parsed {
    let c = buf.get(1).map_or('[', |&b| char::from(b));
    key(KeyCode::Char(c), Mods::ALT, head(buf, 2))
}

pub(super) fn parse_csi(buf: &[u8], eof: bool) -> Parsed {
    if buf.len() == 2 {
        return if eof { alt_char(buf) } else { PENDING };
    }
    if buf.get(2) == Some(&b'M') {
        // X10 mouse: three raw bytes follow, whatever their values.
        return match buf.get(3..6) {
            Some(&[cb, cx, cy]) => match MouseEvent::from_x10(cb, cx, cy) {
                Some(ev) => Parsed::Done(Item::Token(Token::Mouse(ev)), 6),
                None => unknown(head(buf, 6)),
            },
            _ if eof => unknown(buf),
            _ => PENDING,
        };
    }
    let in_range = |i: usize, lo: u8, hi: u8| buf.get(i).is_some_and(|b| (lo..=hi).contains(b));
    let mut i = 2;
    while in_range(i, 0x30, 0x3f) {
        i += 1;
    }
    let params_end = i;
    while in_range(i, 0x20, 0x2f) {
        i += 1;
    }
    match buf.get(i) {
        None if eof => unknown(buf),
        None => PENDING,
        Some(&fin @ 0x40..=0x7e) => {
            let params = buf.get(2..params_end).unwrap_or_default();
            let raw = head(buf, i + 1);
            if params_end != i {
                return unknown(raw); // intermediates: nothing we decode
            }
            csi_token(raw, params, fin)
        }
        // Not a valid CSI: ESC [ was M-[ and the rest is read again.
        Some(_) => alt_char(buf),
    }
}

/// Splits `1;5` into numbers (empty = 0, saturating); `None` if not digits/semicolons.
fn numbers(params: &[u8]) -> Option<Vec<u32>> {
    if params.is_empty() {
        return Some(Vec::new());
    }
    params
        .split(|&b| b == b';')
        .map(|p| {
            p.iter().try_fold(0u32, |acc, &d| {
                d.is_ascii_digit()
                    .then(|| acc.saturating_mul(10).saturating_add(u32::from(d - b'0')))
            })
        })
        .collect()
}

fn csi_token(raw: &[u8], params: &[u8], fin: u8) -> Parsed {
    let done = |t: Token| Parsed::Done(Item::Token(t), raw.len());
    if let Some(sgr) = params.strip_prefix(b"<") {
        let ev = match (fin, numbers(sgr).as_deref()) {
            (b'M' | b'm', Some(&[b, x, y])) => MouseEvent::from_sgr(b, x, y, fin == b'm'),
            _ => None,
        };
        return ev.map_or_else(|| unknown(raw), |ev| done(Token::Mouse(ev)));
    }
    // The kitty keyboard protocol's reports (and fixterms' `CSI code ; mod u`).
    if fin == b'u' || params.contains(&b':') {
        return match event::decode(raw) {
            Some(ev) => match ev.key() {
                Some(key) => key_of(key, raw),
                None => done(Token::Report(raw.to_vec())),
            },
            None => unknown(raw),
        };
    }
    let Some(p) = numbers(params) else {
        return unknown(raw);
    };
    let arg = |i: usize| p.get(i).copied().unwrap_or(0);
    let mods = Mods::from_xterm(arg(1));
    let code = match fin {
        b'I' | b'O' if p.is_empty() => return done(Token::Focus(fin == b'I')),
        b'~' if params == b"200" => return Parsed::Done(Item::PasteStart, raw.len()),
        // modifyOtherKeys (`CSI 27 ; mod ; code ~`) and kitty/fixterms (`CSI code ; mod u`).
        b'~' if arg(0) == 27 && p.len() == 3 => return codepoint_key(arg(2), mods, raw),
        _ if p.len() > 2 => None,
        b'~' => KeyCode::from_tilde(arg(0)),
        // Letter finals only ever carry `1` as first parameter.
        _ if arg(0) > 1 => None,
        // Shift is implied by BackTab itself.
        b'Z' => return key(KeyCode::BackTab, mods.difference(Mods::SHIFT), raw),
        _ => KeyCode::from_final(fin),
    };
    code.map_or_else(|| unknown(raw), |c| key(c, mods, raw))
}

/// A key given as a Unicode code point plus modifiers, normalized like bindings are.
fn codepoint_key(cp: u32, mods: Mods, raw: &[u8]) -> Parsed {
    let base = match u8::try_from(cp) {
        Ok(b @ (0x00..=0x1f | 0x7f)) => control_key(b),
        _ => match char::from_u32(cp).filter(|c| !c.is_control()) {
            Some(c) => Key::plain(KeyCode::Char(c)),
            None => return unknown(raw),
        },
    };
    key_of(Key::new(base.code, base.mods | mods).normalize(), raw)
}

pub(super) fn parse_ss3(buf: &[u8], eof: bool) -> Parsed {
    if buf.len() == 2 {
        return if eof { alt_char(buf) } else { PENDING };
    }
    // Old xterms put a modifier digit before the final (`ESC O 5 A`).
    let digits = buf
        .iter()
        .skip(2)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let i = 2 + digits;
    match buf.get(i) {
        None if eof => unknown(buf),
        None => PENDING,
        Some(&fin @ 0x40..=0x7e) => {
            let raw = head(buf, i + 1);
            let mods = match numbers(buf.get(2..i).unwrap_or_default()).as_deref() {
                Some(&[m]) => Mods::from_xterm(m),
                _ => Mods::NONE,
            };
            let code = match fin {
                b'M' => KeyCode::Enter, // keypad Enter in application mode
                _ => match KeyCode::from_final(fin) {
                    Some(code) => code,
                    None => return unknown(raw),
                },
            };
            key(code, mods, raw)
        }
        Some(_) => alt_char(buf),
    }
}

pub(super) enum StrEnd {
    /// The string ends before index n (terminator included, or cut before a control).
    Ended(usize),
    /// No end yet.
    Open,
    /// No end yet, and the last byte is an ESC that may start `ESC \`.
    OpenEsc,
}

pub(super) fn scan_string(buf: &[u8], from: usize) -> StrEnd {
    for (i, &b) in buf.iter().enumerate().skip(from) {
        match b {
            0x07 => return StrEnd::Ended(i + 1),
            ESC => {
                return match buf.get(i + 1) {
                    Some(b'\\') => StrEnd::Ended(i + 2),
                    Some(_) => StrEnd::Ended(i),
                    None => StrEnd::OpenEsc,
                }
            }
            0x00..=0x1f => return StrEnd::Ended(i),
            _ => {}
        }
    }
    StrEnd::Open
}

/// OSC (`ESC ]`), DCS (`ESC P`) and APC (`ESC _`) replies, up to BEL or `ESC \`.
pub(super) fn parse_string(buf: &[u8], eof: bool) -> Parsed {
    // At the end of a chunk these are typed M-], M-P, M-_: terminals write a reply in
    // one go, so it is not worth making the user wait for a possible one.
    let Some(&first) = buf.get(2) else {
        return alt_char(buf);
    };
    let is_reply = match buf.get(1) {
        Some(b']') => first.is_ascii_digit(),
        Some(b'P') => first.is_ascii_digit() || b"$+>=|!".contains(&first),
        _ => first == b'G',
    };
    if !is_reply {
        return alt_char(buf);
    }
    match scan_string(buf, 2) {
        StrEnd::Ended(n) => unknown(head(buf, n)),
        StrEnd::Open | StrEnd::OpenEsc if eof => unknown(buf),
        StrEnd::Open | StrEnd::OpenEsc => Parsed::Pending { string: true },
    }
}
