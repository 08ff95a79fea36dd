//! Randomized frames: a pseudo-random generator of frame changes, and the properties
//! every diff keeps for them.

use super::*;

/// A tiny deterministic LCG, so the fuzz test needs no extra crates.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u16) -> u16 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((self.0 >> 33) % u64::from(n)) as u16
    }

    fn color(&mut self) -> Color {
        let named = [Color::Red, Color::Gray, Color::DarkGray, Color::White];
        match self.below(5) {
            0 | 1 => Color::Reset,
            2 => Color::Indexed(self.below(256) as u8),
            3 => Color::Rgb(self.below(256) as u8, 7, self.below(256) as u8),
            _ => named[usize::from(self.below(4))],
        }
    }

    /// Mostly nothing; else underline styles and colours, overlines and links.
    fn extra(&mut self) -> Extra {
        if self.below(3) > 0 {
            return Extra::PLAIN;
        }
        let links = ["http://e.com/a", "http://e.com/b"];
        Extra {
            underline: Underline::from_sgr(self.below(6)).unwrap_or_default(),
            underline_color: self.color(),
            overline: self.below(3) == 0,
            link: (self.below(2) == 0).then(|| {
                let uri = links[usize::from(self.below(2))];
                let id = if self.below(2) == 0 {
                    b"".as_slice()
                } else {
                    b"id=7"
                };
                Arc::new(Link::parse(id, uri.as_bytes()).expect("a link"))
            }),
        }
    }

    /// Changes a few random cells (or all of them) and maybe the cursor and modes.
    fn mutate(&mut self, f: &Frame) -> Frame {
        let ((w, h), mut g) = (f.size(), f.clone());
        if self.below(4) == 0 {
            // A blank row tail, as `clear` or a status bar makes; mostly one colour.
            let (x0, y, bgs) = (self.below(w), self.below(h), [self.color(), self.color()]);
            for x in x0..w {
                g.buffer[(x, y)].reset();
                g.buffer[(x, y)].set_bg(bgs[usize::from(self.below(6) == 0)]);
            }
        }
        let puts = if self.below(4) == 0 {
            w * h
        } else {
            self.below(6)
        };
        for _ in 0..puts {
            let (x, y) = (self.below(w), self.below(h));
            let symbol = ["a", "Z", " ", " ", "-", "漢", "🙂"][usize::from(self.below(7))];
            let symbol = if x + 1 == w { "x" } else { symbol }; // wide ones cannot fit
            let mut style = Style::new().fg(self.color()).bg(self.color());
            for (flag, _, _) in ATTRS {
                if self.below(4) == 0 {
                    style = style.add_modifier(flag);
                }
            }
            if self.below(4) == 0 {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            g.buffer.set_string(x, y, symbol, style);
            let i = usize::from(y) * usize::from(w) + usize::from(x);
            g.extras[i] = self.extra();
            // (`set_string` resets the continuation cell of a wide symbol.)
            if let Some(next) = g.extras.get_mut(i + 1).filter(|_| symbol.len() > 1) {
                *next = Extra::PLAIN;
            }
        }
        match self.below(6) {
            0 => g.cursor = None,
            1 => g.cursor = Some((self.below(w), self.below(h))),
            2 => g.application_cursor ^= true,
            3 => g.application_keypad ^= true,
            _ => {}
        }
        g
    }

    /// Types one to three glyphs at the cursor, as a program echoing keys does, and puts
    /// the cursor after them; or only moves the cursor, or hides it.
    fn type_at_cursor(&mut self, f: &Frame) -> Frame {
        let ((w, h), mut g) = (f.size(), f.clone());
        let Some((mut x, y)) = f.cursor.filter(|_| self.below(8) > 0) else {
            g.cursor = Some((self.below(w), self.below(h)));
            return g;
        };
        if self.below(10) == 0 {
            g.cursor = None;
            return g;
        }
        for _ in 0..=self.below(3) {
            let symbol = ["k", "é", "漢", "🙂", " ", "e\u{301}"][usize::from(self.below(6))];
            let width = if symbol == "漢" || symbol == "🙂" {
                2
            } else {
                1
            };
            if x + width >= w {
                break;
            }
            let style = if self.below(3) == 0 {
                Style::new().fg(self.color()).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            g.buffer.set_string(x, y, symbol, style);
            let i = usize::from(y) * usize::from(w) + usize::from(x);
            g.extras[i] = if self.below(4) == 0 {
                self.extra()
            } else {
                Extra::PLAIN
            };
            x += width;
        }
        g.cursor = Some((x, y));
        g
    }
}

/// Typing at a visible cursor, mixed with every other change: the echoes sent as they
/// are (no synchronized update around them) still leave each screen exactly the frame,
/// and the frames after them are right.
#[test]
fn typing_at_the_cursor_sent_as_it_is_chains_with_every_other_change() {
    let mut rng = Lcg(0x7e57);
    let mut bare = 0;
    for _ in 0..400 {
        let (w, h) = (4 + rng.below(20), 1 + rng.below(5));
        let mut first = Frame::new(w, h);
        first.cursor = Some((0, rng.below(h)));
        let mut frames = vec![first];
        for _ in 0..8 {
            let last = frames.last().expect("a frame");
            let next = if rng.below(4) == 0 {
                rng.mutate(last)
            } else {
                rng.type_at_cursor(last)
            };
            frames.push(next);
        }
        for pair in frames.windows(2) {
            let bytes = encode_diff(&pair[0], &pair[1]);
            if bytes.is_empty() || bytes.starts_with(SYNC_BEGIN) {
                continue;
            }
            bare += 1;
            // Nothing sent as it is makes the cursor jump about: at a visible cursor it
            // prints from where the cursor is or only moves it; under a hidden one it moves
            // once, to the one stretch it prints.
            let moves = cursor_moves(&bytes);
            let lone_move = moves == 1 && bytes.starts_with(b"\x1b[") && bytes.ends_with(b"H");
            match (pair[0].cursor, pair[1].cursor) {
                (Some(_), Some(_)) => assert!(moves == 0 || lone_move, "{bytes:?}"),
                (None, None) => assert!(moves <= 1, "{bytes:?}"),
                _ => panic!("the cursor shown or hidden outside a synchronized update: {bytes:?}"),
            }
        }
        replay(&frames);
    }
    assert!(
        bare > 500,
        "only {bare} frames went without a synchronized update"
    );
}

/// The cursor movements in `bytes`: CUP, CUF and CR LF.
fn cursor_moves(bytes: &[u8]) -> usize {
    let mut moves = bytes.windows(2).filter(|w| w == b"\r\n").count();
    let mut from = 0;
    while let Some(at) = bytes[from..].windows(2).position(|w| w == b"\x1b[") {
        let params = from + at + 2;
        let Some(end) = (params..bytes.len()).find(|&k| (0x40..=0x7e).contains(&bytes[k])) else {
            break;
        };
        moves += usize::from(matches!(bytes[end], b'H' | b'C'));
        from = end + 1;
    }
    moves
}

#[test]
fn fuzz_replay_invariant() {
    let mut rng = Lcg(0x5eed);
    for _ in 0..300 {
        let (w, h) = (1 + rng.below(9), 1 + rng.below(5));
        let mut frames = vec![Frame::new(w, h)];
        for _ in 0..5 {
            let next = rng.mutate(frames.last().expect("a frame"));
            frames.push(next);
        }
        replay(&frames);
    }
}

#[test]
fn the_blank_tail_found_from_cells_is_the_one_found_from_glyphs() {
    let mut rng = Lcg(0x7a11);
    for _ in 0..2000 {
        let (w, h) = (1 + rng.below(9), 1 + rng.below(3));
        let mut frame = Frame::new(w, h);
        for _ in 0..3 {
            frame = rng.mutate(&frame);
        }
        let buf = &frame.buffer;
        for y in 0..h {
            let mut glyphs = Vec::new();
            row_glyphs(&frame, y, 0, w, &mut glyphs);
            let column = blank_tail_column(&frame, y);
            let from_cells = glyphs
                .iter()
                .position(|g| g.x >= column)
                .unwrap_or(glyphs.len());
            assert_eq!(
                from_cells,
                blank_tail_start(&glyphs),
                "row {y} of {buf:?}, column {column}"
            );
        }
    }
}

#[test]
fn a_diff_told_the_changed_columns_is_the_diff_that_compares_whole_rows() {
    let mut rng = Lcg(0xc015);
    for _ in 0..1000 {
        let (w, h) = (1 + rng.below(9), 1 + rng.below(4));
        let first = rng.mutate(&Frame::new(w, h));
        let prev = rng.mutate(&first);
        let next = rng.mutate(&prev);
        let rows = changed_rows(&prev, &next);
        // The columns each row differs in, as a frame's update reports them: a span that
        // covers them, often wider.
        let cols: Vec<(u16, u16)> = (0..h)
            .map(|y| {
                let i = |x: u16| usize::from(y) * usize::from(w) + usize::from(x);
                let differs: Vec<u16> = (0..w)
                    .filter(|&x| {
                        prev.buffer.content[i(x)] != next.buffer.content[i(x)]
                            || prev.extras[i(x)] != next.extras[i(x)]
                    })
                    .collect();
                match (differs.first(), differs.last()) {
                    (Some(&a), Some(&b)) => (
                        a.saturating_sub(rng.below(2)),
                        (b + 1 + rng.below(2)).min(w),
                    ),
                    _ => (u16::MAX, 0),
                }
            })
            .collect();
        assert_eq!(
            encode_diff_rows(&prev, &next, &rows, Some(&cols)),
            encode_diff_rows(&prev, &next, &rows, None),
            "{prev:?} -> {next:?} within {cols:?}"
        );
    }
}

#[test]
fn changes_inside_a_row_next_to_and_across_wide_glyphs_are_drawn_right() {
    // Frames that differ in a stretch of a row, wide glyphs around and across its ends.
    let mut rng = Lcg(0xd1ff);
    for _ in 0..3000 {
        let (w, h) = (2 + rng.below(10), 1 + rng.below(2));
        let mut frames = vec![Frame::new(w, h)];
        for _ in 0..6 {
            let mut next = frames.last().expect("a frame").clone();
            let y = rng.below(h);
            for _ in 0..1 + rng.below(3) {
                let x = rng.below(w);
                let symbol = ["a", "漢", " ", "b", "🙂"][usize::from(rng.below(5))];
                let style = Style::new().fg(rng.color()).bg(rng.color());
                next.buffer.set_string(x, y, symbol, style);
            }
            frames.push(next);
        }
        replay(&frames);
    }
}

#[test]
fn a_terminal_that_missed_frames_is_brought_to_the_next_by_its_unknown_rows_alone() {
    // The terminal drew frame k, then its link dropped: frames k+1..n went nowhere, and
    // a note was drawn over its last row. The server holds n and knows which rows
    // changed after k; the rows it says are unknown, with the modes and cursor, are all
    // the terminal needs to show the next frame.
    let mut rng = Lcg(0x7e5e);
    for _ in 0..400 {
        let (w, h) = (1 + rng.below(9), 1 + rng.below(6));
        let mut frames = vec![Frame::new(w, h)];
        for _ in 0..6 {
            let next = rng.mutate(frames.last().expect("a frame"));
            frames.push(next);
        }
        let k = usize::from(rng.below(4));
        let mut p = parser(w, h);
        let mut ours = vt::Terminal::new(h, w);
        let drawn = [encode_full(&frames[0])]
            .into_iter()
            .chain(frames[..=k].windows(2).map(|f| encode_diff(&f[0], &f[1])))
            .collect::<Vec<_>>()
            .concat();
        // (As the client draws it, with autowrap off so that a note wider than the
        // terminal does not scroll it — which vt100 does not know: the note fits here.)
        let note = format!(
            "\x1b7\x1b[?7l\x1b[999;1H\x1b[0;7m{}\x1b[0m\x1b[K\x1b[?7h\x1b8",
            "n".repeat(usize::from(w) - 1)
        );
        for bytes in [&drawn[..], note.as_bytes()] {
            p.process(bytes);
            ours.process(bytes, 1);
        }
        let n = frames.len() - 2;
        let mut unknown = vec![false; usize::from(h)];
        for pair in frames[k..=n].windows(2) {
            for (u, c) in unknown.iter_mut().zip(changed_rows(&pair[0], &pair[1])) {
                *u |= c;
            }
        }
        unknown[usize::from(h) - 1] = true;
        let next = &frames[n + 1];
        let bytes = encode_resume(&frames[n], &unknown, next);
        p.process(&bytes);
        ours.process(&bytes, 2);
        assert_shows(p.screen(), next, "resumed");
        assert_shows_extras(ours.screen(), next, "resumed");
    }
}
