//! Terminal input decoding for the server.
//!
//! The client forwards the raw bytes typed in the user's terminal; the server runs
//! them through an [`InputParser`] to find the prefix key, key bindings, mouse events,
//! bracketed pastes and focus changes, and forwards the raw bytes of ordinary keys to
//! the focused pane. [`keys`] holds the key model and tmux-style notation, [`parse`]
//! the tokenizer, [`mouse`] mouse events and their re-encoding for panes.
//!
//! Invariant for the whole module: no input can make it panic or buffer without bound.

pub mod encode;
pub mod event;
pub mod keys;
pub mod mouse;
pub mod parse;

pub use keys::{Key, KeyCode, KeyParseError, Mods};
pub use mouse::{encode_for_pane, MouseButton, MouseEvent, MouseKind};
pub use parse::{InputParser, Token};

/// Whole-module properties: fuzzing with pseudo-random input and chunking.
#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny deterministic LCG (Knuth's MMIX constants); no dependency needed.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        fn below(&mut self, n: usize) -> usize {
            self.next() as usize % n
        }
    }

    /// Bytes that steer the parser into its interesting states.
    const SPICY: &[u8] = b"\x1b\x1b\x1b[[O]P_G\\\x07;;0125789~AZuI\x02\r\x7f\xc3\xa9\xe2\x82\xacxa";

    fn random_input(rng: &mut Lcg, len: usize, spicy: &[u8], any_byte: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            match rng.below(40) {
                0 => out.extend_from_slice(b"\x1b[200~"),
                1 => out.extend_from_slice(b"\x1b[201~"),
                2 => out.extend_from_slice(b"\x1b]11;rgb:0/0/0"),
                3 => out.extend_from_slice(b"\x1b[<0;5;7"),
                4 if any_byte => out.push(rng.next() as u8),
                _ => out.push(spicy[rng.below(spicy.len())]),
            }
        }
        out
    }

    /// The bytes a token stream stands for (mouse reports excluded).
    fn reconstruct(tokens: &[Token]) -> Vec<u8> {
        let mut out = Vec::new();
        for t in tokens {
            match t {
                Token::Key { raw, .. } | Token::Unknown(raw) | Token::Report(raw) => {
                    out.extend_from_slice(raw)
                }
                Token::Text(text) => out.extend_from_slice(text.as_bytes()),
                Token::Paste { text, start, end } => {
                    if *start {
                        out.extend_from_slice(b"\x1b[200~");
                    }
                    out.extend_from_slice(text);
                    if *end {
                        out.extend_from_slice(b"\x1b[201~");
                    }
                }
                Token::Focus(f) => out.extend_from_slice(if *f { b"\x1b[I" } else { b"\x1b[O" }),
                Token::Mouse(ev) => panic!("unexpected mouse event {ev:?}"),
            }
        }
        out
    }

    #[test]
    fn fuzz_never_panics_and_stays_bounded() {
        let mut rng = Lcg(0x5eed);
        let spicy: Vec<u8> = SPICY.iter().chain(b"<<Mm").copied().collect();
        for _ in 0..300 {
            let input = random_input(&mut rng, 1500, &spicy, true);
            let mut p = InputParser::new();
            let mut pos = 0;
            while pos < input.len() {
                let end = (pos + 1 + rng.below(24)).min(input.len());
                let _ = p.feed(&input[pos..end]);
                assert!(p.pending_len() <= 4096);
                if rng.below(20) == 0 {
                    let _ = p.flush();
                }
                pos = end;
            }
        }
    }

    #[test]
    fn fuzz_tokens_carry_every_byte() {
        // Without `<` and `M` no mouse report can form, so the token stream must give
        // back the input exactly, however it is chunked.
        let mut rng = Lcg(42);
        for round in 0..300 {
            let mut input = random_input(&mut rng, 1000, SPICY, false);
            input.retain(|b| *b != b'<');
            let mut p = InputParser::new();
            let mut tokens = Vec::new();
            let mut pos = 0;
            while pos < input.len() {
                let end = (pos + 1 + rng.below(16)).min(input.len());
                tokens.extend(p.feed(&input[pos..end]));
                pos = end;
            }
            // Close a paste that may still be open, then resolve whatever is pending.
            tokens.extend(p.feed(b"\x1b[201~"));
            tokens.extend(p.flush());
            input.extend_from_slice(b"\x1b[201~");
            assert_eq!(reconstruct(&tokens), input, "round {round}");
        }
    }

    #[test]
    fn chunking_only_matters_right_after_introducers() {
        let mut rng = Lcg(7);
        let mut inputs = vec![
            b"ab\x1b[A\x1b[1;5C\x1bOP\x1b[15;2~\x1b[<0;12;5M\x1b[<0;12;5m\x1b[M !!\
            \x1b[200~p\x1b[201~\x1b]11;rgb:0/0/0\x07\x1b[I\x1b[O\xc3\xa9\x1bx\x1b\x1b[B\x1b[Z\
            \x1b[?1;2c\x1bP1$r0m\x1b\\z"
                .to_vec(),
        ];
        inputs.extend((0..200).map(|_| random_input(&mut rng, 300, SPICY, false)));
        for input in inputs {
            // Text runs may end anywhere: compared key by key.
            let whole = parse::split_text(InputParser::new().feed(&input));
            // Cut everywhere allowed: not right after an ESC, nor after `ESC ]`,
            // `ESC P` or `ESC _` (those are read as alt keys at the end of a chunk).
            let mut p = InputParser::new();
            let mut got = Vec::new();
            let mut start = 0;
            for i in 1..=input.len() {
                let after_esc = input[i - 1] == 0x1b
                    || (i >= 2 && input[i - 2] == 0x1b && b"]P_".contains(&input[i - 1]));
                if i == input.len() || !after_esc {
                    got.extend(parse::split_text(p.feed(&input[start..i])));
                    start = i;
                }
            }
            assert_eq!(got, whole, "{input:?}");
        }
    }

    #[test]
    fn parser_reads_back_what_to_bytes_writes() {
        let mut keys = Vec::new();
        let all_mods = (0..8).map(Mods::from_bits);
        for name in
            "Up Down Left Right Home End PageUp PageDown Insert Delete F1 F4 F5 F12".split(' ')
        {
            let code = Key::parse(name).unwrap().code;
            keys.extend(all_mods.clone().map(|m| Key::new(code, m)));
        }
        // Legacy single-character keys can carry only ctrl (letters etc.) and alt.
        for name in
            "a z b ] Space C-a C-z C-] C-_ C-Space % é Enter Tab BTab BSpace Escape".split(' ')
        {
            let key = Key::parse(name).unwrap();
            keys.extend([key, Key::new(key.code, key.mods | Mods::ALT)]);
        }
        for key in keys {
            let raw = key.to_bytes();
            assert_eq!(
                parse::split_text(InputParser::new().feed(&raw)),
                [Token::Key {
                    key,
                    raw: raw.clone()
                }],
                "{key}"
            );
        }
    }

    #[test]
    fn sgr_reports_round_trip_through_the_parser() {
        use crate::term::vt::{MouseProtocolEncoding as Enc, MouseProtocolMode as Mode};
        let mut rng = Lcg(99);
        let kinds = [MouseKind::Press, MouseKind::Release, MouseKind::Drag];
        let buttons = [MouseButton::Left, MouseButton::Middle, MouseButton::Right];
        for _ in 0..500 {
            let mut ev = MouseEvent {
                kind: kinds[rng.below(3)],
                button: buttons[rng.below(3)],
                x: rng.next() as u16,
                y: rng.next() as u16,
                mods: Mods::from_bits(rng.below(8) as u8),
            };
            match rng.below(4) {
                0 => (ev.kind, ev.button) = (MouseKind::Motion, MouseButton::None),
                1 => (ev.kind, ev.button) = (MouseKind::Press, MouseButton::WheelUp),
                _ => {}
            }
            let bytes = encode_for_pane(&ev, ev.x, ev.y, Mode::AnyMotion, Enc::Sgr).unwrap();
            assert_eq!(InputParser::new().feed(&bytes), [Token::Mouse(ev)]);
        }
    }
}
