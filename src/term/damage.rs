//! Which rows of a pane's screen output may have changed, so that a renderer redraws those
//! rows instead of formatting the whole screen again for every keystroke echoed.
//!
//! Small pieces of output are split into tokens (a run of text, one control character,
//! one escape sequence) and fed to the parser one at a time, with the cursor read before
//! each: text without a line wrap changes the cursor's row, an erase-in-line the same,
//! cursor movement and colours nothing. Everything else — a scroll, a clear, the
//! alternate screen, a sequence split across reads — counts as "every row".
//!
//! Invariant: errs only towards "changed". A row reported unchanged is the same as when
//! the caller last looked.

/// What one token can do to the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Moves the cursor, sets colours or modes, or says something to the program.
    Nothing,
    /// Changes the cursor's row only (erase in line, insert or delete characters).
    CursorRow,
    /// Text: the cursor's row, unless it reaches the right margin (then it may wrap and
    /// scroll).
    Text,
    /// A line feed: nothing if the cursor moved down, a scroll if it stayed.
    LineFeed,
    /// Anything: every row.
    Everything,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Token {
    pub len: usize,
    pub effect: Effect,
}

/// The next token of `bytes` (not empty), which starts where the parser is between
/// sequences. An irregular or unfinished sequence takes the rest of `bytes`.
pub(super) fn next_token(bytes: &[u8]) -> Token {
    let rest = Token {
        len: bytes.len(),
        effect: Effect::Everything,
    };
    let one = |effect| Token { len: 1, effect };
    match bytes[0] {
        0x1b => escape(bytes).unwrap_or(rest),
        b'\r' | 0x08 | b'\t' | 0x07 | 0x00 | 0x0e | 0x0f | 0x7f => one(Effect::Nothing),
        b'\n' | 0x0b | 0x0c => one(Effect::LineFeed),
        0x01..=0x1f => one(Effect::Everything),
        _ => Token {
            len: bytes
                .iter()
                .position(|&b| b < 0x20 || b == 0x7f)
                .unwrap_or(bytes.len()),
            effect: Effect::Text,
        },
    }
}

/// DEC private modes that change no cell: cursor keys, autowrap, blinking and visible
/// cursor, mouse reporting, focus events, bracketed paste, synchronized output.
const QUIET_MODES: &[u16] = &[
    1, 7, 12, 25, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 2004, 2026,
];

/// A complete escape sequence at the start of `bytes`, or None if it is unfinished or
/// irregular (a control character or another ESC inside it).
fn escape(bytes: &[u8]) -> Option<Token> {
    let token = |len, effect| Some(Token { len, effect });
    match *bytes.get(1)? {
        b'[' => {
            let end = 2 + bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b))?;
            let body = &bytes[2..end];
            if body.iter().any(|&b| !(0x20..=0x3f).contains(&b)) {
                return None;
            }
            token(end + 1, csi(body, bytes[end]))
        }
        b']' => {
            // OSC (title, clipboard, colour queries): up to BEL or ST.
            for (i, w) in bytes.windows(2).enumerate().skip(2) {
                match w {
                    [0x07, _] => return token(i + 1, Effect::Nothing),
                    [0x1b, b'\\'] => return token(i + 2, Effect::Nothing),
                    [0x1b | 0x18 | 0x1a, _] => return None,
                    _ => {}
                }
            }
            (bytes.last() == Some(&0x07)).then_some(Token {
                len: bytes.len(),
                effect: Effect::Nothing,
            })
        }
        b'P' | b'X' | b'^' | b'_' => None,
        // Save and restore the cursor, keypad modes.
        b'7' | b'8' | b'=' | b'>' => token(2, Effect::Nothing),
        // Character set designation: only text printed later looks different.
        b'(' | b')' | b'*' | b'+' => match *bytes.get(2)? {
            0x30..=0x7e => token(3, Effect::Nothing),
            _ => None,
        },
        0x30..=0x7e => token(2, Effect::Everything),
        _ => None,
    }
}

