//! Rendering, pure: `view` is what a frame is made from and where things are on screen;
//! `chrome` draws the sidebar, tab bar, status line and help, `pane` a pane's screen, and
//! `ui` composes them into a client's [`diff::Frame`]; `diff` turns two frames into the
//! terminal bytes between them. Imports run one way: ui → chrome, pane → view; nothing
//! here imports the server or the PTY layer.

mod chrome;
pub mod diff;
pub mod pane;
pub mod ui;
pub mod view;

use ratatui::buffer::{Cell, CellDiffOption};
use ratatui::style::Color;

/// Whether a frame cell equals `Cell::EMPTY` (a space, default colours, nothing else),
/// as `==` says, without comparing symbols as strings: asked of most cells of every row
/// drawn (a row is mostly blank), where `==` costs ~65 instructions.
#[inline]
pub(crate) fn is_blank(cell: &Cell) -> bool {
    #[allow(deprecated)] // (`==` compares it: so must this.)
    let skip = cell.skip;
    cell.fg == Color::Reset
        && cell.bg == Color::Reset
        && cell.modifier.is_empty()
        && cell.diff_option == CellDiffOption::None
        && !skip
        && cell.symbol() == " "
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::{Cell, CellDiffOption};
    use ratatui::style::{Color, Modifier};

    #[test]
    fn a_blank_cell_is_what_equals_the_empty_one() {
        let mut cells = vec![Cell::EMPTY, Cell::new(" "), Cell::new("x"), Cell::new("  ")];
        let mut c = Cell::new(" ");
        c.fg = Color::Red;
        cells.push(c.clone());
        c = Cell::new(" ");
        c.bg = Color::Indexed(0);
        cells.push(c.clone());
        c = Cell::new(" ");
        c.modifier = Modifier::UNDERLINED;
        cells.push(c.clone());
        c = Cell::new(" ");
        c.set_diff_option(CellDiffOption::Skip);
        cells.push(c.clone());
        c = Cell::new(" ");
        c.set_diff_option(CellDiffOption::ForcedWidth(std::num::NonZeroU16::MIN));
        cells.push(c);
        for cell in &cells {
            assert_eq!(super::is_blank(cell), *cell == Cell::EMPTY, "{cell:?}");
        }
        assert_eq!(cells.iter().filter(|c| super::is_blank(c)).count(), 2);
    }

    /// `is_blank` compares the fields `==` compares: a field it does not know of (as
    /// ratatui's `underline-color` feature would add) fails here.
    #[test]
    fn a_blank_cell_is_compared_in_every_field() {
        let shown = format!("{:?}", Cell::EMPTY);
        let inner = &shown[shown.find('{').expect("a struct") + 1..];
        let mut fields: Vec<&str> = inner
            .split(", ")
            .filter_map(|part| part.trim().split_once(": ").map(|(name, _)| name))
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["bg", "diff_option", "fg", "modifier", "skip", "symbol"],
            "{shown}"
        );
    }
}
