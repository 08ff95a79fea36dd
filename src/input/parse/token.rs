//! The tokenizer's vocabulary: [`Token`], what one parse step found ([`Parsed`]), and the
//! small constructors the sequence table and the parser share. The bottom of `parse`: it
//! imports nothing from the files above it (`sequences`, `parser`).
//!
//! Invariant: a token built here from `raw` carries exactly those bytes, and a step's
//! length is the length of those bytes, so forwarding tokens in order gives the input.

use crate::input::keys::{Key, KeyCode, Mods};
use crate::input::mouse::MouseEvent;

/// One unit of terminal input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A key; `raw` is exactly the bytes that produced it (forwarded to the pane as is).
    Key { key: Key, raw: Vec<u8> },
    /// A mouse report (SGR `ESC [ < b ; x ; y M/m` or X10 `ESC [ M cb cx cy`).
    Mouse(MouseEvent),
    /// A run of printable characters (no control bytes, no ESC), each of which is a key
    /// without modifiers; see [`text_keys`].
    Text(String),
    /// Bracketed paste contents, without the `ESC [ 200~` / `ESC [ 201~` markers; a big
    /// paste comes in pieces, the first with `start`, the last with `end`.
    Paste {
        text: Vec<u8>,
        start: bool,
        end: bool,
    },
    /// Focus in (`ESC [ I`, true) or out (`ESC [ O`, false).
    Focus(bool),
    /// A kitty keyboard report that is no key press bindings could name: a release, a
    /// key only that protocol has (modifier, media, lock keys), text with no key. Its
    /// bytes, for the encoder to read again (`input::event::decode`).
    Report(Vec<u8>),
    /// Any other complete sequence, or bytes that cannot be decoded, passed through raw.
    Unknown(Vec<u8>),
}

pub(super) const ESC: u8 = 0x1b;
/// The escape byte, for callers that cut input into pieces (see the `parse` module doc).
pub const ESC_BYTE: u8 = ESC;

/// What one parse step found: a token, or the start of a bracketed paste.
pub(super) enum Item {
    Token(Token),
    PasteStart,
}

pub(super) enum Parsed {
    /// An item and how many bytes it used (at least 1).
    Done(Item, usize),
    /// Incomplete; `string` tells which length cap applies.
    Pending { string: bool },
}

pub(super) const PENDING: Parsed = Parsed::Pending { string: false };

pub(super) fn head(buf: &[u8], n: usize) -> &[u8] {
    buf.get(..n).unwrap_or(buf)
}

pub(super) fn key_of(key: Key, raw: &[u8]) -> Parsed {
    Parsed::Done(
        Item::Token(Token::Key {
            key,
            raw: raw.to_vec(),
        }),
        raw.len(),
    )
}

pub(super) fn key(code: KeyCode, mods: Mods, raw: &[u8]) -> Parsed {
    key_of(Key::new(code, mods), raw)
}

pub(super) fn unknown(raw: &[u8]) -> Parsed {
    Parsed::Done(Item::Token(Token::Unknown(raw.to_vec())), raw.len())
}

pub(in crate::input) fn control_key(b: u8) -> Key {
    let (code, mods) = match b {
        b'\r' => (KeyCode::Enter, Mods::NONE),
        b'\t' => (KeyCode::Tab, Mods::NONE),
        0x08 | 0x7f => (KeyCode::Backspace, Mods::NONE),
        ESC => (KeyCode::Esc, Mods::NONE),
        0 => (KeyCode::Char(' '), Mods::CTRL),
        0x01..=0x1a => (KeyCode::Char(char::from(b + 0x60)), Mods::CTRL),
        0x1c..=0x1f => (KeyCode::Char(char::from(b + 0x40)), Mods::CTRL),
        _ => (KeyCode::Char(char::from(b)), Mods::NONE),
    };
    Key::new(code, mods)
}

/// The keys a [`Token::Text`] run stands for, each with its bytes.
pub fn text_keys(text: &str) -> impl Iterator<Item = (Key, &str)> + '_ {
    text.char_indices().map(|(i, c)| {
        let raw = text.get(i..i + c.len_utf8()).unwrap_or_default();
        (Key::plain(KeyCode::Char(c)), raw)
    })
}

/// Text runs as the keys they stand for (tests compare key by key).
#[cfg(test)]
pub(in crate::input) fn split_text(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::new();
    for t in tokens {
        match t {
            Token::Text(text) => out.extend(text_keys(&text).map(|(key, raw)| Token::Key {
                key,
                raw: raw.as_bytes().to_vec(),
            })),
            t => out.push(t),
        }
    }
    out
}
