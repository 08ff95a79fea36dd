//! An emulator's whole state as bytes, to rebuild it in another process (live handoff):
//! the history lines as they are kept (no formatting or parsing on either side), and a
//! byte stream that, fed to a fresh emulator of the same size, reproduces the primary and
//! alternate screens, cursor, pen and input modes; the title; and the tail of an escape
//! sequence the program had only half written, which the new emulator takes in before
//! the rest arrives.
//!
//! The scroll region and origin mode are carried for both screens. Not carried: the
//! last character printed (for REP), and the cursor and pen saved by DECSC (on entering
//! the alternate screen, the cursor is saved where the shell left it, the pen as
//! default); full-screen programs reset the pen when they leave.

use super::{Emulator, Lines};

/// Where the byte stream stands between two complete escape sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Seq {
    #[default]
    Ground,
    /// Inside a UTF-8 character, this many continuation bytes to go.
    Utf8(u8),
    Esc,
    EscIntermediate,
    Csi,
    /// OSC: a string up to BEL or ST.
    Osc,
    /// DCS: its parameters, then (once a final byte hooks it) a string up to ST or a
    /// raw 0x9c.
    Dcs(Dcs),
    /// SOS, PM or APC: a string up to ST (BEL does not end it).
    Sos,
}

/// Where a DCS stands, as the parser tells its parts apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dcs {
    Entry,
    Param,
    Intermediate,
    /// Malformed: never hooked, ends only as any sequence can (CAN, SUB, ESC).
    Ignore,
    Passthrough,
}

/// Longest incomplete sequence kept (an OSC 52 clipboard write is the big one).
const MAX_TAIL: usize = 2 << 20;

/// Follows the escape-sequence structure of the output (the parts of the state machine
/// the emulator's parser uses that decide where a sequence ends), keeping the bytes of the one
/// in progress.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Tracker {
    state: Seq,
    tail: Vec<u8>,
    /// The sequence in progress outgrew `MAX_TAIL`; its start is lost.
    overflow: bool,
}

impl Tracker {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == Seq::Ground {
                // Plain text up to the next escape. Without one, only a character cut off
                // at the end is left unfinished, and it starts in the last 3 bytes.
                match memchr::memchr(0x1b, &bytes[i..]) {
                    Some(n) => i += n,
                    None => {
                        let from = bytes.len().saturating_sub(3).max(i);
                        for &b in &bytes[from..] {
                            self.take(b);
                        }
                        return;
                    }
                }
            }
            // The parameters of a control sequence, or a string's text: bytes that only
            // go on the tail, taken as a run.
            let rest = &bytes[i..];
            let run = match self.state {
                Seq::Csi => rest
                    .iter()
                    .take_while(|b| (0x20..0x40).contains(*b))
                    .count(),
                Seq::Osc => rest
                    .iter()
                    .take_while(|b| !matches!(b, 0x07 | 0x18 | 0x1a | 0x1b))
                    .count(),
                Seq::Dcs(Dcs::Passthrough) => rest
                    .iter()
                    .take_while(|b| !matches!(b, 0x18 | 0x1a | 0x1b | 0x9c))
                    .count(),
                Seq::Sos => rest
                    .iter()
                    .take_while(|b| !matches!(b, 0x18 | 0x1a | 0x1b))
                    .count(),
                _ => 0,
            };
            if run > 0 {
                let room = MAX_TAIL.saturating_sub(self.tail.len());
                self.tail.extend_from_slice(&rest[..run.min(room)]);
                if run > room {
                    self.overflow = true;
                }
                i += run;
                continue;
            }
            self.take(bytes[i]);
            i += 1;
        }
    }

    fn take(&mut self, b: u8) {
        let before = self.state;
        self.state = step(before, b);
        // A character broken off by a byte that is not its continuation: that byte
        // starts afresh (the parser has drawn a replacement for the broken one).
        let broken = matches!(before, Seq::Utf8(_)) && !(0x80..=0xbf).contains(&b);
        if self.state == Seq::Ground {
            self.tail.clear();
            self.overflow = false;
        } else if before == Seq::Ground || b == 0x1b || broken {
            self.tail.clear();
            self.overflow = false;
            self.tail.push(b);
        } else if executed_inside(before, b) {
            // Already carried out by the parser: replaying it would do it twice.
        } else if self.tail.len() < MAX_TAIL {
            self.tail.push(b);
        } else {
            self.overflow = true;
        }
    }

    /// For a sequence that outgrew `MAX_TAIL`: bytes that put a new emulator where this
    /// one stands, so the rest of it is taken as the rest of a string, not as text. A
    /// string other than an OSC keeps nothing anyway (only its kind matters); an OSC that
    /// long is dropped when it ends, so it begins again as one past the limit.
    fn overflowed_tail(&self) -> Vec<u8> {
        let head: &[u8] = match self.state {
            Seq::Osc => {
                let mut osc = b"\x1b]".to_vec();
                osc.resize(2 + crate::term::vt::OSC_MAX + 1, b'x');
                return osc;
            }
            Seq::Dcs(Dcs::Entry) => b"\x1bP",
            Seq::Dcs(Dcs::Param) => b"\x1bP1",
            Seq::Dcs(Dcs::Intermediate) => b"\x1bP ",
            Seq::Dcs(Dcs::Ignore) => b"\x1bP1<",
            Seq::Dcs(Dcs::Passthrough) => b"\x1bPq",
            Seq::Sos => b"\x1bX",
            // Nothing else grows without end.
            _ => b"",
        };
        head.to_vec()
    }

    /// Back between sequences, with nothing unfinished.
    pub(super) fn reset(&mut self) {
        self.state = Seq::Ground;
        self.tail.clear();
        self.overflow = false;
    }

    #[cfg(test)]
    pub(super) fn grounded(&self) -> bool {
        self.state == Seq::Ground && self.tail.is_empty() && !self.overflow
    }
}

