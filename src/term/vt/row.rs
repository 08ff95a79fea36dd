//! One row of a screen: its cells as far as any was written, whether it wraps, and when
//! it last changed.

use super::cell::{Cell, Ink};

/// A blank cell, for the columns a row does not store.
static BLANK: Cell = Cell::EMPTY;

#[derive(Debug)]
pub struct Row {
    /// Room for the row's cells; the first `stored` are the row's first cells, as far as
    /// any was written: past them, up to `width`, every cell is blank with the default
    /// pen. A row nothing was drawn on stores none (an idle pane's screen is mostly such
    /// rows), and a stored row keeps its room when cleared. (A boxed slice and a count,
    /// not a `Vec`: 8 bytes less a row, every row of every pane.)
    room: Box<[Cell]>,
    stored: u16,
    width: u16,
    /// The row's text continues on the next row (it was wrapped at the right margin).
    pub(super) wrapped: bool,
    /// The grid's `seq` when a cell of this row last changed.
    pub(super) changed: u64,
    /// Cells from here on are empty with the default pen (at most the cells stored).
    pub(super) used: u16,
    /// The wrap mark came from a rule the `vt100` crate (the tests' oracle) lacks.
    #[cfg(test)]
    pub(super) extra_wrap: bool,
}

// Every row of every pane has one: kept at 32 bytes.
const _: () = assert!(std::mem::size_of::<Row>() <= 32);

/// A copy holds the used cells only (the rest are blank); copying into a row reuses its
/// room (a synchronized frame copies the shown grid each frame).
impl Clone for Row {
    fn clone(&self) -> Row {
        let used = self.used_cells();
        Row {
            room: used.into(),
            stored: used.len() as u16,
            ..*self
        }
    }

    fn clone_from(&mut self, source: &Row) {
        let used = source.used_cells();
        let mut room = std::mem::take(&mut self.room);
        match room.get_mut(..used.len()) {
            Some(cells) => cells.copy_from_slice(used),
            None => room = used.into(),
        }
        *self = Row {
            room,
            stored: used.len() as u16,
            ..*source
        };
    }
}

impl Row {
    pub(super) fn new(cols: u16) -> Row {
        Row {
            room: Box::default(),
            stored: 0,
            width: cols,
            wrapped: false,
            changed: 0,
            used: 0,
            #[cfg(test)]
            extra_wrap: false,
        }
    }

    /// A row of these cells (for laying rows out again at another width).
    pub(super) fn of_cells(cells: Vec<Cell>, wrapped: bool) -> Row {
        Row {
            used: cells.len() as u16,
            width: cells.len() as u16,
            stored: cells.len() as u16,
            room: cells.into_boxed_slice(),
            wrapped,
            changed: 0,
            #[cfg(test)]
            extra_wrap: false,
        }
    }

    /// How many columns the row has.
    pub fn width(&self) -> usize {
        usize::from(self.width)
    }

    /// The cells stored: past them every cell is blank (see [`Row::cell`]).
    pub fn cells(&self) -> &[Cell] {
        &self.room[..usize::from(self.stored)]
    }

    /// The stored cells, to change (see [`Row::store`]).
    pub(super) fn cells_mut(&mut self) -> &mut [Cell] {
        &mut self.room[..usize::from(self.stored)]
    }

    /// The cells that may be other than empty with the default pen.
    pub fn used_cells(&self) -> &[Cell] {
        &self.room[..usize::from(self.used.min(self.stored))]
    }

    /// Whether both rows hold the same cells, compared as bytes (one `memcmp`, where
    /// comparing cell by cell costs ~20 instructions a cell).
    pub fn same_cells(&self, other: &Row) -> bool {
        let bytes: fn(&Row) -> &[u8] = |row| bytemuck::cast_slice(row.used_cells());
        bytes(self) == bytes(other)
    }

    /// The cell at `col` (< the width).
    #[inline]
    pub fn cell(&self, col: usize) -> &Cell {
        self.cells().get(col).unwrap_or(&BLANK)
    }

    /// Stores the cells up to `to` (blank where none was).
    #[inline]
    pub(super) fn store(&mut self, to: usize) {
        if to > usize::from(self.stored) {
            self.grow(to);
        }
    }

