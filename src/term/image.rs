//! An emulator's whole state as bytes, to rebuild it in another process (live handoff):
//! the history lines as they are kept (no formatting or parsing on either side), and a
//! byte stream that, fed to a fresh emulator of the same size, reproduces the primary and
//! alternate screens, cursor, pen and input modes (the keyboard's too: kitty flags of
//! each screen, modifyOtherKeys, focus reports); the title; and the tail of an escape
//! sequence the program had only half written, which the new emulator takes in before
//! the rest arrives.
//!
//! Synchronized output (mode 2026) is carried with the frame shown meanwhile, which the
//! new emulator shows for a full timeout again. The scroll region and origin mode are
//! carried for both screens. Not carried: the
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
        encode(self, self.history.rows())
    }

    /// The image's last history row runs on into the screen's first row.
    fn continues(&self) -> bool {
        self.history.wrapped(self.history.len().wrapping_sub(1))
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
            // The row was wrapped: its text runs on into the next.
            let wrapped = take(&mut data, 1)?[0] == 1;
            let text = std::str::from_utf8(part(&mut data)?)
                .map_err(|_| ImageError("a history line is not UTF-8"))?;
            history.push_row(text, wrapped);
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
fn encode<'a>(
    image: &Image,
    history: impl ExactSizeIterator<Item = (&'a str, bool)> + Clone,
) -> Vec<u8> {
    let size: usize = history.clone().map(|(l, _)| l.len() + 5).sum();
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
    for (line, wrapped) in history {
        out.push(u8::from(wrapped));
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
        for (line, wrapped) in self.history_rows() {
            image.history.push_row(line, wrapped);
        }
        image
    }

    /// [`Emulator::image`], encoded, without copying the history first.
    pub fn encoded_image(&mut self) -> (u16, u16, Vec<u8>) {
        let image = self.screens_image();
        let bytes = encode(&image, self.history_rows());
        (image.rows, image.cols, bytes)
    }

    /// The history rows with their wrap marks; the last is marked only if the screen's
    /// first row still carries it on.
    pub(super) fn history_rows(&self) -> impl ExactSizeIterator<Item = (&str, bool)> + Clone {
        let last = self.history.len().wrapping_sub(1);
        let continues = self.term.screen().continues_history();
        self.history
            .rows()
            .enumerate()
            .map(move |(i, (line, wrapped))| (line, wrapped && (i != last || continues)))
    }

    /// Everything of the image but the history (left empty).
    pub(super) fn screens_image(&mut self) -> Image {
        let (rows, cols) = self.size();
        let alt = self.screen().alternate_screen();
        let mut out = String::new();
        self.drain();
        let keyboard = self.term.keyboard();
        let (primary_keys, alternate_keys) = (keyboard.formatted(false), keyboard.formatted(true));
        if let Some(frozen) = self.term.frozen() {
            // The frame shown during synchronized output: drawn first, kept by turning
            // the mode on (the new emulator copies it then), then cleared for the rest.
            out.push_str(&frozen.screen.contents_formatted());
            // (The frame's pen may hold a link, which no SGR ends.)
            out.push_str("\x1b[?2026h\x1b[0m\x1b]8;;\x1b\\\x1b[r\x1b[?6l\x1b[H\x1b[2J");
        }
        self.term.with_primary(|primary| {
            primary_image(primary, &mut out);
            // (Placing the cursor may redraw a cell, assuming the default pen.)
            out.push_str("\x1b[0m");
            out.push_str(&primary.cursor_state_formatted());
        });
        out.push_str(&primary_keys);
        let screen = self.term.screen();
        if alt {
            out.push_str("\x1b[0m\x1b[?1049h");
            out.push_str(&alternate_keys);
            out.push_str(&screen.contents_formatted());
        } else {
            out.push_str(&screen.attributes_formatted());
        }
        out.push_str(&screen.input_mode_formatted());
        if self.term.synchronized() && self.term.frozen().is_none() {
            // On, but its frame was already shown as it stood: the new emulator waits
            // for the rest of it again.
            out.push_str("\x1b[?2026h");
        }
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
        let continues = image.continues();
        e.history.append(std::mem::take(&mut image.history));
        // Presentation only: whatever the replay would answer is not sent anywhere.
        let _ = e.process(&image.bytes);
        let _ = e.process(&image.tail);
        e.term.set_title(image.title.clone());
        e.term.set_continues_history(continues);
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
            screen.wrap_into(i as u16, out);
        }
        out.push_str(&text);
    }
}

#[cfg(test)]
mod tests;
