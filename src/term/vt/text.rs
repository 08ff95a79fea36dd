//! Text on the screen: runs of ASCII written at once, every other character (wide ones,
//! marks and the rest of a grapheme cluster) the general way, wrapping at the margin and
//! mending the wide characters a drawing broke.

use super::grid::{Grid, Pos};
use super::{cluster, grid_and_keep, Cell, Ink, Screen, State};

impl State {
    /// What the parser does with text in its ground state: controls (C0 and C1) are
    /// executed, everything else printed; a run of printable ASCII is written at once.
    pub(super) fn ground_text(&mut self, text: &str) {
        use vte::Perform as _;
        let bytes = text.as_bytes();
        // A run is looked for no further than a row holds: a long line in a narrow pane
        // is written a row at a time, and looking to its end for each row would go over
        // it again and again (quadratic in the line's length).
        let row = usize::from(self.screen.size().1).max(1);
        let mut i = 0;
        while i < bytes.len() {
            if (0x20..0x7f).contains(&bytes[i]) {
                let run = printable_prefix(&bytes[i..bytes.len().min(i + row)]);
                let written = self.ascii_run(&bytes[i..i + run]);
                if written < run {
                    // At the margin or a wide character: the general way.
                    self.text_slow(char::from(bytes[i + written]));
                    i += written + 1;
                } else {
                    i += run;
                }
                continue;
            }
            let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else {
                return;
            };
            match c {
                '\x00'..='\x1f' | '\u{80}'..='\u{9f}' => self.execute(c as u8),
                _ => self.print(c),
            }
            i += c.len_utf8();
        }
    }

    /// `ESC [ Ps ; ... m` with each parameter one to four digits (or none at all), as
    /// the parser would take it; returns the bytes taken, or None to leave the sequence
    /// to the parser (another form, or not complete in `bytes`).
    pub(super) fn plain_sgr(&mut self, bytes: &[u8]) -> Option<usize> {
        const MAX: usize = 16;
        let body = bytes.strip_prefix(b"\x1b[")?;
        let mut params = [[0u16; 1]; MAX];
        let (mut n, mut digits) = (0, 0);
        for (k, &b) in body.iter().enumerate() {
            match b {
                b'0'..=b'9' if digits < 4 => {
                    params[n][0] = params[n][0] * 10 + u16::from(b - b'0');
                    digits += 1;
                }
                b';' | b'm' if digits > 0 => {
                    n += 1;
                    digits = 0;
                    if b == b'm' {
                        self.sgr_groups(false, params[..n].iter().map(|p| &p[..]));
                        return Some(k + 3);
                    }
                    if n == MAX {
                        return None;
                    }
                }
                b'm' if k == 0 => {
                    self.sgr_groups(true, std::iter::empty());
                    return Some(3);
                }
                _ => return None,
            }
        }
        None
    }

    /// Writes printable ASCII at the cursor, one cell each, while clear of the right
    /// margin and of wide characters; returns how many it wrote (the rest is for
    /// [`State::text_slow`]).
    pub(super) fn ascii_run(&mut self, run: &[u8]) -> usize {
        let screen = &mut self.screen;
        let pen = screen.ink;
        let g = screen.grid_mut();
        let Pos { row, col } = g.pos;
        let (_, cols) = g.size();
        if col >= cols {
            return 0;
        }
        let start = usize::from(col);
        let r = g.row_mut(row);
        if start > 0 && r.cell(start - 1).is_wide() {
            return 0;
        }
        let room = usize::from(cols).min(r.width()).saturating_sub(start);
        let n = r.write_ascii(start, &run[..room.min(run.len())], pen);
        g.pos.col += n as u16;
        if let Some(&last) = run[..n].last() {
            screen.last_char = Some(char::from(last));
        }
        n
    }

    /// Draws `c` at the cursor, wrapping and scrolling as needed.
    #[inline]
    pub(super) fn text(&mut self, c: char) {
        // ASCII in the middle of a row: one cell write.
        if (c.is_ascii_graphic() || c == ' ') && self.ascii_run(&[c as u8]) == 1 {
            return;
        }
        self.text_slow(c);
    }

