//! Where the `vt100` crate, the emulator tests' oracle, keeps less of a cell than herdr.

use super::Oracle;
use crate::term::vt::Terminal;

/// Whether a cell of ours holds more of a cluster than vt100's, which stopped taking
/// characters with 4 bytes of room left.
pub(super) fn fuller_cells(ours: &Terminal, theirs: &vt100::Parser<Oracle>) -> bool {
    let (a, b) = (ours.screen(), theirs.screen());
    let (rows, cols) = a.size();
    (0..rows).any(|row| {
        (0..cols).any(|col| {
            let (Some(x), Some(y)) = (a.cell(row, col), b.cell(row, col)) else {
                return false;
            };
            let (x, y) = (x.contents(), y.contents());
            x != y && x.starts_with(y) && y.len() >= 18
        })
    })
}

/// A cell's text as vt100 keeps it: it combines no more marks once a cell holds 18 bytes
/// (herdr's cells have room for more).
pub(super) fn vt100_text(text: &str) -> &str {
    let mut len = 0;
    for c in text.chars() {
        if len >= 18 {
            return &text[..len];
        }
        len += c.len_utf8();
    }
    text
}