/// C0 controls inside an escape or control sequence take effect at once and are not
/// part of it.
fn executed_inside(state: Seq, b: u8) -> bool {
    matches!(state, Seq::Esc | Seq::EscIntermediate | Seq::Csi) && b < 0x20
}

fn step(state: Seq, b: u8) -> Seq {
    // From anywhere: CAN and SUB cancel, ESC starts over (in a string it begins ST).
    match b {
        0x18 | 0x1a => return Seq::Ground,
        0x1b => return Seq::Esc,
        _ => {}
    }
    match state {
        Seq::Ground => match b {
            0xc0..=0xdf => Seq::Utf8(1),
            0xe0..=0xef => Seq::Utf8(2),
            0xf0..=0xf7 => Seq::Utf8(3),
            _ => Seq::Ground,
        },
        Seq::Utf8(n) => match b {
            0x80..=0xbf if n > 1 => Seq::Utf8(n - 1),
            0x80..=0xbf => Seq::Ground,
            // A broken character ends; this byte starts afresh.
            _ => step(Seq::Ground, b),
        },
        Seq::Esc => match b {
            b'[' => Seq::Csi,
            b']' => Seq::Osc,
            b'P' => Seq::Dcs(Dcs::Entry),
            b'X' | b'^' | b'_' => Seq::Sos,
            0x20..=0x2f => Seq::EscIntermediate,
            0x30..=0x7e => Seq::Ground,
            _ => Seq::Esc,
        },
        Seq::EscIntermediate => match b {
            0x30..=0x7e => Seq::Ground,
            _ => Seq::EscIntermediate,
        },
        Seq::Csi => match b {
            0x40..=0x7e => Seq::Ground,
            _ => Seq::Csi,
        },
        Seq::Osc => match b {
            0x07 => Seq::Ground,
            _ => Seq::Osc,
        },
        Seq::Dcs(part) => Seq::Dcs(match (part, b) {
            (Dcs::Passthrough, 0x9c) => return Seq::Ground,
            (Dcs::Passthrough | Dcs::Ignore, _) => part,
            (_, 0x40..=0x7e) => Dcs::Passthrough,
            (Dcs::Entry | Dcs::Param, 0x20..=0x2f) => Dcs::Intermediate,
            (Dcs::Entry, 0x30..=0x3f) | (Dcs::Param, 0x30..=0x3b) => Dcs::Param,
            (Dcs::Param, 0x3c..=0x3f) | (Dcs::Intermediate, 0x30..=0x3f) => Dcs::Ignore,
            _ => part,
        }),
        Seq::Sos => Seq::Sos,
    }
}

