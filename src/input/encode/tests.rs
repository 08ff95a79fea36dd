//! Encoder tables: every key × modifier × mode, the kitty specification's examples, and
//! round trips through the decoder and the input parser.

use super::*;
use crate::input::event::{decode, SUPER};
use crate::input::{InputParser, Token};

fn mode(kitty: u8, mok: u8) -> KeyMode {
    KeyMode {
        kitty,
        modify_other_keys: mok,
        app_cursor: false,
    }
}

/// The event of a key in tmux notation (as a legacy terminal sends it).
fn key(notation: &str) -> KeyEvent {
    KeyEvent::from_key(Key::parse(notation).unwrap())
}

fn s(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).replace('\x1b', "^[")
}

/// Checks `(key, bytes)` rows in one mode (`^[` stands for ESC).
fn table(m: KeyMode, rows: &[(&str, &str)]) {
    for (k, want) in rows {
        assert_eq!(s(encode(&key(k), m)), *want, "{k} in {m:?}");
    }
}

#[test]
#[rustfmt::skip]
fn legacy_mode_is_the_bytes_of_today() {
    table(mode(0, 0), &[
        ("a", "a"), ("A", "A"), ("C-a", "\x01"), ("M-a", "^[a"), ("C-M-a", "^[\x01"), ("%", "%"),
        ("Enter", "\r"), ("S-Enter", "\r"), ("C-Enter", "\r"), ("M-Enter", "^[\r"), ("Tab", "\t"),
        ("C-Tab", "\t"), ("BTab", "^[[Z"), ("BSpace", "\x7f"), ("Escape", "^["), ("Space", " "),
        ("C-Space", "\x00"), ("Up", "^[[A"), ("C-Up", "^[[1;5A"), ("S-F1", "^[[1;2P"), ("F1", "^[OP"),
        ("F5", "^[[15~"), ("C-S-a", "\x01"), ("é", "é"), ("Delete", "^[[3~"), ("M-PageUp", "^[[5;3~"),
    ]);
    // Application cursor keys.
    let app = KeyMode { app_cursor: true, ..mode(0, 0) };
    table(app, &[("Up", "^[OA"), ("Home", "^[OH"), ("C-Up", "^[[1;5A"), ("PageUp", "^[[5~")]);
    // Every legacy key's event encodes back to exactly its bytes.
    let names = "a z ] Space C-a C-z C-] C-_ C-Space % é Enter Tab BTab BSpace Escape Up Down \
                 Left Right Home End PageUp PageDown Insert Delete F1 F4 F5 F12";
    for name in names.split(' ') {
        let k = Key::parse(name).unwrap();
        for extra in [Mods::NONE, Mods::ALT] {
            let k = Key::new(k.code, k.mods | extra);
            assert_eq!(encode(&KeyEvent::from_key(k), mode(0, 0)), k.to_bytes(), "{k}");
        }
    }
}

#[test]
#[rustfmt::skip]
fn kitty_disambiguate() {
    // CSI > 1 u: what Claude Code asks for.
    table(mode(1, 0), &[
        ("a", "a"), ("A", "A"), ("%", "%"), ("é", "é"), ("Space", " "),
        ("Enter", "\r"), ("Tab", "\t"), ("BSpace", "\x7f"),
        ("S-Enter", "^[[13;2u"), ("C-Enter", "^[[13;5u"), ("M-Enter", "^[[13;3u"), ("C-S-Enter", "^[[13;6u"),
        ("C-Tab", "^[[9;5u"), ("BTab", "^[[9;2u"), ("C-BTab", "^[[9;6u"), ("C-BSpace", "^[[127;5u"),
        ("Escape", "^[[27u"), ("M-Escape", "^[[27;3u"),
        ("C-a", "^[[97;5u"), ("C-c", "^[[99;5u"), ("M-a", "^[[97;3u"), ("C-M-a", "^[[97;7u"),
        ("C-S-a", "^[[97;6u"), ("M-A", "^[[97;4u"), ("M-[", "^[[91;3u"), ("C-Space", "^[[32;5u"),
        ("C-1", "^[[49;5u"),
        ("Up", "^[[A"), ("C-Up", "^[[1;5A"), ("S-Down", "^[[1;2B"), ("Home", "^[[H"), ("End", "^[[F"),
        ("F1", "^[[P"), ("F2", "^[[Q"), ("F3", "^[[13~"), ("F4", "^[[S"), ("C-F1", "^[[1;5P"),
        ("F5", "^[[15~"), ("S-F12", "^[[24;2~"), ("Insert", "^[[2~"), ("Delete", "^[[3~"),
        ("PageUp", "^[[5~"), ("C-PageDown", "^[[6;5~"),
    ]);
    // Cursor key mode does not apply once keys are disambiguated.
    table(KeyMode { app_cursor: true, ..mode(1, 0) }, &[("Up", "^[[A")]);
}

