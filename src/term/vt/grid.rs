//! A screen's rows and cursor: the operations escape sequences are made of. The cursor's
//! column may equal the width: a character was printed in the last column and the next
//! one wraps.

use std::collections::VecDeque;

use super::cell::{Cell, Ink};
pub use super::row::Row;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub row: u16,
    pub col: u16,
}

#[derive(Debug, Clone)]
pub struct Grid {
    rows: VecDeque<Row>,
    height: u16,
    width: u16,
    pub(super) pos: Pos,
    pub(super) saved_pos: Pos,
    saved_origin: bool,
    origin: bool,
    top: u16,
    bottom: u16,
    /// Stamp for changes made now (the emulator's content sequence).
    pub(super) seq: u64,
    /// The `seq` when rows last moved or changed all at once.
    pub(super) all_changed: u64,
    /// The first row carries on the text of the last row that scrolled off the top (that
    /// row was wrapped), until the first row is erased or replaced.
    pub(super) top_continues: bool,
}

impl Grid {
    pub fn new(rows: u16, cols: u16) -> Grid {
        let mut grid = Grid::unmade(rows, cols);
        grid.make();
        grid
    }

    /// A grid of that size whose rows are made when it is first shown ([`Grid::make`]):
    /// the alternate screen, which most panes never show, costs no row until then. Until
    /// made it has no rows, and a resize only sets its size.
    pub fn unmade(rows: u16, cols: u16) -> Grid {
        Grid {
            rows: VecDeque::new(),
            height: rows,
            width: cols,
            pos: Pos::default(),
            saved_pos: Pos::default(),
            saved_origin: false,
            origin: false,
            top: 0,
            bottom: rows - 1,
            seq: 0,
            all_changed: 0,
            top_continues: false,
        }
    }

    /// Makes the blank rows of an unmade grid; nothing for one made already.
    pub fn make(&mut self) {
        if self.rows.is_empty() {
            let width = self.width;
            self.rows = (0..self.height).map(|_| Row::new(width)).collect();
        }
    }

    pub fn size(&self) -> (u16, u16) {
        (self.height, self.width)
    }

    /// Makes this grid a copy of `source`, reusing the room of its rows. `since`: this
    /// grid is already a copy of `source` as it stood at that sequence number, so only
    /// the rows changed after it are copied (none of them when a frame drew the same rows
    /// again; see [`Grid::keep_unchanged_rows`]).
    pub(super) fn copy_from(&mut self, source: &Grid, since: Option<u64>) {
        let since = since.filter(|&at| {
            source.all_changed <= at
                && self.rows.len() == source.rows.len()
                && self.size() == source.size()
        });
        let mut rows = std::mem::take(&mut self.rows);
        rows.truncate(source.rows.len());
        for (row, from) in rows.iter_mut().zip(&source.rows) {
            if since.is_none_or(|at| from.changed > at) {
                row.clone_from(from);
            }
        }
        let have = rows.len();
        rows.extend(source.rows.range(have..).cloned());
        *self = Grid { rows, ..*source };
    }

