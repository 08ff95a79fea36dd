//! Decoders for the escape sequences that start with `ESC [` (CSI), `ESC O` (SS3) and
//! `ESC ]`/`ESC P`/`ESC _` (OSC/DCS/APC strings); split out of `parse` to keep each
//! file small. Every function gets the buffer starting at the ESC and answers with
//! `Parsed::Done(item, len)` or `Pending`.
//!
//! Invariants: never panics (all indexing is checked); `Pending` is only returned when
//! more bytes could complete the sequence and `eof` is false; a byte that cannot
//! continue a CSI/SS3 turns the introducer into an alt key (`ESC [` → M-[) so that the
//! rest is read again as ordinary input.

use super::keys::{Key, KeyCode, Mods};
use super::mouse::MouseEvent;
use super::parse::Token;
use super::parse::{alt_char, control_key, head, key, key_of, unknown, Item, Parsed, ESC, PENDING};

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
        return match super::event::decode(raw) {
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

#[cfg(test)]
mod tests {
    use super::super::parse::split_text;
    use super::super::{InputParser, Key, Mods, MouseButton, MouseEvent, MouseKind, Token};

    fn k(notation: &str, raw: &[u8]) -> Token {
        Token::Key {
            key: Key::parse(notation).unwrap(),
            raw: raw.to_vec(),
        }
    }
    fn u(raw: &[u8]) -> Token {
        Token::Unknown(raw.to_vec())
    }
    fn feed(bytes: &[u8]) -> Vec<Token> {
        split_text(InputParser::new().feed(bytes))
    }

    #[test]
    #[rustfmt::skip]
    fn key_sequences() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x1b[A", "Up"), (b"\x1b[B", "Down"), (b"\x1b[C", "Right"), (b"\x1b[D", "Left"),
            (b"\x1b[H", "Home"), (b"\x1b[F", "End"), (b"\x1b[1;2A", "S-Up"), (b"\x1b[1;5D", "C-Left"),
            (b"\x1b[1;3C", "M-Right"), (b"\x1b[1;8H", "C-M-S-Home"), (b"\x1b[1;6F", "C-S-End"),
            (b"\x1b[1~", "Home"), (b"\x1b[7~", "Home"), (b"\x1b[2~", "Insert"), (b"\x1b[3~", "Delete"),
            (b"\x1b[3;5~", "C-Delete"), (b"\x1b[4~", "End"), (b"\x1b[8~", "End"), (b"\x1b[5~", "PageUp"),
            (b"\x1b[6;2~", "S-PageDown"), (b"\x1b[11~", "F1"), (b"\x1b[12~", "F2"), (b"\x1b[13~", "F3"),
            (b"\x1b[14~", "F4"), (b"\x1b[15~", "F5"), (b"\x1b[17~", "F6"), (b"\x1b[18~", "F7"),
            (b"\x1b[19~", "F8"), (b"\x1b[20~", "F9"), (b"\x1b[21~", "F10"), (b"\x1b[23~", "F11"),
            (b"\x1b[24~", "F12"), (b"\x1b[24;5~", "C-F12"), (b"\x1b[1;2P", "S-F1"), (b"\x1b[Z", "BTab"),
            (b"\x1bOA", "Up"), (b"\x1bOB", "Down"), (b"\x1bOC", "Right"), (b"\x1bOD", "Left"),
            (b"\x1bOH", "Home"), (b"\x1bOF", "End"), (b"\x1bOP", "F1"), (b"\x1bOQ", "F2"),
            (b"\x1bOR", "F3"), (b"\x1bOS", "F4"), (b"\x1bO5A", "C-Up"), (b"\x1bOM", "Enter"),
            (b"\x1b[97;5u", "C-a"), (b"\x1b[13u", "Enter"), (b"\x1b[105;5u", "Tab"),
            (b"\x1b[97;2u", "A"), (b"\x1b[27;5;98~", "C-b"), (b"\x1b[27;3;13~", "M-Enter"),
        ];
        for (bytes, name) in cases {
            assert_eq!(feed(bytes), [k(name, bytes)], "{name}");
            // Every split point after the ESC gives the same token.
            for i in 2..bytes.len() {
                let mut p = InputParser::new();
                let mut got = p.feed(&bytes[..i]);
                got.extend(p.feed(&bytes[i..]));
                assert_eq!(got, [k(name, bytes)], "{name} split at {i}");
            }
        }
    }

    #[test]
    fn unknown_sequences_pass_through() {
        let cases: [&[u8]; 14] = [
            b"\x1b[?1;2c",
            b"\x1b[>0;276;0c",
            b"\x1b[2J",
            b"\x1b[1;2;3A",
            b"\x1b[2A",
            b"\x1b[99~",
            b"\x1b[201~",
            b"\x1b[1 q",
            b"\x1b[u",
            b"\x1bOx",
            b"\x1b]11;rgb:0000/0000/0000\x07",
            b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\",
            b"\x1bP1$r0m\x1b\\",
            b"\x1b_Gi=1;OK\x1b\\",
        ];
        for bytes in cases {
            assert_eq!(feed(bytes), [u(bytes)], "{bytes:?}");
        }
        assert_eq!(feed(b"\x1b]x"), [k("M-]", b"\x1b]"), k("x", b"x")]);
        assert_eq!(feed(b"\x1b]"), [k("M-]", b"\x1b]")]);
        assert_eq!(feed(b"\x1bP"), [k("M-P", b"\x1bP")]);
        assert_eq!(feed(b"\x1bPa"), [k("M-P", b"\x1bP"), k("a", b"a")]);
        assert_eq!(feed(b"\x1b_x"), [k("M-_", b"\x1b_"), k("x", b"x")]);
        assert_eq!(feed(b"\x1bO\r"), [k("M-O", b"\x1bO"), k("Enter", b"\r")]);
        let st_cut = feed(b"\x1b]11;a\x1bx");
        assert_eq!(st_cut, [u(b"\x1b]11;a"), k("M-x", b"\x1bx")]);
    }

    #[test]
    fn mouse_and_focus() {
        let ev = |kind, button, x, y, mods| {
            Token::Mouse(MouseEvent {
                kind,
                button,
                x,
                y,
                mods,
            })
        };
        use MouseButton as B;
        use MouseKind as K;
        let n = Mods::NONE;
        assert_eq!(feed(b"\x1b[<0;12;5M"), [ev(K::Press, B::Left, 11, 4, n)]);
        assert_eq!(feed(b"\x1b[<0;12;5m"), [ev(K::Release, B::Left, 11, 4, n)]);
        assert_eq!(feed(b"\x1b[<34;1;1M"), [ev(K::Drag, B::Right, 0, 0, n)]);
        assert_eq!(
            feed(b"\x1b[<35;300;2M"),
            [ev(K::Motion, B::None, 299, 1, n)]
        );
        assert_eq!(
            feed(b"\x1b[<65;3;4M"),
            [ev(K::Press, B::WheelDown, 2, 3, n)]
        );
        assert_eq!(
            feed(b"\x1b[<20;3;4M"),
            [ev(K::Press, B::Left, 2, 3, Mods::SHIFT | Mods::CTRL)]
        );
        assert_eq!(feed(b"\x1b[<128;1;1M"), [u(b"\x1b[<128;1;1M")]);
        assert_eq!(feed(b"\x1b[<0;1M"), [u(b"\x1b[<0;1M")]);
        assert_eq!(feed(b"\x1b[M !!"), [ev(K::Press, B::Left, 0, 0, n)]);
        assert_eq!(
            feed(&[0x1b, b'[', b'M', 32 + 3, 33 + 10, 33 + 5]),
            [ev(K::Release, B::None, 10, 5, n)]
        );
        assert_eq!(
            feed(&[0x1b, b'[', b'M', 32 + 64, 0x1b, 0xff]),
            [ev(K::Press, B::WheelUp, 0, 222, n)]
        );
        let mut p = InputParser::new();
        assert_eq!(p.feed(b"\x1b[M"), []);
        assert_eq!(p.feed(b" !"), []);
        assert_eq!(
            split_text(p.feed(b"!x")),
            [ev(K::Press, B::Left, 0, 0, n), k("x", b"x")]
        );
        assert_eq!(
            feed(b"\x1b[I\x1b[O"),
            [Token::Focus(true), Token::Focus(false)]
        );
    }

    #[test]
    fn flush_resolves_pending_introducers() {
        let cases: [(&[u8], Token); 6] = [
            (b"\x1b[", k("M-[", b"\x1b[")),
            (b"\x1bO", k("M-O", b"\x1bO")),
            (b"\x1b[<0;1", u(b"\x1b[<0;1")),
            (b"\x1bO5", u(b"\x1bO5")),
            (b"\x1b[1;5", u(b"\x1b[1;5")),
            (b"\x1b]11;rgb", u(b"\x1b]11;rgb")),
        ];
        for (bytes, want) in cases {
            let mut p = InputParser::new();
            assert_eq!(p.feed(bytes), [], "{bytes:?}");
            assert!(p.has_pending());
            assert_eq!(p.flush(), [want], "{bytes:?}");
            assert!(!p.has_pending());
            assert_eq!(split_text(p.feed(b"x")), [k("x", b"x")]);
        }
    }
}