/// A serialised emulator. `bytes` rebuild the screens; `tail` is an unfinished escape
/// sequence to feed after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub rows: u16,
    pub cols: u16,
    pub title: String,
    /// The history, moved as it is (no parsing on either side).
    pub history: Lines,
    pub bytes: Vec<u8>,
    pub tail: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
#[error("malformed emulator image: {0}")]
pub struct ImageError(&'static str);

impl Image {
    /// `rows cols | title | history | bytes | tail`, each variable part length-prefixed
    /// (u32 BE); the history as a count, then per line a flag (0) and its text.
    pub fn encode(&self) -> Vec<u8> {
        encode(self, self.history.iter())
    }

    pub fn decode(mut data: &[u8]) -> Result<Image, ImageError> {
        fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8], ImageError> {
            if data.len() < n {
                return Err(ImageError("truncated"));
            }
            let (head, rest) = data.split_at(n);
            *data = rest;
            Ok(head)
        }
        fn part<'a>(data: &mut &'a [u8]) -> Result<&'a [u8], ImageError> {
            let len = take(data, 4)?;
            let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            take(data, len)
        }
        let head = take(&mut data, 4)?;
        let rows = u16::from_be_bytes([head[0], head[1]]);
        let cols = u16::from_be_bytes([head[2], head[3]]);
        let title = String::from_utf8(part(&mut data)?.to_vec())
            .map_err(|_| ImageError("title is not UTF-8"))?;
        let count = take(&mut data, 4)?;
        let count = u32::from_be_bytes([count[0], count[1], count[2], count[3]]) as usize;
        // Each line takes at least 5 bytes: a count larger than that is a lie.
        if count > data.len() / 5 {
            return Err(ImageError("history count beyond the data"));
        }
        let mut history = Lines::default();
        for _ in 0..count {
            // A flag older versions kept (the line was wrapped); nothing uses it now.
            take(&mut data, 1)?;
            let text = std::str::from_utf8(part(&mut data)?)
                .map_err(|_| ImageError("a history line is not UTF-8"))?;
            history.push(text);
        }
        let bytes = part(&mut data)?.to_vec();
        let tail = part(&mut data)?.to_vec();
        if !data.is_empty() {
            return Err(ImageError("trailing bytes"));
        }
        if rows == 0 || cols == 0 {
            return Err(ImageError("zero size"));
        }
        Ok(Image {
            rows,
            cols,
            title,
            history,
            bytes,
            tail,
        })
    }
}

/// [`Image::encode`] of `image` with `history` in place of its own (which the emulator's
/// export leaves empty, so its lines are written from where they are, not copied first).
fn encode<'a>(image: &Image, history: impl ExactSizeIterator<Item = &'a str> + Clone) -> Vec<u8> {
    let size: usize = history.clone().map(|l| l.len() + 5).sum();
    let mut out =
        Vec::with_capacity(20 + image.title.len() + size + image.bytes.len() + image.tail.len());
    out.extend_from_slice(&image.rows.to_be_bytes());
    out.extend_from_slice(&image.cols.to_be_bytes());
    let part = |out: &mut Vec<u8>, p: &[u8]| {
        out.extend_from_slice(&(p.len() as u32).to_be_bytes());
        out.extend_from_slice(p);
    };
    part(&mut out, image.title.as_bytes());
    out.extend_from_slice(&(history.len() as u32).to_be_bytes());
    for line in history {
        out.push(0);
        part(&mut out, line.as_bytes());
    }
    part(&mut out, &image.bytes);
    part(&mut out, &image.tail);
    out
}

