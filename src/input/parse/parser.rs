//! The state machine over the input bytes, the top of `parse`: text runs, ESC
//! decisions, incomplete sequences kept pending, bracketed paste, OSC/DCS/APC strings
//! cut short. What a complete sequence means it asks the table below (`sequences`).
//!
//! Invariant: `pending` never holds more than `MAX_STRING` bytes, and a paste in progress
//! less than `paste_cap` plus one chunk; everything else is emitted as soon as it is
//! decided (the rules are in the `parse` module doc).

use super::sequences::{parse_csi, parse_ss3, parse_string, scan_string, StrEnd};
use super::token::{control_key, head, key, key_of, unknown, Item, Parsed, Token, ESC, PENDING};
use crate::input::keys::{Key, KeyCode, Mods};

/// Bytes an incomplete CSI/SS3 sequence may hold before it is given up as `Unknown`.
const MAX_SEQ: usize = 64;
/// The same for an OSC/DCS/APC string (a colour reply, a clipboard answer).
const MAX_STRING: usize = 4096;
/// A paste is handed on in pieces of about this size: a paste up to it is forwarded in one
/// write, a bigger one costs this much memory, and a piece always fits a pane's input
/// queue (`pty::MAX_INPUT_BYTES`, checked there), so none is refused for its size alone.
pub const PASTE_PIECE: usize = 1 << 20;
const PASTE_END: &[u8] = b"\x1b[201~";

/// Incremental tokenizer; see the module doc for the rules.
#[derive(Clone, Debug)]
pub struct InputParser {
    /// Bytes of an incomplete sequence (or partial paste end marker), re-read with the
    /// next chunk. Bounded by `MAX_STRING`.
    pending: Vec<u8>,
    /// Contents so far while inside a bracketed paste.
    paste: Option<Vec<u8>>,
    /// A piece of the current paste was handed on already (the next is not its start).
    paste_started: bool,
    /// Set after an over-long OSC/DCS/APC was cut: the rest of it, up to its end, is
    /// passed through as `Unknown` instead of being read as typed keys.
    in_string: bool,
    /// Paste piece size; a field so tests can use a small one.
    paste_cap: usize,
}

impl Default for InputParser {
    fn default() -> Self {
        InputParser::new()
    }
}

impl InputParser {
    pub fn new() -> Self {
        InputParser {
            pending: Vec::new(),
            paste: None,
            paste_started: false,
            in_string: false,
            paste_cap: PASTE_PIECE,
        }
    }