    #[cold]
    pub(super) fn grow(&mut self, to: usize) {
        let stored = usize::from(self.stored);
        if to > self.room.len() {
            // Room for twice what is stored (a row is written left to right), never past
            // the width; a row's first text (a prompt) gets room for itself alone.
            let room = to.max(2 * stored).max(8).min(self.width()).max(to);
            let mut bigger = vec![Cell::EMPTY; room].into_boxed_slice();
            bigger[..stored].copy_from_slice(self.cells());
            self.room = bigger;
        } else {
            // (Room kept from before holds what was there then.)
            self.room[stored..to].fill(Cell::EMPTY);
        }
        self.stored = to as u16;
    }

    /// The cell at `col`, to change without moving the used extent.
    pub(super) fn at(&mut self, col: usize) -> &mut Cell {
        self.store(col + 1);
        &mut self.room[col]
    }

    /// The cell at `col`, to change.
    #[inline]
    pub(super) fn cell_mut(&mut self, col: usize) -> &mut Cell {
        if col >= usize::from(self.used) {
            self.used = col as u16 + 1;
        }
        self.at(col)
    }

    /// Writes `text` (printable ASCII) from `from` (`from + text.len()` ≤ the width), a
    /// cell a character, up to the first wide character met; returns how many it wrote.
    #[inline]
    pub(super) fn write_ascii(&mut self, from: usize, text: &[u8], ink: Ink) -> usize {
        let to = from + text.len();
        self.store(to);
        let mut n = 0;
        for (cell, &b) in self.room[from..to].iter_mut().zip(text) {
            if cell.is_wide() {
                break;
            }
            cell.set_ascii(b, ink);
            n += 1;
        }
        if from + n > usize::from(self.used) {
            self.used = (from + n) as u16;
        }
        n
    }

    pub fn wrapped(&self) -> bool {
        self.wrapped
    }

    pub(super) fn reset(&mut self) {
        // What is past the stored cells is blank: dropping them is resetting them (their
        // room stays).
        self.stored = 0;
        self.used = 0;
        self.wrapped = false;
    }

    pub(super) fn clear(&mut self, pen: Ink) {
        // With the default pen, cells past `used` are already what clearing makes them:
        // an erase of what is blank costs nothing (a program may erase 16k times in 64 KiB).
        if pen == Ink::DEFAULT {
            let used = usize::from(self.used.min(self.stored));
            for c in &mut self.room[..used] {
                c.clear(pen);
            }
            self.used = 0;
        } else {
            let width = self.width();
            self.store(width);
            for c in self.cells_mut() {
                c.clear(pen);
            }
            self.used = self.width;
        }
        self.wrapped = false;
    }

    /// Empties the other half of a wide character at `col`, if it is one.
    pub(super) fn clear_wide(&mut self, col: usize) {
        let cell = *self.cell(col);
        let other = if cell.is_wide() {
            if col + 1 >= self.width() {
                self.at(col).clear(cell.ink());
                return;
            }
            col + 1
        } else if cell.is_wide_continuation() && col > 0 {
            col - 1
        } else {
            return;
        };
        let pen = self.cell(other).ink();
        self.at(other).clear(pen);
    }

    pub(super) fn erase(&mut self, col: usize, pen: Ink) {
        let wide = self.cell(col).is_wide();
        self.clear_wide(col);
        self.cell_mut(col).clear(pen);
        if col == self.width().saturating_sub(if wide { 2 } else { 1 }) {
            self.wrapped = false;
        }
    }

    /// Erases cells `from..to`; with the default pen, only those up to `used` need it.
    pub(super) fn erase_range(&mut self, from: usize, to: usize, pen: Ink) {
        let used = usize::from(self.used);
        let upto = if pen == Ink::DEFAULT {
            to.min(used)
        } else {
            to
        };
        for col in from..upto {
            self.erase(col, pen);
        }
        if upto < to {
            // What the skipped cells would have done: the last one ends the wrap, and
            // everything from `from` on is blank now.
            if to == self.width() {
                self.wrapped = false;
            }
            if to >= used {
                self.used = self.used.min(from as u16);
            }
        }
    }

    pub(super) fn truncated(&mut self) {
        self.wrapped = false;
        if self.stored < self.width {
            return; // the last column is blank
        }
        if let Some(last) = self.cells_mut().last_mut() {
            if last.is_wide() {
                let pen = last.ink();
                last.clear(pen);
            }
        }
    }

    pub(super) fn resize(&mut self, cols: u16) {
        if cols < self.width {
            self.stored = self.stored.min(cols);
            self.width = cols;
            self.used = self.used.min(cols);
            self.truncated();
        } else if cols > self.width {
            self.width = cols;
            self.wrapped = false;
        }
    }
}