#[test]
#[rustfmt::skip]
fn kitty_alternates_events_all_keys_and_text() {
    // CSI > 5 u (Codex): alternate keys.
    table(mode(5, 0), &[("a", "a"), ("C-S-a", "^[[97:65;6u"), ("S-Enter", "^[[13;2u"), ("M-A", "^[[97:65;4u")]);
    // Report all keys: text too, and Enter, Tab, Backspace.
    table(mode(8, 0), &[
        ("a", "^[[97u"), ("A", "^[[97;2u"), ("Enter", "^[[13u"), ("Tab", "^[[9u"), ("BSpace", "^[[127u"),
        ("Escape", "^[[27u"), ("C-a", "^[[97;5u"), ("Up", "^[[A"), ("Space", "^[[32u"),
    ]);
    table(mode(8 | 4, 0), &[("A", "^[[97:65;2u")]);
    // With the text (the specification's example: shift+a -> CSI 97 ; 2 ; 65 u).
    table(mode(8 | 16, 0), &[("A", "^[[97;2;65u"), ("a", "^[[97;;97u"), ("C-a", "^[[97;5u"), ("Enter", "^[[13u")]);
    table(mode(31, 0), &[("A", "^[[97:65;2;65u")]);
    // option+a -> CSI 97 ; ; 229 u (macOS consumed the modifier).
    let option_a = KeyEvent { text: "å".into(), ..key("a") };
    assert_eq!(s(encode(&option_a, mode(8 | 16, 0))), "^[[97;;229u");
    assert_eq!(s(encode(&option_a, mode(1, 0))), "å");
    assert_eq!(s(encode(&option_a, mode(0, 0))), "å");
    // ctrl+С on a Cyrillic layout: the base layout key only (CSI code::base).
    let cyrillic = KeyEvent { base: Some('c'), mods: CTRL, text: String::new(), ..key("с") };
    assert_eq!(s(encode(&cyrillic, mode(1 | 4, 0))), "^[[1089::99;5u");
    assert_eq!(s(encode(&cyrillic, mode(1, 0))), "^[[1089;5u");
}

#[test]
#[rustfmt::skip]
fn kitty_event_types() {
    let release = |k: &str| KeyEvent { kind: Kind::Release, ..key(k) };
    let repeat = |k: &str| KeyEvent { kind: Kind::Repeat, ..key(k) };
    let rows: &[(KeyEvent, u8, &str)] = &[
        (release("C-a"), 1, ""), (release("C-a"), 3, "^[[97;5:3u"), (repeat("C-a"), 3, "^[[97;5:2u"),
        (repeat("C-a"), 1, "^[[97;5u"), (release("Up"), 3, "^[[1;1:3A"), (release("Escape"), 3, "^[[27;1:3u"),
        // Enter, Tab and Backspace have no releases unless every key is reported.
        (release("Enter"), 3, ""), (release("Enter"), 11, "^[[13;1:3u"), (repeat("Enter"), 3, "\r"),
        // Text keys: the press is text, the release a report.
        (release("a"), 3, "^[[97;1:3u"), (repeat("a"), 3, "a"), (release("a"), 0, ""),
    ];
    for (ev, flags, want) in rows {
        assert_eq!(s(encode(ev, mode(*flags, 0))), *want, "{ev:?} with {flags}");
    }
    // Releases never reach legacy or modifyOtherKeys panes.
    assert!(encode(&release("a"), mode(0, 0)).is_empty());
    assert!(encode(&release("C-Tab"), mode(0, 2)).is_empty());
}