    /// [`State::text`] for all but a printable ASCII character drawn clear of the right
    /// margin and of wide characters. A character that continues the grapheme cluster in
    /// the cell before the cursor joins that cell ([`cluster`]); any other starts a cell.
    #[inline(never)]
    pub(super) fn text_slow(&mut self, c: char) {
        // ASCII always begins a cluster (as on the fast path, which never looks back).
        if let Some(base) = self.screen.cluster_base().filter(|_| !c.is_ascii()) {
            let joins = {
                let screen = &self.screen;
                match screen.spilled(base) {
                    Some(spill) => cluster::joins(spill.tail(), c),
                    None => screen.grid().cell(base.row, base.col).is_some_and(|cell| {
                        cell.last_char().is_some_and(|l| cluster::may_join(l, c))
                            && cluster::joins(cell.contents(), c)
                    }),
                }
            };
            if joins {
                self.extend_cluster(base, c);
                return;
            }
        }
        let screen = &mut self.screen;
        let pen = screen.ink;
        let Some(width) = screen.width_of(c) else {
            return;
        };
        let base;
        let was_wide;
        if width > 0 {
            // A wide character that does not fit in the last column wraps the row too
            // (as in xterm; vt100 does not mark it): its line goes on in the next row.
            let (over, wrap, vt100_wraps) = {
                let g = screen.grid();
                let (_, cols) = g.size();
                let last = g.cell(g.pos.row, cols - 1).copied().unwrap_or_default();
                let filled = last.has_contents() || last.is_wide_continuation();
                let over = g.pos.col + width > cols;
                (over, over && (filled || g.pos.col < cols), over && filled)
            };
            let left = screen.grid().pos.row;
            let scrolled = {
                grid_and_keep!(screen, self.dropped, self.scratch, g, keep);
                g.col_wrap(width, wrap, keep)
            };
            if over {
                mark_extra_wrap(screen.grid_mut(), left, scrolled, wrap && !vt100_wraps);
            }
            let g = screen.grid_mut();
            base = g.pos;
            let r = g.row_mut(base.row);
            let cell = r.cell_mut(usize::from(base.col));
            was_wide = cell.is_wide();
            cell.set(c, width > 1, pen);
            screen.last_char = Some(c);
            screen.spill = None;
            screen.grid_mut().col_inc(width);
        } else {
            // Drawn nowhere of its own and no part of the cluster before it by the rules
            // (a zero-width space, a mark on an empty cell): combined with the cell before.
            let g = screen.grid_mut();
            let mut at = Pos {
                row: g.pos.row,
                col: g.pos.col - 1,
            };
            if g.cell(at.row, at.col)
                .is_some_and(Cell::is_wide_continuation)
            {
                at.col -= 1;
            }
            base = at;
            let cell = g.row_mut(base.row).cell_mut(usize::from(base.col));
            was_wide = cell.is_wide();
            cell.append(c);
        }
        let g = screen.grid_mut();
        let is_wide = g.cell(base.row, base.col).is_some_and(Cell::is_wide);
        cleanup(g, base, was_wide, is_wide, pen);
    }

    /// Adds `c` to the cluster at `base` (the cell before the cursor), which may make it
    /// wide (moving it to the next row when it no longer fits in the last column) or narrow.
    pub(super) fn extend_cluster(&mut self, mut base: Pos, c: char) {
        let screen = &mut self.screen;
        let pen = screen.ink;
        let spilled = screen.spilled(base);
        let alt = screen.alt;
        let g = screen.grid_mut();
        let cell = g.row_mut(base.row).cell_mut(usize::from(base.col));
        let was_wide = cell.is_wide();
        let wide = {
            let text = cell.contents();
            let mut chars = text.chars();
            let first = chars.next().unwrap_or(' ');
            let last = spilled
                .as_ref()
                .map_or(text, cluster::Spill::tail)
                .chars()
                .next_back()
                .unwrap_or(first);
            let single_ri = chars.next().is_none() && cluster::is_regional_indicator(first);
            cluster::wide_after(first, last, c, was_wide, single_ri)
        };
        if !cell.append(c) {
            let text = cell.contents();
            let spill = cluster::Spill::new(spilled, alt, base.row, base.col, text, c);
            screen.spill = Some(spill);
        }
        if wide == was_wide {
            return;
        }
        let g = screen.grid_mut();
        let cell = g.row_mut(base.row).cell_mut(usize::from(base.col));
        cell.set_wide(wide);
        if !wide {
            // Narrowed (text presentation): the other half goes, and the cursor with it.
            let next = usize::from(base.col) + 1;
            let r = g.row_mut(base.row);
            if next < r.width() && r.cell(next).is_wide_continuation() {
                let ink = r.cell(next).ink();
                r.cell_mut(next).clear(ink);
            }
            if g.pos.col == base.col + 2 {
                g.pos.col -= 1;
            }
            return;
        }
        let moved = *cell;
        let scrolled = {
            grid_and_keep!(screen, self.dropped, self.scratch, g, keep);
            // (Its line goes on in the next row, as with a wide character.)
            g.col_wrap(1, true, keep)
        };

        let g = screen.grid_mut();
        let now = g.pos;
        if now.col == 0 {
            // The widened cluster moves to the start of the next row (its row may have
            // scrolled up meanwhile, or off the screen).
            *g.row_mut(now.row).cell_mut(0) = moved;
            mark_extra_wrap(g, base.row, scrolled, true);
            if let Some(row) = base.row.checked_sub(scrolled) {
                g.row_mut(row).cell_mut(usize::from(base.col)).clear(pen);
            }
            g.col_inc(2);
            base = now;
            screen.spill = None;
        } else {
            g.col_inc(1);
        }
        let g = screen.grid_mut();
        cleanup(g, base, false, true, pen);
    }
}