pub(super) fn cup(out: &mut String, row: usize, col: usize) {
    out.push_str(&format!("\x1b[{};{}H", row + 1, col + 1));
}

impl Emulator {
    /// The whole state as an [`Image`]. Takes `&mut self` to move rows a resize pushed
    /// off the screen into the history first.
    pub fn image(&mut self) -> Image {
        let mut image = self.screens_image();
        for line in self.history.iter() {
            image.history.push(line);
        }
        image
    }

    /// [`Emulator::image`], encoded, without copying the history first.
    pub fn encoded_image(&mut self) -> (u16, u16, Vec<u8>) {
        let image = self.screens_image();
        let bytes = encode(&image, self.history.iter());
        (image.rows, image.cols, bytes)
    }

    /// Everything of the image but the history (left empty).
    fn screens_image(&mut self) -> Image {
        let (rows, cols) = self.size();
        let alt = self.screen().alternate_screen();
        let mut out = String::new();
        self.drain();
        self.term.with_primary(|primary| {
            primary_image(primary, &mut out);
            // (Placing the cursor may redraw a cell, assuming the default pen.)
            out.push_str("\x1b[0m");
            out.push_str(&primary.cursor_state_formatted());
        });
        let screen = self.term.screen();
        if alt {
            out.push_str("\x1b[0m\x1b[?1049h");
            out.push_str(&screen.contents_formatted());
        } else {
            out.push_str(&screen.attributes_formatted());
        }
        out.push_str(&screen.input_mode_formatted());
        Image {
            rows,
            cols,
            title: self.title().to_string(),
            history: Lines::default(),
            bytes: out.into_bytes(),
            tail: if self.tracker.overflow {
                self.tracker.overflowed_tail()
            } else {
                self.tracker.tail.clone()
            },
        }
    }

    /// An emulator showing what `image` was taken from; `scrollback` lines of history,
    /// moved out of `image` (which keeps everything else).
    pub fn from_image(image: &mut Image, scrollback: usize) -> Emulator {
        let mut e = Emulator::new(image.rows, image.cols, scrollback);
        e.history.append(std::mem::take(&mut image.history));
        // Presentation only: whatever the replay would answer is not sent anywhere.
        let _ = e.process(&image.bytes);
        let _ = e.process(&image.tail);
        e.term.set_title(image.title.clone());
        e
    }
}

