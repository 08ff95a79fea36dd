//! How output goes into the terminal: text and plain SGR beside the parser while it is
//! known to stand in its ground state, control strings beside it too (`strings`), and
//! everything else through the parser. The parser is never given an ESC before the byte
//! after it is known, and is watched after one until it leaves that state, so it never
//! opens a string of its own; the rest of a character cut across two calls goes to it a
//! byte at a time.

use super::strings::{End, Str};
use super::Terminal;

impl Terminal {
    /// Takes in output; changes are stamped with `seq`.
    pub fn process(&mut self, bytes: &[u8], seq: u64) {
        // (Never back: a copy for synchronized output may have moved the stamp on.)
        let seq = seq.max(self.stamp());
        self.state.screen.stamp(seq);
        self.state.sync.begin_call();
        #[cfg(test)]
        if self.parser_only {
            for part in super::tests::one_by_one(bytes) {
                self.parser.get().advance(&mut self.state, part);
            }
            return;
        }
        let mut i = 0;
        self.ground_at = self.ground.then_some(0);
        if std::mem::take(&mut self.held_esc) {
            match self.escape(bytes.first().copied()) {
                Esc::Held => return,
                Esc::String => i = 1,
                Esc::Plain => {
                    self.parser.get().advance(&mut self.state, b"\x1b");
                    self.state.await_char = false;
                    self.in_escape = true;
                }
            }
        }
        while i < bytes.len() {
            if let Some(string) = &mut self.string {
                let (n, end) = string.take(&bytes[i..], &mut self.osc);
                i += n;
                if let Some(end) = end {
                    self.end_string(end);
                    self.ground = true;
                    self.ground_at = Some(i);
                }
                continue;
            }
            if !self.ground {
                let rest = &bytes[i..];
                if rest[0] == 0x1b {
                    match self.escape(rest.get(1).copied()) {
                        Esc::Held => break,
                        Esc::String => {
                            i += 2;
                            continue;
                        }
                        Esc::Plain => {
                            // The ESC and the byte after it (unless another ESC, which is
                            // looked at in turn).
                            let take = if rest[1] == 0x1b { 1 } else { 2 };
                            self.state.stop = false;
                            let n = self
                                .parser
                                .get()
                                .advance_until_terminated(&mut self.state, &rest[..take]);
                            i += n;
                            self.ground = self.state.stop;
                            self.in_escape =
                                !self.ground && (take == 1 || stays_in_escape(rest[1]));
                            if self.ground {
                                self.ground_at = Some(i);
                            }
                            continue;
                        }
                    }
                }
                if self.state.await_char || self.bytewise > 0 {
                    // The rest of a character cut off: a byte at a time, as vte, given
                    // the rest and more in one call, would take up to 3 bytes after it
                    // as part of it.
                    self.bytewise = match rest[0] {
                        b @ 0xc0.. => utf8_len(b) - 1,
                        0x80..=0xbf => self.bytewise.saturating_sub(1),
                        _ => 0,
                    };
                    self.state.stop = false;
                    i += self
                        .parser
                        .get()
                        .advance_until_terminated(&mut self.state, &rest[..1]);
                    self.ground = self.state.stop;
                    if self.ground {
                        self.ground_at = Some(i);
                    }
                    continue;
                }
                if std::mem::take(&mut self.in_escape) {
                    // The parser stands right after an ESC: a string may still begin.
                    if let Some(string) = Str::begin(rest[0]) {
                        self.parser.reset();
                        self.string = Some(string);
                        i += 1;
                        continue;
                    }
                    if stays_in_escape(rest[0]) {
                        self.parser.get().advance(&mut self.state, &rest[..1]);
                        self.in_escape = true;
                        i += 1;
                        continue;
                    }
                }
                // Up to the next ESC, which is looked at before the parser gets it.
                let end = memchr::memchr(0x1b, &rest[1..]).map_or(rest.len(), |n| n + 1);
                self.state.stop = false;
                let n = self
                    .parser
                    .get()
                    .advance_until_terminated(&mut self.state, &rest[..end]);
                self.bytewise = still_needed(&rest[..n]);
                i += n;
                self.ground = self.state.stop;
                if self.ground {
                    self.ground_at = Some(i);
                }
                continue;
            }
            // Text up to the next escape, as the parser's ground state takes it.
            self.in_escape = false;
            let rest = &bytes[i..];
            let end = memchr::memchr(0x1b, rest).unwrap_or(rest.len());
            let (text, cut) = match std::str::from_utf8(&rest[..end]) {
                Ok(text) => (text, false),
                Err(e) => {
                    let valid = &rest[..e.valid_up_to()];
                    let text = std::str::from_utf8(valid).unwrap_or_default();
                    // A character cut off by the end of this output: the parser keeps its
                    // start and is stopped once it completes it.
                    (text, e.error_len().is_none() && end == rest.len())
                }
            };
            self.state.ground_text(text);
            i += text.len();
            self.ground_at = Some(i);
            if i == bytes.len() {
                break;
            }
            // The commonest sequence of all, SGR, in its plain form.
            if let Some(n) = self.state.plain_sgr(&bytes[i..]) {
                i += n;
                self.ground_at = Some(i);
                continue;
            }
            if bytes[i] == 0x1b {
                match self.escape(bytes.get(i + 1).copied()) {
                    Esc::Held => break,
                    Esc::String => {
                        i += 2;
                        continue;
                    }
                    Esc::Plain => {}
                }
            }
            // An escape, or bytes that are not UTF-8: the parser judges them.
            self.ground = false;
            if cut {
                self.parser.get().advance(&mut self.state, &bytes[i..]);
                self.state.await_char = true;
                break;
            }
        }
    }