#[test]
fn kitty_keys_without_a_legacy_name() {
    let other = |n: u32, mods: u8| KeyEvent {
        code: Code::Other(n),
        mods,
        kind: Kind::Press,
        shifted: None,
        base: None,
        text: String::new(),
    };
    // Modifier keys only with "report all keys" (and their own bit set).
    assert!(encode(&other(57441, SHIFT), mode(1, 0)).is_empty());
    assert_eq!(s(encode(&other(57441, SHIFT), mode(8, 0))), "^[[57441;2u");
    // Keypad keys: their own numbers once disambiguated, else the keys they stand for.
    assert_eq!(s(encode(&other(57414, 0), mode(1, 0))), "^[[57414u");
    assert_eq!(s(encode(&other(57414, 0), mode(0, 0))), "\r");
    assert_eq!(s(encode(&other(57419, CTRL), mode(0, 2))), "^[[1;5A");
    assert_eq!(s(encode(&other(57427, 0), mode(1, 0))), "^[[E");
    // Media keys and F13 and up: nothing in legacy modes.
    assert!(encode(&other(57428, 0), mode(0, 0)).is_empty());
    assert_eq!(s(encode(&other(57428, 0), mode(1, 0))), "^[[57428u");
    let f13 = KeyEvent::from_key(Key::plain(KeyCode::F(13)));
    assert_eq!(s(encode(&f13, mode(1, 0))), "^[[57376u");
    assert!(encode(&f13, mode(0, 0)).is_empty());
    // Super reaches kitty panes; legacy ones get the key without it.
    let super_b = KeyEvent {
        mods: SUPER,
        text: String::new(),
        ..key("b")
    };
    assert_eq!(s(encode(&super_b, mode(1, 0))), "^[[98;9u");
    assert_eq!(s(encode(&super_b, mode(0, 0))), "b");
    // Input-method text with no key.
    let ime = decode("\x1b[0;;26085:26412u".as_bytes()).unwrap();
    assert_eq!(s(encode(&ime, mode(0, 0))), "日本");
    assert_eq!(s(encode(&ime, mode(1, 0))), "日本");
    assert_eq!(s(encode(&ime, mode(24, 0))), "^[[0;;26085:26412u");
    // Lock modifiers count only with every key reported.
    let caps = KeyEvent {
        mods: CTRL | CAPS_LOCK,
        text: String::new(),
        ..key("b")
    };
    assert_eq!(s(encode(&caps, mode(1, 0))), "^[[98;5u");
    assert_eq!(s(encode(&caps, mode(8, 0))), "^[[98;69u");
}

#[test]
#[rustfmt::skip]
fn modify_other_keys_levels() {
    table(mode(0, 2), &[
        ("a", "a"), ("A", "A"), ("Enter", "\r"), ("Escape", "^["), ("Up", "^[[A"), ("C-Up", "^[[1;5A"),
        ("C-Tab", "^[[27;5;9~"), ("S-Enter", "^[[27;2;13~"), ("C-Enter", "^[[27;5;13~"),
        ("M-Enter", "^[[27;3;13~"), ("C-a", "^[[27;5;97~"), ("M-x", "^[[27;3;120~"),
        ("C-S-h", "^[[27;6;72~"), ("C-1", "^[[27;5;49~"), ("BTab", "^[[27;2;9~"),
        ("C-BSpace", "^[[27;5;127~"), ("C-Space", "^[[27;5;32~"),
    ]);
    table(mode(0, 1), &[
        ("a", "a"), ("C-a", "\x01"), ("M-x", "^[x"), ("C-M-a", "^[\x01"), ("C-S-h", "\x08"),
        ("C-Tab", "^[[27;5;9~"), ("S-Enter", "^[[27;2;13~"), ("M-Enter", "^[\r"), ("BTab", "^[[Z"),
        ("C-1", "^[[27;5;49~"), ("C-Space", "\x00"), ("C-F5", "^[[15;5~"),
    ]);
}

