//! Drawing one pane's emulator screen into a frame, redrawing only the rows that changed
//! since the last frame drawn from the same cache.
//!
//! The emulator says which rows changed since a content sequence; when it cannot (the
//! first frame, a new size, the view scrolled back), each row's formatted form is
//! compared with the one remembered, and a row whose form is unchanged keeps the cells
//! already in the frame. Invariant: a cache is only used with
//! the frame it was filled for (the caller clears it whenever it starts a frame afresh).

use std::time::Instant;

use std::num::NonZeroU16;

use ratatui::buffer::CellDiffOption;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use super::diff::{Extra, Frame};
use crate::model::ids::TerminalId;
use crate::model::Scroll;
use crate::term::Emulator;

/// Per client: each visible terminal's rows as last drawn.
#[derive(Debug, Default)]
pub struct RowCache {
    rows: crate::model::ids::IdMap<TerminalId, Vec<String>>,
    /// The emulator's content sequence when the pane was last drawn, with its rect: if
    /// both are unchanged, nothing in the pane can have changed.
    seen: crate::model::ids::IdMap<TerminalId, (u64, Rect)>,
    /// The earliest time a pane drawn in the last frame stops showing a finished frame
    /// under synchronized output and shows what its program drew since (the frame to
    /// draw then).
    pub sync_due: Option<Instant>,
    /// Per row of the frame, the columns `from..to` the last update drew differently
    /// (`compose_update` starts them empty): outside them the row is as it was, so the
    /// frame's diff need not compare it there (a keystroke changes one cell of a row).
    cols: Vec<(u16, u16)>,
}

impl RowCache {
    pub fn clear(&mut self) {
        self.rows.clear();
        self.seen.clear();
        self.sync_due = None;
        self.cols.clear();
    }

    /// Every row of a frame `height` rows tall unchanged so far.
    pub fn start_cols(&mut self, height: u16) {
        self.cols.clear();
        self.cols.resize(usize::from(height), (u16::MAX, 0));
    }

    /// Columns `from..to` of row `y` may have changed.
    pub fn widen(&mut self, y: u16, from: u16, to: u16) {
        widen(&mut self.cols, y, from, to);
    }

    /// What [`RowCache::widen`] gathered since [`RowCache::start_cols`].
    pub fn cols(&self) -> &[(u16, u16)] {
        &self.cols
    }
}

fn widen(cols: &mut [(u16, u16)], y: u16, from: u16, to: u16) {
    if let Some((lo, hi)) = cols.get_mut(usize::from(y)) {
        *lo = (*lo).min(from);
        *hi = (*hi).max(to);
    }
}

/// A cached row text no formatted row can equal.
const UNSET: &str = "\u{0}unset";

pub struct PaneCursor {
    pub pos: Option<(u16, u16)>,
    pub app_cursor: bool,
    pub app_keypad: bool,
}