    /// At an ESC not yet given to the parser, followed by `next` (None: the output ends
    /// with the ESC, which is then held until more comes).
    fn escape(&mut self, next: Option<u8>) -> Esc {
        let Some(next) = next else {
            self.held_esc = true;
            self.ground = false;
            return Esc::Held;
        };
        // The ESC ends any character the parser holds the start of.
        self.bytewise = 0;
        let Some(string) = Str::begin(next) else {
            return Esc::Plain;
        };
        if !self.ground {
            // The ESC ends what the parser holds (a sequence cut short, the start of a
            // character) as it always would; then the parser is fresh, as after the string.
            self.parser.get().advance(&mut self.state, b"\x1b");
            self.parser.reset();
            self.state.await_char = false;
        }
        self.ground = false;
        self.in_escape = false;
        self.string = Some(string);
        Esc::String
    }

    /// Acts on a control string that ended: an OSC is dispatched (unless it was too long),
    /// a cancelling CAN or SUB executed.
    fn end_string(&mut self, end: End) {
        use vte::Perform as _;
        if let Some(Str::Osc { over: false }) = self.string {
            let mut params: [&[u8]; 16] = [&[]; 16];
            let mut n = 0;
            for (param, part) in params.iter_mut().zip(self.osc.split(|&b| b == b';')) {
                *param = part;
                n += 1;
            }
            self.state.osc_dispatch(&params[..n], end == End::Bell);
        }
        self.string = None;
        Str::release(&mut self.osc);
        if let End::Cancel(b) = end {
            self.state.execute(b);
        }
    }
}

/// How many bytes the UTF-8 character that `bytes` ends inside still needs (0: it ends
/// between characters).
fn still_needed(bytes: &[u8]) -> u8 {
    let tail = &bytes[bytes.len().saturating_sub(3)..];
    match tail.iter().rposition(|&b| b >= 0xc0) {
        Some(p) if matches!(std::str::from_utf8(&tail[p..]), Err(e) if e.error_len().is_none()) => {
            utf8_len(tail[p]).saturating_sub((tail.len() - p) as u8)
        }
        _ => 0,
    }
}

/// The length of the UTF-8 character that begins with `lead` (a byte from 0xc0 on).
fn utf8_len(lead: u8) -> u8 {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Whether `b` leaves `vte`'s parser where it is after an ESC (controls other than CAN,
/// SUB and ESC are executed there; DEL and bytes above 0x7f are ignored).
fn stays_in_escape(b: u8) -> bool {
    matches!(b, 0x00..=0x17 | 0x19 | 0x1c..=0x1f | 0x7f..=0xff)
}

/// What to do at an ESC.
enum Esc {
    /// It is held until the next output.
    Held,
    /// It began a control string, taken here.
    String,
    /// The parser takes it.
    Plain,
}