    /// Tokenizes the next chunk of input; incomplete trailing sequences stay pending.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Token> {
        self.pending.extend_from_slice(bytes);
        self.run(false)
    }

    /// Resolves pending bytes as if no more input were coming (call after a short idle
    /// time): `ESC [` becomes M-[, a partial sequence becomes `Unknown`, an unfinished
    /// OSC/DCS ends. A bracketed paste in progress keeps waiting for its end marker.
    pub fn flush(&mut self) -> Vec<Token> {
        self.run(true)
    }

    /// Bytes held back outside a paste (tests check the bound).
    #[cfg(test)]
    pub(in crate::input) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// True when bytes are held back (incomplete sequence, paste or string).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || self.paste.is_some() || self.in_string
    }

    fn run(&mut self, eof: bool) -> Vec<Token> {
        let buf = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some(rest) = buf.get(pos..).filter(|r| !r.is_empty()) {
            if self.paste.is_some() {
                let used = self.paste_step(rest, &mut out);
                if used == 0 {
                    // Only a possible start of the end marker is left: wait for more.
                    self.pending = rest.to_vec();
                    break;
                }
                pos += used;
            } else if self.in_string {
                match scan_string(rest, 0) {
                    StrEnd::Ended(n) => {
                        push_unknown(&mut out, head(rest, n));
                        self.in_string = false;
                        pos += n;
                    }
                    StrEnd::Open => {
                        push_unknown(&mut out, rest);
                        self.in_string = !eof;
                        pos += rest.len();
                    }
                    StrEnd::OpenEsc => {
                        // The final ESC may begin the `ESC \` terminator.
                        let n = rest.len() - 1;
                        push_unknown(&mut out, head(rest, n));
                        pos += n;
                        if eof {
                            self.in_string = false;
                        } else {
                            self.pending = vec![ESC];
                            break;
                        }
                    }
                }
            } else if let Some(text) = text_run(rest) {
                pos += text.len();
                out.push(Token::Text(text.to_owned()));
            } else {
                match parse_one(rest, eof) {
                    Parsed::Done(item, n) => {
                        pos += n.max(1);
                        match item {
                            Item::Token(t) => out.push(t),
                            Item::PasteStart => self.paste = Some(Vec::new()),
                        }
                    }
                    Parsed::Pending { string } => {
                        let cap = if string { MAX_STRING } else { MAX_SEQ };
                        if !eof && rest.len() <= cap {
                            self.pending = rest.to_vec();
                            break;
                        }
                        out.push(Token::Unknown(rest.to_vec()));
                        self.in_string = string && !eof;
                        pos += rest.len();
                    }
                }
            }
        }
        out
    }

    /// Consumes paste bytes from `rest`; returns how many were used (0 when `rest` is
    /// only a prefix of the end marker).
    fn paste_step(&mut self, rest: &[u8], out: &mut Vec<Token>) -> usize {
        let Some(paste) = self.paste.as_mut() else {
            return 0;
        };
        let (content, used, ended) = match find_paste_end(rest) {
            Some(i) => (head(rest, i), i + PASTE_END.len(), true),
            None => {
                let n = rest.len() - marker_prefix_len(rest, PASTE_END);
                (head(rest, n), n, false)
            }
        };
        paste.extend_from_slice(content);
        if ended || paste.len() >= self.paste_cap {
            out.push(Token::Paste {
                text: std::mem::take(paste),
                start: !self.paste_started,
                end: ended,
            });
            self.paste_started = !ended;
        }
        if ended {
            self.paste = None;
        }
        used
    }
}

fn push_unknown(out: &mut Vec<Token>, raw: &[u8]) {
    if !raw.is_empty() {
        out.push(Token::Unknown(raw.to_vec()));
    }
}

/// The printable characters `buf` starts with (complete UTF-8 only), if any.
fn text_run(buf: &[u8]) -> Option<&str> {
    let end = buf
        .iter()
        .position(|&b| b < 0x20 || b == 0x7f)
        .unwrap_or(buf.len());
    let run = match std::str::from_utf8(head(buf, end)) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(head(buf, e.valid_up_to())).unwrap_or_default(),
    };
    (!run.is_empty()).then_some(run)
}

/// Where the paste's end marker is in `hay`.
fn find_paste_end(hay: &[u8]) -> Option<usize> {
    // Compared only where an ESC is: a paste is mostly text, looked at once per byte.
    let mut from = 0;
    while let Some(i) = hay.get(from..)?.iter().position(|&b| b == ESC) {
        let at = from + i;
        if hay.get(at..)?.starts_with(PASTE_END) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Length of the longest proper prefix of `marker` that `buf` ends with.
fn marker_prefix_len(buf: &[u8], marker: &[u8]) -> usize {
    (1..marker.len())
        .rev()
        .find(|&k| buf.ends_with(head(marker, k)))
        .unwrap_or(0)
}

fn parse_one(buf: &[u8], eof: bool) -> Parsed {
    match buf.first() {
        None => PENDING,
        Some(&ESC) => parse_esc(buf, eof),
        Some(&b @ 0x20..=0x7e) => key(KeyCode::Char(char::from(b)), Mods::NONE, head(buf, 1)),
        Some(&b @ (0x00..=0x1f | 0x7f)) => key_of(control_key(b), head(buf, 1)),
        Some(_) => parse_utf8(buf, eof),
    }
}

fn parse_utf8(buf: &[u8], eof: bool) -> Parsed {
    let width = match buf.first() {
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        _ => return unknown(head(buf, 1)),
    };
    let avail = head(buf, width);
    if avail.iter().skip(1).any(|&c| c & 0xc0 != 0x80) {
        return unknown(head(buf, 1));
    }
    if avail.len() < width {
        return if eof { unknown(avail) } else { PENDING };
    }
    match std::str::from_utf8(avail)
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) => key(KeyCode::Char(c), Mods::NONE, avail),
        None => unknown(head(buf, 1)), // overlong or surrogate: resync on the next byte
    }
}