/// The primary screen's rows, each at its own row; a row continuing a wrapped one flows
/// on from it, keeping the wrap.
fn primary_image(screen: &super::vt::Screen, out: &mut String) {
    let cols = screen.size().1;
    for (i, text) in screen.rows_formatted(0, cols).enumerate() {
        // Each row is formatted from the default pen.
        out.push_str("\x1b[0m");
        if i == 0 || !screen.row_wrapped((i - 1) as u16) {
            cup(out, i, 0);
        } else {
            out.push_str(super::vt::WRAP);
        }
        out.push_str(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Everything a user could see or a program could notice, as text.
    fn fingerprint(e: &mut Emulator) -> String {
        let s = e.screen();
        let mut f = format!(
            "alt={} cursor={:?} region={:?} origin={} hide={} keypad={} appcur={} paste={} mouse={:?}/{:?} title={:?} history={}\n",
            s.alternate_screen(),
            s.cursor_position(),
            s.scroll_region(),
            s.origin_mode(),
            s.hide_cursor(),
            s.application_keypad(),
            s.application_cursor(),
            s.bracketed_paste(),
            s.mouse_protocol_mode(),
            s.mouse_protocol_encoding(),
            e.title(),
            e.history_len(),
        );
        f.push_str(&s.attributes_formatted());
        // Wrap flags inside the screen (the one joining history to the screen may go).
        let rows: Vec<bool> = (1..e.size().0).map(|r| s.row_wrapped(r - 1)).collect();
        f.push_str(&format!("\nwrapped={rows:?}\n"));
        // Every history line, and every cell of the screen, as drawn.
        for line in e.lines(0, e.history_len(), true) {
            f.push_str(&line);
            f.push('\n');
        }
        let (height, width) = e.size();
        let s = e.screen();
        for r in 0..height {
            for c in 0..width {
                if let Some(cell) = s.cell(r, c) {
                    f.push_str(&format!(
                        "{:?}{:?}{:?}{}{}{}{}{}|",
                        cell.contents(),
                        cell.fgcolor(),
                        cell.bgcolor(),
                        cell.bold() as u8,
                        cell.italic() as u8,
                        cell.underline() as u8,
                        cell.inverse() as u8,
                        cell.is_wide() as u8
                    ));
                }
            }
            f.push('\n');
        }
        f
    }

    fn round_trip(e: &mut Emulator) -> Emulator {
        let image = e.image();
        let mut decoded = Image::decode(&image.encode()).unwrap();
        assert_eq!(
            e.encoded_image().2,
            image.encode(),
            "encoded in place as through an Image"
        );
        assert_eq!(decoded, image);
        Emulator::from_image(&mut decoded, 1000)
    }

    fn assert_same(a: &mut Emulator, b: &mut Emulator) {
        assert_eq!(fingerprint(a), fingerprint(b));
        // And the screens they would go back to.
        if a.screen().alternate_screen() {
            a.process(b"\x1b[?1049l");
            b.process(b"\x1b[?1049l");
            assert_eq!(fingerprint(a), fingerprint(b));
        }
    }

    #[test]
    fn history_colours_wide_characters_and_wraps_survive() {
        let mut e = Emulator::new(6, 20, 1000);
        for i in 0..40 {
            e.process(format!("\x1b[3{}mline {i}\x1b[0m 漢字 🙂\r\n", i % 8).as_bytes());
        }
        e.process(b"\x1b[44mblue background\x1b[K\x1b[0m\r\n");
        e.process(b"a line long enough to wrap around twice, yes it is");
        e.process(b"\x1b[1;31m$ \x1b]2;my title\x07");
        let mut copy = round_trip(&mut e);
        assert_same(&mut e, &mut copy);
        assert_eq!(copy.history_len(), e.history_len());
    }

    #[test]
    fn a_full_screen_program_and_the_shell_under_it_survive() {
        let mut e = Emulator::new(10, 40, 1000);
        for i in 0..25 {
            e.process(format!("$ echo {i}\r\n{i}\r\n").as_bytes());
        }
        e.process(b"$ vim notes.txt");
        // What vim does on start: alternate screen, keypad, cursor keys, mouse, paste.
        e.process(b"\x1b[?1049h\x1b[?1h\x1b=\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[H\x1b[2J");
        e.process(b"\x1b[1;1Hhello from vim\x1b[2;1H\x1b[34m~\x1b[3;1H~\x1b[0m\x1b[10;1H\"notes.txt\" 1L\x1b[1;6H");
        let mut copy = round_trip(&mut e);
        assert!(copy.screen().application_cursor());
        assert_eq!(copy.screen().cursor_position(), (0, 5));
        assert_same(&mut e, &mut copy);
    }

    #[test]
    fn scroll_regions_and_origin_mode_survive() {
        // A progress bar kept on the last row while output scrolls above it.
        let mut e = Emulator::new(6, 20, 100);
        e.process(b"\x1b[6;1H[####    ] 50%\x1b[1;5r\x1b[5;1Hline 1\r\nline 2\r\n");
        // The alternate screen with a region and origin mode.
        e.process(b"\x1b[?1049h\x1b[2;4r\x1b[?6h\x1b[2;3Hin");
        let mut copy = round_trip(&mut e);
        assert_eq!(copy.screen().scroll_region(), (1, 3));
        assert!(copy.screen().origin_mode());
        assert_eq!(copy.screen().cursor_position(), (2, 4));
        assert_same(&mut e, &mut copy);
        for x in [&mut e, &mut copy] {
            x.process(b"\x1b[1;1Hx\x1b[?1049l\r\nline 3\r\nline 4\r\n");
        }
        assert_same(&mut e, &mut copy);
        let rows: Vec<String> = copy.screen().rows(0, 20).collect();
        assert_eq!(rows[5], "[####    ] 50%", "the bar stays: {rows:?}");
    }

    #[test]
    fn an_unfinished_escape_sequence_is_completed_after_the_move() {
        let mut e = Emulator::new(5, 20, 100);
        e.process(b"before \x1b[3");
        let mut copy = round_trip(&mut e);
        e.process(b"1mred");
        copy.process(b"1mred");
        assert_same(&mut e, &mut copy);
        assert!(!copy.screen().contents().contains("1m"));
        // The same across a UTF-8 character and an OSC title.
        e.process(b"\xe6\xbc");
        let mut copy = round_trip(&mut e);
        for x in [&mut e, &mut copy] {
            x.process(b"\xa2 \x1b]2;ti");
        }
        let mut copy2 = round_trip(&mut copy);
        for x in [&mut e, &mut copy2] {
            x.process(b"tle\x07");
        }
        assert_same(&mut e, &mut copy2);
        assert_eq!(copy2.title(), "title");
    }

    #[test]
    fn a_string_longer_than_the_tail_keeps_its_start_and_says_it_overflowed() {
        let mut t = Tracker::default();
        t.feed(b"\x1b]52;c;");
        let text = vec![b'A'; 64 << 10];
        for _ in 0..(MAX_TAIL / text.len() + 2) {
            t.feed(&text);
        }
        assert_eq!(t.tail.len(), MAX_TAIL);
        assert!(t.tail.starts_with(b"\x1b]52;c;AAA"));
        assert!(t.overflow);
        t.feed(b"\x07");
        assert!(t.tail.is_empty() && !t.overflow && t.grounded());
    }

    /// `before`, a move, then `after` on both sides, which must then look the same; the
    /// copy, to look at.
    fn moved_between(before: &[u8], after: &[u8]) -> Emulator {
        let mut e = Emulator::new(3, 20, 100);
        e.process(before);
        let mut copy = round_trip(&mut e);
        for x in [&mut e, &mut copy] {
            x.process(after);
        }
        assert_same(&mut e, &mut copy);
        copy
    }

    #[test]
    fn strings_end_where_the_parser_ends_them() {
        // BEL does not end an APC: what follows, up to ST, is still its text.
        let copy = moved_between(b"\x1b_x\x07", b"hidden\x1b\\shown");
        assert_eq!(copy.screen().contents(), "shown");
        // A raw 0x9c ends a DCS once its final byte has come: what follows is text, drawn
        // once.
        let copy = moved_between(b"\x1bPqx\x9cabc", b"");
        assert_eq!(copy.screen().contents(), "abc");
        // Before it, 0x9c is ignored.
        let copy = moved_between(b"\x1bP1\x9c", b"q text\x1b\\after");
        assert_eq!(copy.screen().contents(), "after");
    }

    fn chunk() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            // No 'b': after a bare CSI it would be REP, which repeats the last character
            // printed — not carried.
            "[ac-z 漢🙂]{0,30}".prop_map(|s| s.into_bytes()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            (0u8..8, 0u8..8).prop_map(|(f, b)| format!("\x1b[3{f};4{b}m").into_bytes()),
            Just(b"\x1b[0m".to_vec()),
            Just(b"\x1b[1;7m".to_vec()),
            Just(b"\x1b_apc".to_vec()),
            Just(b"\x1bP1;2q".to_vec()),
            Just(b"\x1bP1?".to_vec()),
            Just(vec![0x9c]),
            Just(b"\x07".to_vec()),
            Just(b"\x1b\\".to_vec()),
            (1u8..12, 1u8..30).prop_map(|(r, c)| format!("\x1b[{r};{c}H").into_bytes()),
            Just(b"\x1b[K".to_vec()),
            Just(b"\x1b[2J".to_vec()),
            (1u8..6, 2u8..12).prop_map(|(t, b)| format!("\x1b[{t};{b}r").into_bytes()),
            Just(b"\x1b[r".to_vec()),
            // (The pen saved on entering is not carried: programs reset it on leaving.)
            Just(b"\x1b[0m\x1b[?1049h".to_vec()),
            Just(b"\x1b[?1049l".to_vec()),
            Just(b"\x1b[?25l".to_vec()),
            Just(b"\x1b[?25h".to_vec()),
            Just(b"\x1b[?2004h".to_vec()),
            Just(b"\x1b[?1000h".to_vec()),
            Just(b"\x1b]2;t\x07".to_vec()),
            Just(b"\x1b[".to_vec()),
            Just(vec![0xe6]),
        ]
    }

    /// Bytes that matter to the tracker: every kind of sequence start and end, C0
    /// controls, parameters, UTF-8 leads and continuations, and text.
    const TRACKED: &[u8] = &[
        0x1b, 0x1b, b'[', b'[', b']', b'P', b'_', b'(', b' ', b';', b'1', b'?', b'@', b'm', b'~',
        0x07, 0x18, 0x1a, 0x08, 0x0a, b'\\', b'a', 0x7f, 0xe6, 0xbc, 0x80, 0x9c,
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Feeding the tracker slices (which skips text and takes runs of parameters
        /// and string bytes at once) stands where feeding it byte by byte does.
        #[test]
        fn the_tracker_fed_slices_agrees_with_the_byte_machine(
            picks in proptest::collection::vec(0..TRACKED.len(), 0..300),
            cuts in proptest::collection::vec(1usize..20, 1..10),
        ) {
            let bytes: Vec<u8> = picks.iter().map(|&i| TRACKED[i]).collect();
            let (mut sliced, mut single) = (Tracker::default(), Tracker::default());
            for (now, done) in crate::term::vt::tests::slices(&bytes, &cuts) {
                sliced.feed(now);
                for &b in now {
                    single.take(b);
                }
                prop_assert_eq!(
                    (sliced.state, &sliced.tail, sliced.overflow),
                    (single.state, &single.tail, single.overflow),
                    "after {:?}", &bytes[..done]
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn any_output_then_more_output_looks_the_same_after_a_move(
            before in proptest::collection::vec(chunk(), 0..60),
            after in proptest::collection::vec(chunk(), 0..10),
        ) {
            let mut e = Emulator::new(8, 24, 1000);
            for c in &before {
                e.process(c);
            }
            let grounded = e.tracker.grounded();
            let alt = e.screen().alternate_screen();
            let mut copy = round_trip(&mut e);
            for c in &after {
                // Leaving an alternate screen that was never entered restores the cursor
                // saved by DECSC, which is not carried (see the module notes).
                if c.ends_with(b"\x1b[?1049l") && !e.screen().alternate_screen() {
                    continue;
                }
                e.process(c);
                copy.process(c);
                if c.ends_with(b"\x1b[?1049l") {
                    // The pen saved on entering is not carried (see the module notes).
                    e.process(b"\x1b[0m");
                    copy.process(b"\x1b[0m");
                }
            }
            if grounded || !alt {
                prop_assert_eq!(fingerprint(&mut e), fingerprint(&mut copy));
            } else if e.screen().alternate_screen() {
                // Only the alternate screen travelled; it must still match while shown.
                prop_assert_eq!(e.screen().contents_formatted(), copy.screen().contents_formatted());
            }
        }
    }

    #[test]
    fn a_string_longer_than_the_tail_goes_on_as_a_string_after_a_move() {
        // (The new emulator was given nothing and drew the rest of the string as text.)
        for (start, end) in [
            (b"\x1bPq".as_slice(), b"\x1b\\".as_slice()),
            (b"\x1b_G", b"\x1b\\"),
            (b"\x1b]2;", b"\x07"),
        ] {
            let mut before = start.to_vec();
            before.resize(MAX_TAIL + 4096, b'#');
            let copy = moved_between(&before, &[b"####".as_slice(), end, b"after"].concat());
            assert_eq!(copy.screen().line(0), "after", "{start:?}");
            assert_eq!(copy.title(), "", "{start:?}: an OSC that long is dropped");
        }
    }
}