pub fn vt_color(c: crate::term::vt::Color) -> Color {
    use crate::term::vt::Color as Vt;
    match c {
        Vt::Default => Color::Reset,
        Vt::Idx(i) => Color::Indexed(i),
        Vt::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

/// The line over the last row of a pane whose program ended: its status and what the
/// keys do. Returns the row drawn.
pub fn draw_ended(buf: &mut ratatui::buffer::Buffer, rect: Rect, code: Option<i32>) -> Option<u16> {
    if rect.width == 0 || rect.height == 0 {
        return None;
    }
    let status = match code {
        Some(c) => format!("exited {c}"),
        None => "ended by a signal".to_string(),
    };
    let room = usize::from(rect.width);
    let full = format!(" {status} · Enter reruns · x closes ");
    let text = if full.chars().count() <= room {
        full
    } else {
        format!(" {status} ").chars().take(room).collect()
    };
    let bg = if code == Some(0) {
        Color::Green
    } else {
        Color::Red
    };
    let row = rect.bottom() - 1;
    let style = Style::default().fg(Color::Black).bg(bg);
    let width = usize::from(rect.width);
    buf.set_string(rect.x, row, format!("{text:<width$}"), style);
    Some(row)
}

/// A line over the last row of a pane that mirrors a machine's pane while that machine
/// is unreachable (`machine` its name, `state` its state). The row is drawn afresh next
/// time (the pane's program did not draw this). The row drawn.
pub fn draw_machine_banner(
    buf: &mut ratatui::buffer::Buffer,
    rect: Rect,
    (tid, machine, state): (TerminalId, &str, &str),
    cache: &mut RowCache,
) -> Option<u16> {
    if rect.width == 0 || rect.height == 0 {
        return None;
    }
    let text = format!(" {machine} is {state}: keys are not sent; it reconnects by itself ");
    let text: String = text.chars().take(usize::from(rect.width)).collect();
    let row = rect.bottom() - 1;
    let style = Style::default().fg(Color::Black).bg(Color::Yellow);
    let width = usize::from(rect.width);
    buf.set_string(rect.x, row, format!("{text:<width$}"), style);
    cache.seen.remove(&tid);
    if let Some(slot) = cache
        .rows
        .get_mut(&tid)
        .and_then(|r| r.get_mut(usize::from(rect.height - 1)))
    {
        slot.clear();
        slot.push_str(UNSET);
    }
    Some(row)
}

/// Draws the pane's screen into `rect`; rows whose formatted text matches the cache are
/// left as they are in `frame`.
pub fn draw_pane(
    frame: &mut Frame,
    rect: Rect,
    (tid, emu): (TerminalId, &mut Emulator),
    scroll: Option<&Scroll>,
    now: Instant,
    cache: &mut RowCache,
    dirty: &mut [bool],
) -> PaneCursor {
    // While its program holds synchronized output on, a pane shows the frame it last
    // finished (for a while at most: then what it has drawn so far).
    emu.settle_sync(now);
    if let Some(due) = emu.sync_deadline() {
        cache.sync_due = Some(cache.sync_due.map_or(due, |d| d.min(due)));
    }
    // Facts of the screen shown first; then the screen to draw (history when scrolled).
    let (offset, history) = (emu.scrollback(), emu.history_len());
    let shown = emu.shown();
    let (crow, ccol) = shown.cursor_position();
    let hidden = shown.hide_cursor();
    let live = emu.screen();
    let (app_cursor, app_keypad) = (live.application_cursor(), live.application_keypad());
    let seq = emu.display_seq();
    let last = cache.seen.insert(tid, (seq, rect));
    let unchanged = last == Some((seq, rect));
    // Drawn here before at this size and live: the emulator says which rows changed.
    let changed = match last {
        Some((since, r)) if !unchanged && r == rect && offset == 0 && scroll.is_none() => {
            let (rows, cols) = emu.size();
            (rows == rect.height && cols == rect.width)
                .then(|| emu.rows_changed_since(since))
                .flatten()
        }
        _ => None,
    };
    let screen = emu.display();
    let cached = cache.rows.entry(tid).or_default();
    cached.resize(usize::from(rect.height), String::from(UNSET));
    let full = !unchanged && changed.is_none();
    if let Some(rows) = changed {
        for row in rows {
            if let Some((from, to)) = draw_row(frame, rect, screen, row) {
                widen(&mut cache.cols, rect.y + row, from, to);
            }
            // Its formatted text is not known now: a later full look compares afresh.
            let slot = &mut cached[usize::from(row)];
            slot.clear();
            slot.push_str(UNSET);
            if let Some(d) = dirty.get_mut(usize::from(rect.y + row)) {
                *d = true;
            }
        }
    }
    let mut formatted = screen.rows_formatted(0, rect.width);
    for row in (0..rect.height).filter(|_| full) {
        let text = formatted.next().unwrap_or_default();
        let slot = &mut cached[usize::from(row)];
        if *slot == text {
            continue;
        }
        if let Some((from, to)) = draw_row(frame, rect, screen, row) {
            widen(&mut cache.cols, rect.y + row, from, to);
        }
        *slot = text;
        if let Some(d) = dirty.get_mut(usize::from(rect.y + row)) {
            *d = true;
        }
    }
    drop(formatted);
    if let Some(st) = scroll {
        draw_scroll_marks(frame, rect, st, emu, history);
    }
    let visible = !hidden && offset == 0 && crow < rect.height && ccol < rect.width;
    PaneCursor {
        pos: visible.then_some((rect.x + ccol, rect.y + crow)),
        app_cursor,
        app_keypad,
    }
}

/// Copies one emulator row into the frame, writing only the frame cells that differ
/// (most of a changed row usually does not): the row's text up to its used extent, then
/// blanks.
/// Returns the frame columns `from..to` whose cells it changed (None: none).
fn draw_row(
    frame: &mut Frame,
    rect: Rect,
    screen: &crate::term::vt::Screen,
    row: u16,
) -> Option<(u16, u16)> {
    let y = rect.y + row;
    let area = frame.buffer.area;
    if y < area.y || y >= area.bottom() || rect.x < area.x || rect.right() > area.right() {
        return None;
    }
    let start = frame.buffer.index_of(rect.x, y);
    let span = start..start + usize::from(rect.width);
    let (Some(out), Some(extras)) = (
        frame.buffer.content.get_mut(span.clone()),
        frame.extras.get_mut(span),
    ) else {
        return None;
    };
    // The columns changed, within the pane's row.
    let (mut lo, mut hi) = (usize::MAX, 0);
    let mut touched = |col: usize, changed: bool| {
        if changed {
            lo = lo.min(col);
            hi = hi.max(col + 1);
        }
    };
    // Past its used extent a row is blank. An emulator narrower than the pane for a
    // moment (a resize in flight) leaves the rest blank too, rather than stale.
    let cells = screen
        .row(row)
        .map_or(&[][..], crate::term::vt::Row::used_cells);
    // The frame cell's colours, modifiers and extras for `ink`.
    let mut ink = crate::term::vt::Ink::DEFAULT;
    let mut style = (Color::Reset, Color::Reset, Modifier::empty());
    let mut extra = Extra::PLAIN;
    let mut col = 0;
    while col < out.len() {
        let Some(cell) = cells.get(col) else {
            for (i, (c, e)) in out[col..].iter_mut().zip(&mut extras[col..]).enumerate() {
                let changed = blank(c) | plain(e);
                touched(col + i, changed);
            }
            break;
        };
        let wide = cell.is_wide();
        if wide && col + 1 >= out.len() {
            // A wide char that does not fit: show a blank, as terminals do.
            let changed = blank(&mut out[col]) | plain(&mut extras[col]);
            touched(col, changed);
            break;
        }
        let c = &mut out[col];
        let sym = match cell.contents() {
            "" => " ",
            s => s,
        };
        let mut changed = false;
        if c.symbol() != sym {
            c.set_symbol(sym);
            changed = true;
        }
        // A cluster is as wide as the emulator made it, whatever width the frame's own
        // rules would give its text (the encoder places what follows it by that).
        let option = if sym.chars().nth(1).is_some() {
            CellDiffOption::ForcedWidth(
                NonZeroU16::new(1 + u16::from(wide)).unwrap_or(NonZeroU16::MIN),
            )
        } else {
            CellDiffOption::None
        };
        if c.diff_option != option {
            c.set_diff_option(option);
            changed = true;
        }
        // Neighbours mostly share their ink: it is decoded once for them.
        if cell.ink() != ink {
            ink = cell.ink();
            let pen = ink.pen();
            let mut m = Modifier::empty();
            for (on, flag) in [
                (pen.bold(), Modifier::BOLD),
                (pen.dim(), Modifier::DIM),
                (pen.italic(), Modifier::ITALIC),
                (pen.underline(), Modifier::UNDERLINED),
                (pen.blink(), Modifier::SLOW_BLINK),
                (pen.rapid_blink(), Modifier::RAPID_BLINK),
                (pen.inverse(), Modifier::REVERSED),
                (pen.hidden(), Modifier::HIDDEN),
                (pen.strikethrough(), Modifier::CROSSED_OUT),
            ] {
                if on {
                    m |= flag;
                }
            }
            style = (vt_color(pen.fg), vt_color(pen.bg), m);
            extra = Extra {
                underline: pen.underline_style(),
                underline_color: vt_color(pen.ul),
                overline: pen.overline(),
                link: screen.link(pen.link).cloned(),
            };
        }
        if (c.fg, c.bg, c.modifier) != style {
            (c.fg, c.bg, c.modifier) = style;
            changed = true;
        }
        if extras[col] != extra {
            extras[col].clone_from(&extra);
            changed = true;
        }
        touched(col, changed);
        if wide {
            let changed = blank(&mut out[col + 1]) | plain(&mut extras[col + 1]);
            touched(col + 1, changed);
            col += 2;
        } else {
            col += 1;
        }
    }
    // Columns fit in u16: the row is the pane's width.
    (lo < hi).then(|| (rect.x + lo as u16, rect.x + hi as u16))
}

/// Makes a frame cell's extras plain, unless they are; whether they were not.
fn plain(e: &mut Extra) -> bool {
    let change = !e.is_plain();
    if change {
        *e = Extra::PLAIN;
    }
    change
}

/// Makes a frame cell blank, unless it already is; whether it was not.
fn blank(c: &mut ratatui::buffer::Cell) -> bool {
    let change = !super::is_blank(c);
    if change {
        c.reset();
    }
    change
}

/// Copy mode over the pane: the search's matches, the selection, the cursor, and a label
/// with where the view is (or the search being typed).
fn draw_scroll_marks(frame: &mut Frame, rect: Rect, st: &Scroll, emu: &Emulator, history: usize) {
    let buf = &mut frame.buffer;
    if rect.height == 0
        || rect.width == 0
        || rect.y >= buf.area.bottom()
        || rect.right() > buf.area.right()
    {
        return;
    }
    let offset = emu.scrollback();
    let top = emu.text_history().saturating_sub(offset);
    let found = st.search.as_ref().map(|(_, p)| p.as_str());
    let mut paint = |y: u16,
                     line: &str,
                     (from, to): (usize, usize),
                     style: &dyn Fn(&mut ratatui::buffer::Cell)| {
        for (x, w) in cells_of(line, from, to, rect.width) {
            for dx in 0..w {
                if let Some(c) = buf.cell_mut((rect.x + x + dx, rect.y + y)) {
                    style(c);
                }
            }
        }
    };
    for y in 0..rect.height {
        let r = top + usize::from(y);
        let line = emu.text_row(r);
        if let Some(p) = found {
            let n = p.chars().count();
            for at in crate::model::copy::matches_in(&line, p) {
                paint(y, &line, (at, at + n), &|c| {
                    c.set_bg(Color::Yellow).set_fg(Color::Black);
                });
            }
        }
        if let Some((from, to)) = crate::model::copy::selected_cols(st, r) {
            // A whole-row selection reaches the pane's edge, as tmux draws it.
            let to = if to == usize::MAX {
                usize::from(rect.width)
            } else {
                to
            };
            let padded = format!("{line:<width$}", width = usize::from(rect.width));
            paint(y, &padded, (from, to), &|c| {
                c.modifier |= Modifier::REVERSED;
            });
        }
        if r == st.row {
            let padded = format!("{line:<width$}", width = st.col + 1);
            paint(y, &padded, (st.col, st.col + 1), &|c| {
                c.set_bg(Color::Cyan).set_fg(Color::Black);
            });
        }
    }
    let label = match &st.prompt {
        Some((forward, typed)) => format!("{}{typed}", if *forward { "/" } else { "?" }),
        None => format!("[{offset}/{history}]"),
    };
    let w = (label.chars().count() as u16).min(rect.width);
    let text: String = label.chars().take(usize::from(w)).collect();
    buf.set_string(
        rect.right() - w,
        rect.y,
        text,
        Style::default().fg(Color::Black).bg(Color::Yellow),
    );
    frame.plain_extras(Rect::new(rect.right() - w, rect.y, w, 1));
}

/// The cells (column, width) the characters `from..to` of `line` take, within `width`
/// columns: a wide character takes two.
fn cells_of(line: &str, from: usize, to: usize, width: u16) -> Vec<(u16, u16)> {
    use unicode_width::UnicodeWidthChar;
    let mut x = 0u16;
    let mut out = Vec::new();
    for (i, ch) in line.chars().enumerate() {
        let w = ch.width().unwrap_or(0) as u16;
        if i >= to || x >= width {
            break;
        }
        if i >= from && w > 0 {
            out.push((x, w.min(width - x)));
        }
        x = x.saturating_add(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::vt::tests::{joined, slices, PIECES};
    use crate::term::Emulator;

    fn text(frame: &Frame, rect: Rect) -> Vec<String> {
        let buf = &frame.buffer;
        (rect.y..rect.bottom())
            .map(|y| {
                (rect.x..rect.right())
                    .map(|x| buf.cell((x, y)).map_or(" ", |c| c.symbol()))
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn incremental_drawing_matches_a_fresh_drawing() {
        let rect = Rect::new(3, 1, 20, 5);
        let mut emu = Emulator::new(5, 20, 100);
        let tid = TerminalId(1);
        let mut cache = RowCache::default();
        let mut buf = Frame::new(30, 8);
        let steps: [&[u8]; 5] = [
            b"hello\r\nworld",
            b"\x1b[31mred\x1b[0m",
            b"\r\n\xe6\xbc\xa2\xe5\xad\x97!",
            b"\x1b[2J\x1b[Hcleared",
            b"\r\n1\r\n2\r\n3\r\n4\r\n5",
        ];
        for step in steps {
            emu.process(step);
            draw_pane(
                &mut buf,
                rect,
                (tid, &mut emu),
                None,
                Instant::now(),
                &mut cache,
                &mut [false; 8],
            );
            let mut fresh = Frame::new(30, 8);
            draw_pane(
                &mut fresh,
                rect,
                (tid, &mut emu),
                None,
                Instant::now(),
                &mut RowCache::default(),
                &mut [false; 8],
            );
            assert_eq!(buf, fresh, "after {:?}", String::from_utf8_lossy(step));
        }
        assert_eq!(text(&buf, rect), ["1", "2", "3", "4", "5"]);
    }

    #[test]
    fn a_pane_under_synchronized_output_shows_its_last_finished_frame() {
        let rect = Rect::new(0, 0, 10, 3);
        let mut emu = Emulator::new(3, 10, 100);
        let tid = TerminalId(1);
        let mut cache = RowCache::default();
        let mut buf = Frame::new(rect.width, rect.height);
        let draw = |buf: &mut Frame, emu: &mut Emulator, cache: &mut RowCache| {
            let now = Instant::now();
            draw_pane(buf, rect, (tid, emu), None, now, cache, &mut [false; 3]).pos
        };
        emu.process(b"frame 1\r\nrow 2");
        draw(&mut buf, &mut emu, &mut cache);
        emu.process(b"\x1b[?2026h\x1b[2J\x1b[Hframe 2");
        let cursor = draw(&mut buf, &mut emu, &mut cache);
        assert_eq!(text(&buf, rect), ["frame 1", "row 2", ""]);
        assert_eq!(cursor, Some((5, 1)), "the cursor where that frame left it");
        assert!(cache.sync_due.is_some(), "a frame is due when it times out");
        // Drawn afresh too (a new client, a changed layout).
        let mut fresh = Frame::new(rect.width, rect.height);
        let mut nothing = RowCache::default();
        draw(&mut fresh, &mut emu, &mut nothing);
        assert_eq!(fresh, buf);
        emu.process(b"\x1b[?2026l");
        cache.sync_due = None;
        draw(&mut buf, &mut emu, &mut cache);
        assert_eq!(text(&buf, rect), ["frame 2", "", ""]);
        assert!(cache.sync_due.is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// However output arrives (any pieces, split anywhere), drawing only the rows the
        /// emulator reports changed gives what drawing everything afresh gives.
        #[test]
        fn drawing_changed_rows_matches_a_fresh_drawing(
            picks in proptest::collection::vec((0..PIECES.len(), 0usize..4), 1..60),
            cuts in proptest::collection::vec(1usize..8, 1..40),
        ) {
            let (rows, cols) = (6u16, 12u16);
            let rect = Rect::new(2, 1, cols, rows);
            let area = (cols + 4, rows + 2);
            let mut emu = Emulator::new(rows, cols, 50);
            let tid = TerminalId(1);
            let mut cache = RowCache::default();
            let mut buf = Frame::new(area.0, area.1);
            let out = joined(PIECES, &picks);
            for (now, done) in slices(&out, &cuts) {
                emu.process(now);
                let shown = String::from_utf8_lossy(&out[..done]).into_owned();
                let before = buf.clone();
                cache.start_cols(area.1);
                draw_pane(&mut buf, rect, (tid, &mut emu), None, Instant::now(), &mut cache, &mut [false; 8]);
                // Every cell the draw changed lies in the columns it reported for its row.
                for y in 0..area.1 {
                    let (from, to) = cache.cols()[usize::from(y)];
                    for x in 0..area.0 {
                        let i = usize::from(y) * usize::from(area.0) + usize::from(x);
                        let changed = before.buffer.content[i] != buf.buffer.content[i]
                            || before.extras[i] != buf.extras[i];
                        proptest::prop_assert!(
                            !changed || (from..to).contains(&x),
                            "({x}, {y}) changed outside {from}..{to} after {shown:?}"
                        );
                    }
                }
                let mut fresh = Frame::new(area.0, area.1);
                let mut nothing = RowCache::default();
                draw_pane(&mut fresh, rect, (tid, &mut emu), None, Instant::now(), &mut nothing, &mut [false; 8]);
                proptest::prop_assert_eq!(text(&buf, rect), text(&fresh, rect), "after {:?}", shown);
                proptest::prop_assert!(buf == fresh, "styles differ after {:?}", shown);
            }
        }
    }
}
