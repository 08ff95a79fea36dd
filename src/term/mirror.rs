//! Mirrors: a terminal elsewhere kept showing what this emulator shows (a saved machine's
//! pane opened in another server's client). A mirror is started with
//! [`Emulator::start_mirror`]'s bytes — which make a terminal of the same size show this
//! one's history, screens, modes and title, whatever it showed before — and then fed the
//! program's own bytes as they come ([`Emulator::mirrored_since`]).
//!
//! Those bytes are kept in a ring of at most [`MIRROR_MAX`], each at a position (a
//! [`MirrorPos`]: which run of the ring, and how many bytes came before it in that run).
//! A mirror that knows where it stands is sent what came since — also after its
//! connection dropped and came back — and one that fell further behind than the ring
//! reaches is started again (it gets the state, not the backlog).
//!
//! A mirror's own emulator must not answer the program's queries (this one did already):
//! [`Emulator::set_answers`].

use std::sync::atomic::{AtomicU64, Ordering};

use super::Emulator;

/// Bytes the ring keeps: what a mirror may fall behind, or miss while its connection is
/// down, and still be sent rather than started again.
pub const MIRROR_MAX: usize = 4 << 20;

/// History a mirror's start carries at most (its newest lines): what one connection can
/// take in one go with room to spare.
pub const STATE_HISTORY: usize = 8 << 20;

/// Runs of rings, numbered in this process (a ring stopped and started again is another
/// run: positions of the old one mean nothing in it).
static RUNS: AtomicU64 = AtomicU64::new(0);

/// Where a mirror stands in the program's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirrorPos {
    /// The ring's run.
    pub run: u64,
    /// Bytes of that run before this point.
    pub at: u64,
}

#[derive(Debug)]
pub(super) struct Tap {
    run: u64,
    /// The position of `bytes[0]`.
    base: u64,
    bytes: Vec<u8>,
}

impl Tap {
    fn new() -> Tap {
        // (Numbered from the process's start time too: a server after a restart does
        // not take an old server's position for one of its own.)
        Tap {
            run: process_epoch().wrapping_add(RUNS.fetch_add(1, Ordering::Relaxed)),
            base: 0,
            bytes: Vec::new(),
        }
    }

    fn end(&self) -> MirrorPos {
        MirrorPos {
            run: self.run,
            at: self.base + self.bytes.len() as u64,
        }
    }

    pub(super) fn keep(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        if self.bytes.len() > MIRROR_MAX {
            // Down to half, so the bytes are moved once per half a ring, not per write.
            let drop = self.bytes.len() - MIRROR_MAX / 2;
            self.bytes.drain(..drop);
            self.base += drop as u64;
        }
    }
}

/// A number of this process's start: the time in nanoseconds, taken once.
fn process_epoch() -> u64 {
    static EPOCH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(0, |d| d.as_nanos() as u64) << 16
    })
}

impl Emulator {
    /// The bytes that make a terminal of this size show what this one does — its history
    /// lines scrolled into that terminal's history, then the screens, modes and title
    /// (whatever it showed before is reset) — and the position they bring it to. From
    /// then on the program's bytes are kept for mirrors (if they were not already).
    pub fn start_mirror(&mut self) -> (Vec<u8>, MirrorPos) {
        let pos = self.tap.get_or_insert_with(Tap::new).end();
        let (rows, _) = self.size();
        // A full reset (pen, modes, both screens, keyboard flags), then the history gone.
        let mut out: Vec<u8> = b"\x1bc\x1b[3J".to_vec();
        // (Taken first: it moves rows a resize pushed off the screen into the history.)
        let image = self.screens_image();
        // The newest history lines, at most STATE_HISTORY bytes of them.
        let lens: Vec<usize> = self.history_rows().map(|(l, _)| l.len() + 8).collect();
        let (mut skip, mut bytes) = (lens.len(), 0);
        while skip > 0 && bytes + lens[skip - 1] <= STATE_HISTORY {
            skip -= 1;
            bytes += lens[skip];
        }
        let history = self.history_rows().skip(skip);
        if skip < lens.len() {
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
        (out, pos)
    }

    /// Where the program's bytes kept for mirrors stand now; None when none are kept.
    pub fn start_mirror_pos(&self) -> Option<MirrorPos> {
        self.tap.as_ref().map(Tap::end)
    }

    /// The program's bytes from `pos` on and the position after them (no bytes: nothing
    /// came since); None when `pos` is not in the ring (another run, or further back
    /// than it reaches): that mirror must be started again.
    pub fn mirrored_since(&self, pos: MirrorPos) -> Option<(&[u8], MirrorPos)> {
        let tap = self.tap.as_ref()?;
        let end = tap.end();
        if pos.run != tap.run || pos.at < tap.base || pos.at > end.at {
            return None;
        }
        Some((&tap.bytes[(pos.at - tap.base) as usize..], end))
    }

    /// Keeps nothing for mirrors any more.
    pub fn stop_mirror(&mut self) {
        self.tap = None;
    }

    /// Whether the program's bytes are kept for mirrors.
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
        m.process(&e.start_mirror().0);
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
    fn a_mirror_is_sent_what_came_since_its_position_while_the_ring_reaches_it() {
        let mut e = Emulator::new(5, 20, 100);
        e.process(b"before");
        assert!(!e.mirrored());
        let (start, pos) = e.start_mirror();
        assert_eq!(e.mirrored_since(pos).unwrap().0, b"");
        e.process(b" after\x1b[1");
        e.process(b"mbold");
        let (kept, end) = e.mirrored_since(pos).map(|(b, p)| (b.to_vec(), p)).unwrap();
        assert_eq!(kept, b" after\x1b[1mbold");
        assert_eq!(end.at, pos.at + kept.len() as u64);
        // From a point in the middle (a mirror that got part of it before its link
        // dropped): the rest.
        let middle = MirrorPos {
            at: pos.at + 6,
            ..pos
        };
        assert_eq!(e.mirrored_since(middle).unwrap().0, b"\x1b[1mbold");
        // Fed the start and then the rest, a mirror stands where the emulator does.
        let mut m = Emulator::new(5, 20, 100);
        m.process(&start);
        m.process(&kept);
        assert_eq!(m.screen().line(0), e.screen().line(0));
        // A second mirror started now begins where the first stands.
        assert_eq!(e.start_mirror().1, end);
        // Further back than the ring reaches, or of another run: started again.
        e.process(&vec![b'x'; MIRROR_MAX + 1]);
        assert!(e.mirrored_since(end).is_none());
        let other = MirrorPos {
            run: pos.run + 1,
            ..e.start_mirror().1
        };
        assert!(e.mirrored_since(other).is_none());
        e.stop_mirror();
        e.process(b"more");
        assert!(e.mirrored_since(pos).is_none());
        assert!(!e.mirrored());
    }

    #[test]
    fn a_mirror_does_not_answer_queries() {
        let mut e = Emulator::new(5, 20, 100);
        assert!(!e.process(b"\x1b[c").responses.is_empty());
        e.set_answers(false);
        assert!(e.process(b"\x1b[c\x1b[6n").responses.is_empty());
    }
}