fn parse_esc(buf: &[u8], eof: bool) -> Parsed {
    let Some(&next) = buf.get(1) else {
        // Lone ESC at the end of the chunk: the Escape key, now.
        return key(KeyCode::Esc, Mods::NONE, head(buf, 1));
    };
    let tail = buf.get(1..).unwrap_or_default();
    match next {
        b'[' => parse_csi(buf, eof),
        b'O' => parse_ss3(buf, eof),
        b']' | b'P' | b'_' => parse_string(buf, eof),
        ESC => match buf.get(2) {
            Some(b'[' | b'O' | b']' | b'P' | b'_') => match parse_esc(tail, eof) {
                Parsed::Done(Item::Token(Token::Key { key, .. }), n) if n > 2 => {
                    key_of(Key::new(key.code, key.mods | Mods::ALT), head(buf, n + 1))
                }
                Parsed::Done(Item::Token(Token::Key { .. }), _) => {
                    key(KeyCode::Esc, Mods::ALT, head(buf, 2))
                }
                Parsed::Done(..) => key(KeyCode::Esc, Mods::NONE, head(buf, 1)),
                pending => pending,
            },
            _ => key(KeyCode::Esc, Mods::ALT, head(buf, 2)),
        },
        // ESC + any other single key (printable, UTF-8 or control) is that key + alt.
        _ => match parse_one(tail, eof) {
            Parsed::Done(Item::Token(Token::Key { key, .. }), n) => {
                key_of(Key::new(key.code, key.mods | Mods::ALT), head(buf, n + 1))
            }
            Parsed::Done(..) => key(KeyCode::Esc, Mods::NONE, head(buf, 1)),
            pending => pending,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{feed, k, u};
    use super::super::{split_text, text_keys};
    use super::*;
    fn paste(text: &[u8], start: bool, end: bool) -> Token {
        Token::Paste {
            text: text.to_vec(),
            start,
            end,
        }
    }

    /// The parser with its text runs seen as the keys they stand for, so the cases
    /// below read key by key.
    struct Keys(InputParser);
    impl Keys {
        fn new() -> Keys {
            Keys(InputParser::new())
        }
        fn feed(&mut self, bytes: &[u8]) -> Vec<Token> {
            split_text(self.0.feed(bytes))
        }
        fn flush(&mut self) -> Vec<Token> {
            split_text(self.0.flush())
        }
        fn has_pending(&self) -> bool {
            self.0.has_pending()
        }
    }

    #[test]
    fn control_bytes() {
        // The name of each byte 0x00..=0x1f, in order.
        let names = "C-Space C-a C-b C-c C-d C-e C-f C-g BSpace Tab C-j C-k C-l Enter C-n C-o \
                     C-p C-q C-r C-s C-t C-u C-v C-w C-x C-y C-z Escape C-\\ C-] C-^ C-_";
        let names: Vec<&str> = names.split_whitespace().collect();
        assert_eq!(names.len(), 32);
        for (b, name) in (0u8..).zip(names) {
            assert_eq!(feed(&[b]), [k(name, &[b])], "{b:#x}");
        }
        assert_eq!(feed(&[0x7f]), [k("BSpace", &[0x7f])]);
    }

    #[test]
    fn printable_and_utf8() {
        assert_eq!(feed(b"a Z"), [k("a", b"a"), k("Space", b" "), k("Z", b"Z")]);
        let text = "é€😀";
        let want: Vec<Token> = text
            .chars()
            .map(|c| Token::Key {
                key: Key::plain(KeyCode::Char(c)),
                raw: c.to_string().into(),
            })
            .collect();
        assert_eq!(feed(text.as_bytes()), want);
        let mut p = Keys::new();
        let split: Vec<Token> = text.bytes().flat_map(|b| p.feed(&[b])).collect();
        assert_eq!(split, want);
        // Invalid UTF-8 becomes one-byte Unknown tokens, then decoding resyncs.
        assert_eq!(feed(&[0xff, b'a']), [u(&[0xff]), k("a", b"a")]);
        assert_eq!(feed(&[0xc3, b'(']), [u(&[0xc3]), k("(", b"(")]);
        assert_eq!(
            feed(&[0xe0, 0x80, 0x80]),
            [u(&[0xe0]), u(&[0x80]), u(&[0x80])]
        );
        assert_eq!(feed(&[0xed, 0xa0, 0x80]).len(), 3); // surrogate
        let mut p = Keys::new();
        assert_eq!(p.feed(&[0xe2, 0x82]), []);
        assert!(p.has_pending());
        assert_eq!(p.flush(), [u(&[0xe2, 0x82])]);
        assert!(!p.has_pending());
    }

    #[test]
    fn escape_decisions() {
        assert_eq!(feed(b"\x1b"), [k("Escape", b"\x1b")]);
        assert_eq!(feed(b"a\x1b"), [k("a", b"a"), k("Escape", b"\x1b")]);
        assert_eq!(feed(b"\x1bx"), [k("M-x", b"\x1bx")]);
        assert_eq!(feed(b"\x1b\x02"), [k("C-M-b", b"\x1b\x02")]);
        assert_eq!(feed(b"\x1b\r"), [k("M-Enter", b"\x1b\r")]);
        assert_eq!(feed(b"\x1b\x7f"), [k("M-BSpace", b"\x1b\x7f")]);
        assert_eq!(feed("\x1bé".as_bytes()), [k("M-é", "\x1bé".as_bytes())]);
        assert_eq!(feed(b"\x1b\xff"), [k("Escape", b"\x1b"), u(b"\xff")]);
        assert_eq!(feed(b"\x1b\x1b"), [k("M-Escape", b"\x1b\x1b")]);
        assert_eq!(feed(b"\x1b\x1b[A"), [k("M-Up", b"\x1b\x1b[A")]);
        assert_eq!(
            feed(b"\x1b\x1bx"),
            [k("M-Escape", b"\x1b\x1b"), k("x", b"x")]
        );
        let mouse = feed(b"\x1b\x1b[<0;1;1M");
        assert_eq!(mouse[0], k("Escape", b"\x1b"));
        assert!(matches!(mouse[1], Token::Mouse(_)));
        // Not a CSI after all: ESC [ is M-[ and the rest is read again.
        assert_eq!(feed(b"\x1b[\r"), [k("M-[", b"\x1b["), k("Enter", b"\r")]);
        // The documented price of never waiting on a lone ESC.
        let mut p = Keys::new();
        assert_eq!(p.feed(b"\x1b"), [k("Escape", b"\x1b")]);
        assert_eq!(p.feed(b"[A"), [k("[", b"["), k("A", b"A")]);
        // Everything after the ESC may be split.
        assert_eq!(p.feed(b"\x1b["), []);
        assert_eq!(p.feed(b"1;"), []);
        assert_eq!(p.feed(b"5A"), [k("C-Up", b"\x1b[1;5A")]);
    }

    #[test]
    fn bracketed_paste() {
        let input = b"a\x1b[200~hi\x1b[A\x1b\x1b[201y\x1b[201~b";
        let want = [
            k("a", b"a"),
            paste(b"hi\x1b[A\x1b\x1b[201y", true, true),
            k("b", b"b"),
        ];
        assert_eq!(feed(input), want);
        // Byte by byte, except right after the first ESC (a lone ESC is Escape).
        let mut p = Keys::new();
        let mut split = p.feed(&input[..3]);
        split.extend(input[3..].iter().flat_map(|&b| p.feed(&[b])));
        assert_eq!(split, want, "paste markers and contents may split anywhere");
        assert_eq!(feed(b"\x1b[200~\x1b[201~"), [paste(b"", true, true)]);
        // A stalled paste survives flush; it only ends at its end marker.
        let mut p = Keys::new();
        assert_eq!(p.feed(b"\x1b[200~ab\x1b"), []);
        assert_eq!(p.flush(), []);
        assert!(p.has_pending());
        assert_eq!(p.feed(b"[201~"), [paste(b"ab", true, true)]);
        assert!(!p.has_pending());
        // Over the cap, a paste is handed over in pieces.
        let mut p = Keys(InputParser {
            paste_cap: 4,
            ..InputParser::new()
        });
        assert_eq!(p.feed(b"\x1b[200~abcdef"), [paste(b"abcdef", true, false)]);
        assert_eq!(
            p.feed(b"gh\x1b[201~i"),
            [paste(b"gh", false, true), k("i", b"i")]
        );
    }

    #[test]
    fn pending_is_bounded() {
        let mut long = b"\x1b[".to_vec();
        long.extend([b'1'; 100]);
        long.push(b'A');
        assert_eq!(feed(&long), [u(&long)], "complete but meaningless");
        let mut p = Keys::new();
        let mut out = vec![p.feed(b"\x1b[")];
        for &b in &long[2..] {
            out.push(p.feed(&[b]));
            assert!(p.0.pending.len() <= MAX_SEQ);
        }
        let out: Vec<Token> = out.into_iter().flatten().collect();
        assert_eq!(out[0], u(&long[..MAX_SEQ + 1]));
        assert_eq!(out.last(), Some(&k("A", b"A")));

        // An over-long OSC reply is passed through as Unknown up to its terminator.
        let mut osc = b"\x1b]52;c;".to_vec();
        osc.extend([b'Q'; 10_000]);
        osc.push(0x07);
        let mut p = Keys::new();
        let mut raw = Vec::new();
        for chunk in osc.chunks(100) {
            for t in p.feed(chunk) {
                let Token::Unknown(bytes) = t else {
                    panic!("{t:?}")
                };
                raw.extend(bytes);
            }
            assert!(p.0.pending.len() <= MAX_STRING);
        }
        assert_eq!(raw, osc);
        assert_eq!(p.feed(b"x"), [k("x", b"x")]);
        // A control byte ends a reply early: a broken one cannot eat Enter or the prefix.
        assert_eq!(
            feed(b"\x1b]11;ab\x02x"),
            [u(b"\x1b]11;ab"), k("C-b", b"\x02"), k("x", b"x")]
        );
    }

    #[test]
    fn text_comes_in_runs() {
        let run = |s: &str| Token::Text(s.to_string());
        let mut p = InputParser::new();
        assert_eq!(
            p.feed("ls -l é€😀\r\x1b[Acd".as_bytes()),
            [
                run("ls -l é€😀"),
                k("Enter", b"\r"),
                k("Up", b"\x1b[A"),
                run("cd")
            ]
        );
        // A character cut between two reads waits for its other bytes.
        assert_eq!(p.feed(b"ab\xc3"), [run("ab")]);
        assert_eq!(p.feed(b"\xa9c"), [run("éc")]);
        // An invalid byte ends a run and is passed on alone.
        assert_eq!(p.feed(b"a\xffb"), [run("a"), u(b"\xff"), run("b")]);
        // The prefix and other control keys are never inside a run.
        assert_eq!(p.feed(b"x\x02y"), [run("x"), k("C-b", b"\x02"), run("y")]);
        // A megabyte of text is one token.
        let big = "abc ".repeat(256 * 1024);
        assert_eq!(p.feed(big.as_bytes()), [run(&big)]);
        // And its keys are the characters, each with its bytes.
        let keys: Vec<(Key, &str)> = text_keys("aé").collect();
        assert_eq!(
            keys,
            [
                (Key::plain(KeyCode::Char('a')), "a"),
                (Key::plain(KeyCode::Char('é')), "é")
            ]
        );
    }

    #[test]
    fn a_big_paste_comes_in_pieces_that_add_up() {
        let content: Vec<u8> = (0..3 * PASTE_PIECE + 123)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let mut input = b"\x1b[200~".to_vec();
        input.extend_from_slice(&content);
        input.extend_from_slice(b"\x1b[201~");
        let mut p = InputParser::new();
        let mut pieces = Vec::new();
        for chunk in input.chunks(64 * 1024) {
            pieces.extend(p.feed(chunk));
        }
        let mut got = Vec::new();
        for (i, t) in pieces.iter().enumerate() {
            let Token::Paste { text, start, end } = t else {
                panic!("{t:?}")
            };
            assert_eq!(*start, i == 0);
            assert_eq!(*end, i == pieces.len() - 1);
            assert!(text.len() < PASTE_PIECE + 64 * 1024);
            got.extend_from_slice(text);
        }
        assert!((3..=4).contains(&pieces.len()), "{} pieces", pieces.len());
        assert!(got == content);
        assert!(!p.has_pending());
    }
}