    pub fn row(&self, row: u16) -> Option<&Row> {
        self.rows.get(usize::from(row))
    }

    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter()
    }

    pub fn cell(&self, row: u16, col: u16) -> Option<&Cell> {
        let r = self.rows.get(usize::from(row))?;
        (usize::from(col) < r.width()).then(|| r.cell(usize::from(col)))
    }

    /// The row `row`, marked as changed.
    pub(super) fn row_mut(&mut self, row: u16) -> &mut Row {
        let seq = self.seq;
        let r = &mut self.rows[usize::from(row)];
        r.changed = seq;
        r
    }

    /// At the end of a synchronized frame: each row that holds what the same row of
    /// `before` (this grid as the frame before it showed, copied at sequence `at`) held
    /// gets that row's change stamp back, and every other row is stamped changed now, so
    /// only the rows that differ count as changed since `at`, however the frame was drawn
    /// (a clear and a full redraw, a scroll). False, changing nothing, when the sizes
    /// differ.
    pub(super) fn keep_unchanged_rows(&mut self, before: &Grid, at: u64) -> bool {
        if self.size() != before.size() || self.rows.len() != before.rows.len() {
            return false;
        }
        let now = self.seq;
        debug_assert!(now > at, "changes after the copy are stamped after it");
        // (Rows not changed since the copy hold what it holds, unless rows moved.)
        let moved = self.all_changed > at;
        for (row, old) in self.rows.iter_mut().zip(&before.rows) {
            if !moved && row.changed <= at {
                continue;
            }
            let same =
                row.width() == old.width() && row.wrapped == old.wrapped && row.same_cells(old);
            row.changed = if same {
                old.changed
            } else {
                row.changed.max(now)
            };
        }
        self.all_changed = before.all_changed;
        true
    }

    pub(super) fn cursor_row_mut(&mut self) -> &mut Row {
        self.row_mut(self.pos.row)
    }

    fn moved_all(&mut self) {
        self.all_changed = self.seq;
    }

    /// Resizes; rows pushed off the top of a shorter screen go to `dropped` (and are
    /// passed there formatted by `keep`).
    pub fn set_size(&mut self, rows: u16, cols: u16, mut keep: impl FnMut(&Row)) {
        if (rows, cols) == (self.height, self.width) {
            return;
        }
        if self.rows.is_empty() {
            (self.height, self.width, self.bottom) = (rows, cols, rows - 1);
            return;
        }
        self.moved_all();
        self.top = 0;
        self.bottom = self.height - 1;
        if rows < self.height {
            // Rows below the cursor go first; then rows leave at the top.
            let below = self.height - self.pos.row - 1;
            let pushed = (self.height - rows).saturating_sub(below);
            self.scroll_up(pushed, Some(&mut keep));
            self.rows.truncate(usize::from(rows));
            self.pos.row = self.pos.row.saturating_sub(pushed);
            self.saved_pos.row = self.saved_pos.row.saturating_sub(pushed).min(rows - 1);
        } else {
            let width = self.width;
            self.rows.resize_with(usize::from(rows), || Row::new(width));
        }
        if let Some(last) = self.rows.back_mut() {
            last.wrapped = false;
        }
        for row in &mut self.rows {
            row.resize(cols);
        }
        // At the same width a cursor waiting to wrap goes on waiting (the next character
        // continues its line); else it stays in the screen.
        let last = if cols == self.width { cols } else { cols - 1 };
        self.pos.col = self.pos.col.min(last);
        self.saved_pos.col = self.saved_pos.col.min(cols - 1);
        self.height = rows;
        self.width = cols;
        self.top = 0;
        self.bottom = rows - 1;
    }

    /// Takes the rows of `laid_out` (this grid's text laid out again at its size), with
    /// the cursor and the saved cursor at `pos` and `saved`; the scroll region is reset,
    /// as on every resize.
    pub(super) fn take_rows(&mut self, laid_out: Grid, pos: Pos, saved: Pos) {
        let (rows, cols) = laid_out.size();
        self.rows = laid_out.rows;
        self.height = rows;
        self.width = cols;
        self.top_continues = laid_out.top_continues;
        let clamp = |p: Pos| Pos {
            row: p.row.min(rows - 1),
            col: p.col.min(cols),
        };
        self.pos = clamp(pos);
        self.saved_pos = clamp(saved);
        self.saved_pos.col = self.saved_pos.col.min(cols - 1);
        (self.top, self.bottom) = (0, rows - 1);
        self.moved_all();
        for row in &mut self.rows {
            row.changed = self.seq;
        }
    }

    pub fn clear(&mut self) {
        self.moved_all();
        self.top_continues = false;
        for row in &mut self.rows {
            row.reset();
        }
        self.pos = Pos::default();
        self.saved_pos = Pos::default();
        (self.top, self.bottom) = (0, self.height - 1);
        self.origin = false;
        self.saved_origin = false;
    }

    pub fn set_pos(&mut self, mut pos: Pos) {
        if self.origin {
            pos.row = pos.row.saturating_add(self.top);
        }
        self.pos = pos;
        self.clamp_top(self.origin);
        self.clamp_bottom(self.origin);
        self.col_clamp();
    }

    /// The scroll region's top and bottom rows.
    pub fn region(&self) -> (u16, u16) {
        (self.top, self.bottom)
    }

    pub fn origin(&self) -> bool {
        self.origin
    }

    pub fn save_cursor(&mut self) {
        self.saved_pos = self.pos;
        self.saved_origin = self.origin;
    }

    pub fn restore_cursor(&mut self) {
        self.pos = self.saved_pos;
        self.origin = self.saved_origin;
    }

    pub fn set_origin_mode(&mut self, on: bool) {
        self.origin = on;
        self.set_pos(Pos::default());
    }

    pub fn set_scroll_region(&mut self, top: u16, bottom: u16) {
        let bottom = bottom.min(self.height - 1);
        if top < bottom {
            (self.top, self.bottom) = (top, bottom);
        } else {
            (self.top, self.bottom) = (0, self.height - 1);
        }
        self.pos = Pos {
            row: self.top,
            col: 0,
        };
    }

    fn in_region(&self) -> bool {
        (self.top..=self.bottom).contains(&self.pos.row)
    }

    fn clamp_top(&mut self, to_region: bool) -> u16 {
        if to_region && self.pos.row < self.top {
            let n = self.top - self.pos.row;
            self.pos.row = self.top;
            n
        } else {
            0
        }
    }

    fn clamp_bottom(&mut self, to_region: bool) -> u16 {
        let bottom = if to_region {
            self.bottom
        } else {
            self.height - 1
        };
        if self.pos.row > bottom {
            let n = self.pos.row - bottom;
            self.pos.row = bottom;
            n
        } else {
            0
        }
    }

    fn col_clamp(&mut self) {
        self.pos.col = self.pos.col.min(self.width - 1);
    }

    pub fn row_inc_clamp(&mut self, n: u16) {
        let inside = self.in_region();
        self.pos.row = self.pos.row.saturating_add(n);
        self.clamp_bottom(inside);
    }

    /// Moves down `n` rows, scrolling the region up when the cursor leaves it at the
    /// bottom; returns how many rows scrolled.
    pub fn row_inc_scroll(&mut self, n: u16, keep: Option<&mut dyn FnMut(&Row)>) -> u16 {
        let inside = self.in_region();
        self.pos.row = self.pos.row.saturating_add(n);
        let over = self.clamp_bottom(inside);
        if inside && over > 0 {
            self.scroll_up(over, keep);
            over
        } else {
            0
        }
    }

    pub fn row_dec_clamp(&mut self, n: u16) {
        let inside = self.in_region();
        self.pos.row = self.pos.row.saturating_sub(n);
        self.clamp_top(inside);
    }

    pub fn row_dec_scroll(&mut self, n: u16) {
        let inside = self.in_region();
        let extra = n.saturating_sub(self.pos.row);
        self.pos.row = self.pos.row.saturating_sub(n);
        let over = self.clamp_top(inside);
        self.scroll_down(over + extra);
    }

    pub fn row_set(&mut self, row: u16) {
        self.pos.row = row.min(self.height - 1);
    }

    /// Moves right; at most to the pending-wrap column just past the last.
    pub fn col_inc(&mut self, n: u16) {
        self.pos.col = self.pos.col.saturating_add(n).min(self.width);
    }

    pub fn col_inc_clamp(&mut self, n: u16) {
        self.col_inc(n);
        self.col_clamp();
    }

    pub fn col_dec(&mut self, n: u16) {
        self.pos.col = self.pos.col.saturating_sub(n);
    }

    pub fn col_tab(&mut self) {
        self.pos.col -= self.pos.col % 8;
        self.pos.col = self.pos.col.saturating_add(8);
        self.col_clamp();
    }

    pub fn col_set(&mut self, col: u16) {
        self.pos.col = col;
        self.col_clamp();
    }

    /// Before a character `width` columns wide: wraps to the next row if it does not
    /// fit, marking the row left as wrapped when `wrap`. Returns how many rows scrolled.
    pub fn col_wrap(&mut self, width: u16, wrap: bool, keep: Option<&mut dyn FnMut(&Row)>) -> u16 {
        if self.pos.col <= self.width - width {
            return 0;
        }
        let mut prev = self.pos;
        if wrap {
            // Marked before it may scroll off the top (on a one-row screen it does).
            self.row_mut(prev.row).wrapped = true;
        }
        self.pos.col = 0;
        let scrolled = self.row_inc_scroll(1, keep);
        if prev.row == 0 && scrolled > 0 {
            return scrolled;
        }
        prev.row -= scrolled;
        let now = self.pos.row;
        self.row_mut(prev.row).wrapped = wrap && prev.row + 1 == now;
        scrolled
    }

    /// Scrolls the region up `n` rows. Rows leaving the top of the screen (a region that
    /// starts at the top) are shown to `keep` first.
    pub fn scroll_up(&mut self, n: u16, mut keep: Option<&mut dyn FnMut(&Row)>) {
        let (top, bottom) = (usize::from(self.top), usize::from(self.bottom));
        let n = usize::from(n).min(bottom - top + 1);
        if n == 0 {
            return;
        }
        self.moved_all();
        let keep_rows = top == 0;
        if top == 0 && bottom + 1 == self.rows.len() {
            // The whole screen: rows leave at the front and come back empty at the back.
            for _ in 0..n {
                let Some(mut row) = self.rows.pop_front() else {
                    break;
                };
                if let Some(k) = keep.as_mut() {
                    k(&row);
                }
                self.top_continues = row.wrapped;
                row.reset();
                self.rows.push_back(row);
            }
            return;
        }
        let rows = self.rows.make_contiguous();
        let region = &mut rows[top..=bottom];
        for row in &mut region[..n] {
            if keep_rows {
                if let Some(k) = keep.as_mut() {
                    k(row);
                }
                self.top_continues = row.wrapped;
            }
            row.reset();
        }
        region.rotate_left(n);
    }

    pub fn scroll_down(&mut self, n: u16) {
        self.push_down(self.top, n);
    }

    pub fn insert_lines(&mut self, n: u16) {
        if self.in_region() {
            self.push_down(self.pos.row, n);
        }
    }

    /// Moves rows `from..=bottom` of the region down `n` rows; empty rows come in at
    /// `from`, and rows pushed past the bottom are gone.
    fn push_down(&mut self, from: u16, n: u16) {
        let (from, bottom) = (usize::from(from), usize::from(self.bottom));
        let n = usize::from(n).min(bottom + 1 - from);
        if n == 0 {
            return;
        }
        self.moved_all();
        if from == 0 {
            self.top_continues = false;
        }
        let rows = self.rows.make_contiguous();
        let region = &mut rows[from..=bottom];
        region.rotate_right(n);
        for row in &mut region[..n] {
            row.reset();
        }
        rows[bottom].wrapped = false;
    }

    pub fn delete_lines(&mut self, n: u16) {
        if !self.in_region() {
            return;
        }
        self.moved_all();
        if self.pos.row == 0 {
            self.top_continues = false;
        }
        let (from, bottom) = (usize::from(self.pos.row), usize::from(self.bottom));
        let rows = self.rows.make_contiguous();
        let region = &mut rows[from..=bottom];
        let n = usize::from(n).min(region.len());
        for row in &mut region[..n] {
            row.reset();
        }
        region.rotate_left(n);
    }

    pub fn erase_all(&mut self, pen: Ink) {
        self.moved_all();
        self.top_continues = false;
        for row in &mut self.rows {
            row.clear(pen);
        }
    }

    pub fn erase_all_forward(&mut self, pen: Ink) {
        self.moved_all();
        let from = usize::from(self.pos.row) + 1;
        for row in self.rows.iter_mut().skip(from) {
            row.clear(pen);
        }
        self.erase_row_forward(pen);
    }

    pub fn erase_all_backward(&mut self, pen: Ink) {
        self.moved_all();
        self.top_continues = false;
        let to = usize::from(self.pos.row);
        for row in self.rows.iter_mut().take(to) {
            row.clear(pen);
        }
        self.erase_row_backward(pen);
    }

    pub fn erase_row(&mut self, pen: Ink) {
        if self.pos.row == 0 {
            self.top_continues = false;
        }
        self.cursor_row_mut().clear(pen);
    }

    pub fn erase_row_forward(&mut self, pen: Ink) {
        if self.pos == Pos::default() {
            self.top_continues = false;
        }
        let (from, width) = (usize::from(self.pos.col), usize::from(self.width));
        self.cursor_row_mut().erase_range(from, width, pen);
    }

    pub fn erase_row_backward(&mut self, pen: Ink) {
        let to = usize::from(self.pos.col.min(self.width - 1));
        let row = self.cursor_row_mut();
        for col in 0..=to {
            row.erase(col, pen);
        }
    }

    pub fn erase_cells(&mut self, n: u16, pen: Ink) {
        let from = usize::from(self.pos.col);
        let to = usize::from(self.pos.col.saturating_add(n).min(self.width));
        self.cursor_row_mut().erase_range(from, to, pen);
    }

    pub fn insert_cells(&mut self, n: u16) {
        let at = usize::from(self.pos.col);
        let row = self.cursor_row_mut();
        let width = row.width();
        let n = usize::from(n).min(width.saturating_sub(at));
        if n == 0 {
            row.wrapped = false;
            return;
        }
        if at < row.cells().len() {
            // (Past the stored cells all is blank: shifting it right changes nothing.)
            row.store(width);
            let cont = row.cells()[at].is_wide_continuation();
            if cont {
                row.cells_mut()[at].set_wide_continuation(false);
            }
            let cells = &mut row.cells_mut()[at..];
            cells.rotate_right(n);
            cells[..n].fill(Cell::EMPTY);
            if usize::from(row.used) > at {
                row.used = (usize::from(row.used) + n).min(width) as u16;
            }
            if cont {
                row.cells_mut()[at].set_wide_continuation(true);
            }
        }
        row.truncated();
    }

    pub fn delete_cells(&mut self, n: u16) {
        let start = usize::from(self.pos.col);
        let end = usize::from(self.pos.col.saturating_add(n).min(self.width));
        let row = self.cursor_row_mut();
        row.wrapped = false;
        if start >= end {
            return;
        }
        row.clear_wide(start);
        if end - 1 != start {
            row.clear_wide(end - 1);
        }
        if start < row.cells().len() {
            let width = row.width();
            row.store(width);
            let cells = &mut row.cells_mut()[start..];
            cells[..end - start].fill(Cell::EMPTY);
            cells.rotate_left(end - start);
        }
    }
}
