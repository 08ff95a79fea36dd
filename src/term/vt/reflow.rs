//! Reflow: at a new width the primary screen's lines are laid out again, as tmux and
//! alacritty do. Narrowing wraps a line onto more rows (the top of the screen goes into
//! history), widening joins its rows back; hard line ends stay, and the cursor (and the
//! saved cursor) stay on their characters. The alternate screen is not reflowed: its
//! program redraws at the new size.
//!
//! The lines are laid out by the emulator itself: each row is formatted as a history line
//! (text with its attributes), and the rows of one line are fed, one after another, to a
//! fresh emulator of the new size, which wraps them exactly as it wraps a program's
//! output. Its screen becomes the new one; the rows it scrolled off go into history.

use super::cell::{Cell, Ink};
use super::format;
use super::grid::{Pos, Row};
use super::{Lines, Terminal};

/// The history rows a reflow may take back: the start of a line whose end is on the
/// screen. (A longer line keeps its oldest rows in history, still marked wrapped.)
pub const CARRY_MAX: usize = 512;

impl Terminal {
    /// Resizes to a new width (and height), laying the primary screen's lines out again.
    /// `carried` are the history rows (oldest first) the screen's first row carries on,
    /// taken out of history by the caller; the rows the new layout pushes off the top go
    /// to [`Terminal::dropped`] as usual.
    pub fn reflow(&mut self, rows: u16, cols: u16, seq: u64, carried: &[String]) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        // (The frame shown during synchronized output is only cut: its program draws the
        // next one at the new size.)
        let seq = self.resize_frozen(rows, cols, seq);
        self.state.screen.stamp(seq);
        let screen = &mut self.state.screen;
        let g = &screen.primary;
        let marks = [g.pos, g.saved_pos];
        let (height, width) = g.size();
        // The rows that matter: down to the last one with text, or a cursor.
        let last = (0..height)
            .rev()
            .find(|&r| {
                g.row(r)
                    .is_some_and(|row| !row.used_cells().is_empty() || row.wrapped())
            })
            .unwrap_or(0)
            .max(marks[0].row)
            .max(marks[1].row.min(height - 1));
        let links = &screen.links;
        let mut t = Terminal::new(rows, cols);
        // The same links under the same ids: the rows laid out point into this table.
        t.state.screen.links = links.clone();
        let feed = |t: &mut Terminal, text: &str| {
            t.process(b"\x1b[0m", 0);
            t.process(text.as_bytes(), 0);
        };
        let continues = g.top_continues && !carried.is_empty();
        if continues {
            for part in carried {
                feed(&mut t, part);
            }
        }
        // Where each mark landed: its position then, and how many rows had scrolled off.
        let mut at = [None; 2];
        let mut scratch = Vec::new();
        for r in 0..=last {
            let Some(row) = g.row(r) else { break };
            // Below the cursor, rows are laid out only while they fit (as rows below the
            // cursor are the first to go when a screen shrinks): a row may take as many
            // as its cells over the new width.
            let needed = row.used_cells().len().div_ceil(usize::from(cols)).max(1);
            let below = usize::from(t.state.screen.primary.pos.row) + needed;
            if r > marks[0].row && below >= usize::from(rows) {
                break;
            }
            if r > 0 && !g.row(r - 1).is_some_and(Row::wrapped) {
                t.process(b"\r\n", 0);
            }
            // Where the row's text ends: a mark past it is placed as far past the text
            // laid out, without writing blanks there.
            let text_end = row
                .used_cells()
                .iter()
                .rposition(|c| {
                    c.has_contents() || c.is_wide_continuation() || c.ink() != Ink::DEFAULT
                })
                .map_or(0, |i| i + 1);
            let past = |k: usize| !row.wrapped() && usize::from(marks[k].col) >= text_end;
            let mut from = 0;
            let mut here: Vec<usize> = (0..2).filter(|&k| marks[k].row == r).collect();
            here.sort_by_key(|&k| marks[k].col);
            for &k in here.iter().filter(|&&k| !past(k)) {
                let to = usize::from(marks[k].col.min(width)).max(from);
                feed(
                    &mut t,
                    format::line(&part(row, from, to, true), links, &mut scratch),
                );
                from = to;
                let mut p = t.state.screen.primary.pos;
                if p.col >= cols && usize::from(marks[k].col) < width.into() {
                    // On a cell of the line that goes on to the next row: there, not
                    // waiting to wrap after the character before it.
                    p = Pos {
                        row: p.row + 1,
                        col: 0,
                    };
                }
                at[k] = Some((p, t.state.dropped.len()));
            }
            let rest = if from == 0 {
                format::line(row, links, &mut scratch)
            } else {
                format::line(
                    &part(row, from, usize::from(width), false),
                    links,
                    &mut scratch,
                )
            };
            feed(&mut t, rest);
            for &k in here.iter().filter(|&&k| past(k)) {
                let mut p = t.state.screen.primary.pos;
                if p.col < cols {
                    let beyond = usize::from(marks[k].col) - text_end;
                    p.col = (usize::from(p.col) + beyond).min(usize::from(cols) - 1) as u16;
                }
                at[k] = Some((p, t.state.dropped.len()));
            }
        }
        // A mark on the row after the last needs that row.
        let dropped_now = t.state.dropped.len();
        if at
            .iter()
            .flatten()
            .any(|&(p, before)| p.row >= rows && before == dropped_now)
        {
            t.process(b"\n", 0);
        }
        let scrolled = t.state.dropped.len();
        let place = |k: usize| match at[k] {
            Some((p, before)) => match u16::try_from(scrolled - before)
                .ok()
                .and_then(|n| p.row.checked_sub(n))
            {
                Some(row) => Pos { row, col: p.col },
                None => Pos::default(),
            },
            None => Pos::default(),
        };
        let (pos, saved) = (place(0), place(1));
        let dropped: &mut Lines = &mut self.state.dropped;
        for (line, wrapped) in t.state.dropped.rows() {
            dropped.push_row(line, wrapped);
        }
        let mut laid_out = std::mem::replace(&mut t.state.screen.primary, super::Grid::new(1, 1));
        if scrolled == 0 && continues && carried.len() >= CARRY_MAX {
            // The start of the line stayed in history: the first row still carries it on.
            laid_out.top_continues = true;
        }
        screen.primary.take_rows(laid_out, pos, saved);
        screen.alternate.set_size(rows, cols, |_| {});
    }
}

/// Cells `from..to` of `row` as a row of their own; `filled` makes its empty cells blanks
/// (the part before a mark ends at the mark, not at its last character).
fn part(row: &Row, from: usize, to: usize, filled: bool) -> Row {
    let to = to.min(row.width());
    let mut part: Vec<Cell> = (from.min(to)..to).map(|c| *row.cell(c)).collect();
    if filled {
        for c in &mut part {
            if !c.has_contents() && !c.is_wide_continuation() {
                let ink = c.ink();
                c.set_ascii(b' ', ink);
            }
        }
    }
    Row::of_cells(part, false)
}
