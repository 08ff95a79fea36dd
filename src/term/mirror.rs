//! Mirrors: a terminal elsewhere kept showing what this emulator shows (a saved machine's
//! pane opened in another server's client). The mirror is started with
//! [`Emulator::start_mirror`]'s bytes — which make a terminal of the same size show this
//! one's history, screens, modes and title, whatever it showed before — and then fed the
//! program's own bytes as they come ([`Emulator::take_mirrored`]). Those are kept here
//! until taken, at most [`MIRROR_MAX`]: past that they are dropped and the next take says
//! the mirror must be started again (a slow mirror gets the state, not the backlog).
//!
//! A mirror's own emulator must not answer the program's queries (this one did already):
//! [`Emulator::set_answers`].

use super::Emulator;

/// Bytes kept for a mirror between two takes.
pub const MIRROR_MAX: usize = 4 << 20;

#[derive(Debug, Default)]
pub(super) struct Tap {
    bytes: Vec<u8>,
    /// More than [`MIRROR_MAX`] came between two takes.
    lost: bool,
}

impl Tap {
    pub(super) fn keep(&mut self, bytes: &[u8]) {
        if self.lost {
            return;
        }
        if self.bytes.len() + bytes.len() > MIRROR_MAX {
            self.lost = true;
            self.bytes = Vec::new();
            return;
        }
        self.bytes.extend_from_slice(bytes);
    }
}

/// What a mirror is to be sent next.
#[derive(Debug, PartialEq, Eq)]
pub enum Mirrored {
    /// The program's bytes since the last take.
    Bytes(Vec<u8>),
    /// Too many came: the mirror must be started again.
    Lost,
}

impl Emulator {
    /// The bytes that make a terminal of this size show what this one does — its history
    /// lines scrolled into that terminal's history, then the screens, modes and title
    /// (whatever it showed before is reset) — and from now on keeps the program's bytes
    /// for [`Emulator::take_mirrored`] (anything kept before is dropped).
    pub fn start_mirror(&mut self) -> Vec<u8> {
        self.tap = Some(Tap::default());
        let (rows, _) = self.size();
        // A full reset (pen, modes, both screens, keyboard flags), then the history gone.
        let mut out: Vec<u8> = b"\x1bc\x1b[3J".to_vec();
        // (Taken first: it moves rows a resize pushed off the screen into the history.)
        let image = self.screens_image();
        let history = self.history_rows();
        if history.len() > 0 {
            // The lines printed from the top, then as many line feeds as the screen has
            // rows less one: the last of them is scrolled off the top as well, and so
            // every line, and nothing else, is history there.
            out.extend_from_slice(b"\x1b[H");
            let mut joined = false;
            for (line, wrapped) in history {
                out.extend_from_slice(b"\x1b[0m");
                out.extend_from_slice(line.as_bytes());
                joined = wrapped;
                if !wrapped {
                    out.extend_from_slice(b"\r\n");
                }
            }
            if joined {
                out.extend_from_slice(b"\r\n");
            }
            out.extend(std::iter::repeat_n(b'\n', usize::from(rows) - 1));
            out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
        }
        out.extend_from_slice(&image.bytes);
        out.extend_from_slice(b"\x1b]2;");
        out.extend(image.title.bytes().filter(|b| !b.is_ascii_control()));
        out.extend_from_slice(b"\x1b\\");
        out.extend_from_slice(&image.tail);
        out
    }

    /// The program's bytes since the mirror was started or last taken from; None when
    /// no mirror is kept or nothing came.
    pub fn take_mirrored(&mut self) -> Option<Mirrored> {
        let tap = self.tap.as_mut()?;
        if tap.lost {
            self.tap = None;
            return Some(Mirrored::Lost);
        }
        if tap.bytes.is_empty() {
            return None;
        }
        Some(Mirrored::Bytes(std::mem::take(&mut tap.bytes)))
    }

    /// Keeps nothing for a mirror any more.
    pub fn stop_mirror(&mut self) {
        self.tap = None;
    }

    /// Whether a mirror is kept.
    pub fn mirrored(&self) -> bool {
        self.tap.is_some()
    }

    /// Whether the program's queries are answered (not in a mirror: the emulator it
    /// mirrors answered them).
    pub fn set_answers(&mut self, on: bool) {
        self.answers = on;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(e: &mut Emulator) -> Vec<String> {
        e.last_lines(100, false)
    }

    #[test]
    fn a_mirror_started_from_the_bytes_shows_the_same_history_screen_and_modes() {
        let mut e = Emulator::new(5, 20, 100);
        for i in 0..12 {
            e.process(format!("line {i}\r\n").as_bytes());
        }
        e.process(b"\x1b[31mred\x1b[0m and a line long enough to wrap here\r\n$ ");
        e.process(b"\x1b[?2004h\x1b[?1h\x1b]2;remote title\x07");
        let mut m = Emulator::new(5, 20, 100);
        m.process(b"something shown before\r\n\x1b[?1049h\x1b[?1000h");
        m.process(&e.start_mirror());
        assert_eq!(text(&mut m), text(&mut e));
        assert_eq!(m.history_len(), e.history_len());
        assert_eq!(m.screen().line(4), e.screen().line(4));
        assert_eq!(m.title(), "remote title");
        assert_eq!(m.key_mode(), e.key_mode());
        assert_eq!(m.screen().cursor_position(), e.screen().cursor_position());
        assert!(!m.screen().alternate_screen());
        assert_eq!(
            m.screen().input_mode_formatted(),
            e.screen().input_mode_formatted()
        );
    }

    #[test]
    fn the_programs_bytes_after_the_start_are_kept_until_taken_and_bounded() {
        let mut e = Emulator::new(5, 20, 100);
        e.process(b"before");
        assert_eq!(e.take_mirrored(), None);
        let start = e.start_mirror();
        e.process(b" after\x1b[1");
        e.process(b"mbold");
        let Some(Mirrored::Bytes(kept)) = e.take_mirrored() else {
            panic!("nothing kept");
        };
        assert_eq!(kept, b" after\x1b[1mbold");
        assert_eq!(e.take_mirrored(), None);
        // Fed the start and then the rest, a mirror stands where the emulator does.
        let mut m = Emulator::new(5, 20, 100);
        m.process(&start);
        m.process(&kept);
        assert_eq!(m.screen().line(0), e.screen().line(0));
        // Too much between two takes: the mirror is to be started again, and nothing is
        // kept until it is.
        e.process(&vec![b'x'; MIRROR_MAX + 1]);
        assert_eq!(e.take_mirrored(), Some(Mirrored::Lost));
        assert!(!e.mirrored());
        e.process(b"more");
        assert_eq!(e.take_mirrored(), None);
    }

    #[test]
    fn a_mirror_does_not_answer_queries() {
        let mut e = Emulator::new(5, 20, 100);
        assert!(!e.process(b"\x1b[c").responses.is_empty());
        e.set_answers(false);
        assert!(e.process(b"\x1b[c\x1b[6n").responses.is_empty());
    }
}
