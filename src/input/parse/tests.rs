//! Tests of the sequence table (`sequences`) as the parser reads it: each sequence fed
//! whole and split at every point after its ESC. They sit beside `parse/mod.rs`, above
//! both files, because they need the parser; `sequences` itself never imports it.

use super::{split_text, InputParser, Token};
use crate::input::{Key, Mods, MouseButton, MouseEvent, MouseKind};

/// A key token, as the parser gives it (shared with the parser's own tests).
pub(super) fn k(notation: &str, raw: &[u8]) -> Token {
    Token::Key {
        key: Key::parse(notation).unwrap(),
        raw: raw.to_vec(),
    }
}
pub(super) fn u(raw: &[u8]) -> Token {
    Token::Unknown(raw.to_vec())
}
pub(super) fn feed(bytes: &[u8]) -> Vec<Token> {
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