/// Every key with every modifier set, as each mode encodes it, decodes to the same key.
#[test]
fn what_the_encoder_writes_the_decoder_reads_back() {
    let names = "a z 1 ; é Space Enter Tab BSpace Escape Up Home End PageUp Delete F1 F3 F5 F12";
    let modes = [
        mode(1, 0),
        mode(5, 0),
        mode(31, 0),
        mode(15, 0),
        mode(0, 1),
        mode(0, 2),
    ];
    for name in names.split(' ') {
        let code = Key::parse(name).unwrap().code;
        for bits in 0..8 {
            let k = Key::new(code, Mods::from_bits(bits)).normalize();
            for m in modes {
                let bytes = encode(&KeyEvent::from_key(k), m);
                let tokens = InputParser::new().feed(&bytes);
                let got: Vec<Key> = tokens
                    .iter()
                    .flat_map(|t| match t {
                        Token::Key { key, .. } => vec![*key],
                        Token::Text(t) => t.chars().map(|c| Key::plain(KeyCode::Char(c))).collect(),
                        other => panic!("{k} in {m:?}: {other:?}"),
                    })
                    .collect();
                // Legacy bytes may lose modifiers (C-Enter is Enter); extended ones may not.
                if crate::input::event::extended(&bytes) {
                    // A key that types something is what it types (shift+space is space).
                    let ev = KeyEvent::from_key(k);
                    let want = match ev.text.chars().next() {
                        Some(c) if m.kitty & 24 == 24 => Key::plain(KeyCode::Char(c)),
                        _ => k,
                    };
                    assert_eq!(got, [want], "{k} in {m:?}: {:?}", s(bytes));
                } else {
                    assert_eq!(got.len(), 1, "{k} in {m:?}: {:?}", s(bytes));
                }
            }
        }
    }
    // With every flag, the whole event comes back.
    for raw in [
        "\x1b[97:65;2;65u",
        "\x1b[98;5:3u",
        "\x1b[1;5:2A",
        "\x1b[13;2u",
        "\x1b[0;;26085u",
    ] {
        let ev = decode(raw.as_bytes()).unwrap();
        assert_eq!(s(encode(&ev, mode(31, 0))), s(raw.as_bytes().to_vec()));
    }
}

/// Every key × every modifier set × every mode (all 32 kitty flag sets, modifyOtherKeys
/// 1 and 2, legacy; cursor keys normal and application): the bytes are never garbage:
/// nothing, text, a C0 control, or escape sequences the parser reads back as that many
/// keys or reports.
#[test]
fn every_key_in_every_mode_gives_bytes_the_parser_reads() {
    let names = "a z 0 9 ; [ ] / é Space Enter Tab BTab BSpace Escape Up Down Left Right Home \
                 End PageUp PageDown Insert Delete F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11 F12";
    let mut modes: Vec<KeyMode> = (0..32).map(|f| mode(f, 0)).collect();
    modes.extend([mode(0, 0), mode(0, 1), mode(0, 2)]);
    let kinds = [Kind::Press, Kind::Repeat, Kind::Release];
    for name in names.split_whitespace() {
        let code = Key::parse(name).unwrap().code;
        for bits in 0..8 {
            let k = Key::new(code, Mods::from_bits(bits)).normalize();
            for m in &modes {
                for app_cursor in [false, true] {
                    for kind in kinds {
                        let ev = KeyEvent {
                            kind,
                            ..KeyEvent::from_key(k)
                        };
                        let m = KeyMode { app_cursor, ..*m };
                        let bytes = encode(&ev, m);
                        if kind == Kind::Release && m.kitty & 2 == 0 {
                            assert!(bytes.is_empty(), "{k} {kind:?} in {m:?}");
                        }
                        let tokens = InputParser::new().feed(&bytes);
                        assert!(
                            tokens.iter().all(|t| matches!(
                                t,
                                Token::Key { .. } | Token::Text(_) | Token::Report(_)
                            )),
                            "{k} {kind:?} in {m:?}: {:?} -> {tokens:?}",
                            s(bytes)
                        );
                    }
                }
            }
        }
    }
}