impl Screen {
    /// The cell before the cursor, holding the cluster a character may join: the wide
    /// one when the cursor is after its second half. None at the first column and on an
    /// empty cell.
    pub(super) fn cluster_base(&self) -> Option<Pos> {
        let g = self.grid();
        let Pos { row, col } = g.pos;
        let mut col = col.checked_sub(1)?;
        if g.cell(row, col)?.is_wide_continuation() {
            col = col.checked_sub(1)?;
        }
        g.cell(row, col)?.has_contents().then_some(Pos { row, col })
    }

    /// What was dropped from the cluster at `at` for want of room, while that cell is as
    /// it was then.
    pub(super) fn spilled(&self, at: Pos) -> Option<cluster::Spill> {
        let s = self.spill?;
        let len = self.grid().cell(at.row, at.col)?.bytes().len();
        (s.alt == self.alt && (s.row, s.col) == (at.row, at.col) && s.len == len).then_some(s)
    }
}

/// Notes, for the tests' oracle, that row `left` (now `scrolled` rows higher) was marked
/// wrapped by a rule the `vt100` crate lacks (nothing, outside the tests).
#[cfg_attr(not(test), allow(unused_variables))]
fn mark_extra_wrap(g: &mut Grid, left: u16, scrolled: u16, extra: bool) {
    #[cfg(test)]
    if let Some(row) = left.checked_sub(scrolled) {
        g.row_mut(row).extra_wrap = extra;
    }
}

/// After drawing at `base`: mends the wide characters around it that the drawing broke.
fn cleanup(g: &mut Grid, base: Pos, was_wide: bool, is_wide: bool, pen: Ink) {
    let (_, cols) = g.size();
    let col = usize::from(base.col);
    let r = g.row_mut(base.row);
    if col > 0 && r.cell(col - 1).is_wide() {
        let p = r.cell(col - 1).ink();
        r.at(col - 1).clear(p);
    }
    let n = r.width();
    if was_wide && !is_wide && col + 1 < n {
        r.cell_mut(col + 1).set(' ', false, pen);
    }
    if !was_wide && is_wide {
        if col + 1 >= n {
            return;
        }
        let next = r.cell_mut(col + 1);
        let next_was_wide = next.is_wide();
        next.clear(Ink::DEFAULT);
        next.set_wide_continuation(true);
        if next_was_wide {
            if col + 2 < n {
                r.cell_mut(col + 2).clear(pen);
            }
            if col + 2 == usize::from(cols) - 1 {
                r.wrapped = false;
            }
        }
    }
}

/// How many bytes `bytes` begins with that are printable ASCII (a space to a tilde), looked
/// at 16 at a time (the test on a whole block compiles to vector instructions).
fn printable_prefix(bytes: &[u8]) -> usize {
    let printable = |b: &u8| (0x20..0x7f).contains(b);
    let blocks = bytes
        .chunks_exact(16)
        .take_while(|block| block.iter().fold(true, |all, b| all & printable(b)))
        .count();
    let n = 16 * blocks;
    n + bytes[n..]
        .iter()
        .position(|b| !printable(b))
        .unwrap_or(bytes.len() - n)
}

#[cfg(test)]
mod tests {
    use super::printable_prefix;

    #[test]
    fn the_printable_prefix_ends_at_the_first_other_byte_in_or_after_the_blocks() {
        let line = b"0123456789abcdef0123456789ABCDEF the rest ~".to_vec();
        assert_eq!(printable_prefix(&line), line.len());
        for at in [0, 1, 15, 16, 17, 31, 32, 40, line.len() - 1] {
            for other in [0x1f, 0x7f, 0x80, 0xe2, b'\n', 0x1b] {
                let mut bytes = line.clone();
                bytes[at] = other;
                assert_eq!(printable_prefix(&bytes), at, "byte {other:#x} at {at}");
            }
        }
        assert_eq!(printable_prefix(b""), 0);
    }
}
