//! Answers to colour queries (OSC 10/11/12 for the foreground, background and cursor,
//! OSC 4 for palette entries): the user's terminal's colours as its client reported
//! them, else the defaults herdr draws with (the foreground and background only).
//!
//! Invariant: an OSC 4 query gets at most 256 answers, however many entries it names.

use super::State;

/// What OSC 10 and 11 are answered with when the user's terminal did not say.
const DEFAULT_FOREGROUND: &str = "rgb:c0c0/c0c0/c0c0";
const DEFAULT_BACKGROUND: &str = "rgb:0000/0000/0000";

impl State {
    /// OSC 10, 11 or 12 with `?`; the answer ends as the query did (BEL or ST).
    pub(super) fn color_query(&mut self, which: &[u8], bel: bool) {
        let c = &self.colors;
        let spec = match which {
            b"10" => c.foreground.as_deref().unwrap_or(DEFAULT_FOREGROUND),
            b"11" => c.background.as_deref().unwrap_or(DEFAULT_BACKGROUND),
            _ => match c.cursor.as_deref() {
                Some(spec) => spec,
                None => return,
            },
        };
        let reply = format!("\x1b]{};{spec}{}", String::from_utf8_lossy(which), end(bel));
        self.effects.responses.extend_from_slice(reply.as_bytes());
    }

    /// OSC 4 with `index ; ?` pairs: each known entry asked for is answered.
    pub(super) fn palette_query(&mut self, pairs: &[&[u8]], bel: bool) {
        let mut answered = 0;
        for pair in pairs.chunks(2) {
            let [index, b"?"] = pair else {
                continue;
            };
            let Some(i) = std::str::from_utf8(index)
                .ok()
                .and_then(|s| s.parse::<u8>().ok())
            else {
                continue;
            };
            if let Some(spec) = self.colors.palette_entry(i) {
                let reply = format!("\x1b]4;{i};{spec}{}", end(bel));
                self.effects.responses.extend_from_slice(reply.as_bytes());
                answered += 1;
                if answered == 256 {
                    return;
                }
            }
        }
    }
}

fn end(bel: bool) -> &'static str {
    if bel {
        "\x07"
    } else {
        "\x1b\\"
    }
}

#[cfg(test)]
mod tests {
    use crate::term::vt::{Colors, Terminal};

    fn reply(t: &mut Terminal, bytes: &[u8]) -> Vec<u8> {
        t.replies_to(bytes)
    }

    #[test]
    fn colour_queries_get_the_defaults_then_the_users_colours() {
        let mut t = Terminal::new(4, 20);
        assert_eq!(
            reply(&mut t, b"\x1b]11;?\x1b\\"),
            b"\x1b]11;rgb:0000/0000/0000\x1b\\"
        );
        assert_eq!(
            reply(&mut t, b"\x1b]10;?\x07"),
            b"\x1b]10;rgb:c0c0/c0c0/c0c0\x07"
        );
        assert_eq!(reply(&mut t, b"\x1b]12;?\x07\x1b]4;1;?\x07"), b"");
        t.set_colors(std::sync::Arc::new(Colors {
            foreground: Some("rgb:1111/2222/3333".into()),
            background: Some("rgb:ffff/ffff/ffff".into()),
            cursor: Some("rgb:00/00/00".into()),
            palette: vec![(1, "rgb:cd/00/00".into()), (255, "rgb:ee/ee/ee".into())],
        }));
        assert_eq!(
            reply(&mut t, b"\x1b]11;?\x07"),
            b"\x1b]11;rgb:ffff/ffff/ffff\x07"
        );
        assert_eq!(
            reply(&mut t, b"\x1b]10;?\x1b\\\x1b]12;?\x1b\\"),
            b"\x1b]10;rgb:1111/2222/3333\x1b\\\x1b]12;rgb:00/00/00\x1b\\"
        );
        assert_eq!(
            reply(&mut t, b"\x1b]4;1;?;2;?;255;?;x;?;1;rgb:0/0/0\x07"),
            b"\x1b]4;1;rgb:cd/00/00\x07\x1b]4;255;rgb:ee/ee/ee\x07"
        );
    }

    #[test]
    fn a_palette_query_gets_at_most_256_answers() {
        let mut t = Terminal::new(4, 20);
        t.set_colors(std::sync::Arc::new(Colors {
            palette: vec![(7, "rgb:1/1/1".into())],
            ..Colors::default()
        }));
        let mut q = b"\x1b]4".to_vec();
        for _ in 0..10_000 {
            q.extend_from_slice(b";7;?");
        }
        q.push(7);
        let r = reply(&mut t, &q);
        let one = b"\x1b]4;7;rgb:1/1/1\x07".len();
        assert!(r.len() >= one && r.len() <= 256 * one, "{}", r.len());
    }
}