/// What a CSI sequence does, from its parameters and intermediates (`body`) and final.
fn csi(body: &[u8], fin: u8) -> Effect {
    let private = body.first().copied().filter(|b| (0x3c..=0x3f).contains(b));
    let intermediates: Vec<u8> = body
        .iter()
        .copied()
        .filter(|b| (0x20..=0x2f).contains(b))
        .collect();
    match (private, intermediates.as_slice(), fin) {
        // Colours, cursor movement, margins (which home the cursor), reports.
        (None, [], b'm' | b'A'..=b'H' | b'f' | b'd' | b'`' | b'a' | b'e' | b'r')
        | (None, [], b's' | b'u' | b't' | b'n' | b'c' | b'Z' | b'I' | b'g') => Effect::Nothing,
        // Erase in line, insert, delete and erase characters.
        (None, [], b'K' | b'@' | b'P' | b'X') => Effect::CursorRow,
        (Some(b'?'), [], b'h' | b'l') => {
            let params = &body[1..];
            let quiet = params.split(|&b| b == b';').all(|p| {
                std::str::from_utf8(p)
                    .ok()
                    .and_then(|s| s.parse::<u16>().ok())
                    .is_some_and(|m| QUIET_MODES.contains(&m))
            });
            if quiet {
                Effect::Nothing
            } else {
                Effect::Everything
            }
        }
        // Device attributes, keyboard protocol and modifier settings, queries.
        (Some(b'>' | b'=' | b'<' | b'?'), [], b'c' | b'm' | b'u' | b'q' | b'n') => Effect::Nothing,
        // Cursor style.
        (None, [b' '], b'q') => Effect::Nothing,
        _ => Effect::Everything,
    }
}

/// For each row, the output sequence number that last changed it; and the last one that
/// changed them all.
#[derive(Debug, Default)]
pub(super) struct Damage {
    rows: Vec<u64>,
    all: u64,
}

impl Damage {
    pub fn new(rows: u16) -> Damage {
        Damage {
            rows: vec![0; usize::from(rows)],
            all: 0,
        }
    }

    pub fn row(&mut self, row: u16, seq: u64) {
        match self.rows.get_mut(usize::from(row)) {
            Some(r) => *r = seq,
            None => self.all = seq,
        }
    }

    pub fn everything(&mut self, seq: u64) {
        self.all = seq;
    }

    pub fn resize(&mut self, rows: u16, seq: u64) {
        self.rows = vec![seq; usize::from(rows)];
        self.all = seq;
    }

    /// The rows changed after `seq`; None when that may be all of them.
    pub fn since(&self, seq: u64) -> Option<Vec<u16>> {
        if self.all > seq {
            return None;
        }
        Some(
            (0..self.rows.len() as u16)
                .filter(|&r| self.rows[usize::from(r)] > seq)
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(mut bytes: &[u8]) -> Vec<(String, Effect)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let t = next_token(bytes);
            out.push((
                String::from_utf8_lossy(&bytes[..t.len]).into_owned(),
                t.effect,
            ));
            bytes = &bytes[t.len..];
        }
        out
    }

    #[test]
    fn splits_output_into_text_controls_and_sequences() {
        use Effect::*;
        let got = tokens(b"ab\x08 \x08\x1b[K\x1b[31mx\x1b]0;t\x07\r\n\x1b[2J\x1b[?25l\x1b(B");
        let want = [
            ("ab", Text),
            ("\u{8}", Nothing),
            (" ", Text),
            ("\u{8}", Nothing),
            ("\u{1b}[K", CursorRow),
            ("\u{1b}[31m", Nothing),
            ("x", Text),
            ("\u{1b}]0;t\u{7}", Nothing),
            ("\r", Nothing),
            ("\n", LineFeed),
            ("\u{1b}[2J", Everything),
            ("\u{1b}[?25l", Nothing),
            ("\u{1b}(B", Nothing),
        ];
        let want: Vec<(String, Effect)> = want.iter().map(|(s, e)| (s.to_string(), *e)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn unfinished_or_irregular_sequences_take_the_rest() {
        for bytes in [
            &b"\x1b[3"[..],
            b"\x1b",
            b"\x1b]0;title",
            b"\x1b[1\n2J",
            b"\x1bP1;2q#0",
            b"\x1b[?1049h\x1b[?1", // the first is whole; it changes everything
        ] {
            let t = next_token(bytes);
            assert_eq!(t.effect, Effect::Everything, "{bytes:?}");
        }
        assert_eq!(next_token(b"\x1b[3").len, 3);
        assert_eq!(next_token(b"\x1b[?1049hx").len, 8);
    }

    #[test]
    fn only_quiet_private_modes_change_nothing() {
        assert_eq!(next_token(b"\x1b[?2004;1006h").effect, Effect::Nothing);
        assert_eq!(next_token(b"\x1b[?25;1049h").effect, Effect::Everything);
        assert_eq!(next_token(b"\x1b[?5h").effect, Effect::Everything);
    }

    #[test]
    fn damage_remembers_rows_per_sequence_number() {
        let mut d = Damage::new(4);
        d.row(1, 5);
        d.row(3, 7);
        assert_eq!(d.since(4), Some(vec![1, 3]));
        assert_eq!(d.since(5), Some(vec![3]));
        assert_eq!(d.since(7), Some(vec![]));
        d.everything(8);
        assert_eq!(d.since(7), None);
        assert_eq!(d.since(8), Some(vec![]));
        d.row(9, 9);
        assert_eq!(d.since(8), None, "a row past the screen counts as all");
    }
}
