//! herdr's terminal emulator: a `vte` parser driving two grids of compact cells (the
//! primary and the alternate screen). It behaves as the `vt100` crate does for the
//! sequences that crate knows — the tests feed both random output and compare every
//! cell — and is several times faster: a printed ASCII character is one cell write, a
//! full-screen scroll moves no rows, and each row that leaves the top of the primary
//! screen is formatted once, straight from its cells, for the history.

mod cell;
mod cluster;
mod colors;
mod feed;
mod format;
mod grid;
mod keyboard;
mod links;
mod perform;
mod reflow;
mod strings;
mod sync;
#[cfg(test)]
pub(crate) mod tests;

use unicode_width::UnicodeWidthChar as _;

pub use cell::{Cell, Color, Ink, Pen, Underline};
pub use grid::Row;
use grid::{Grid, Pos};
pub use keyboard::{KeyMode, Keyboard, KITTY_ALL};
use links::Links;
pub use links::{Link, MAX_LINKS, MAX_URI};
pub use reflow::CARRY_MAX;
use strings::Str;
pub use strings::OSC_MAX;
pub use sync::{Frozen, TIMEOUT as SYNC_TIMEOUT};

pub use crate::protocol::terminal::Colors;

use super::history::Lines;
use super::Effects;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MouseProtocolMode {
    #[default]
    None,
    Press,
    PressRelease,
    ButtonMotion,
    AnyMotion,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MouseProtocolEncoding {
    #[default]
    Default,
    Utf8,
    Sgr,
}

const APP_KEYPAD: u8 = 1;
const APP_CURSOR: u8 = 2;
const HIDE_CURSOR: u8 = 4;
const BRACKETED_PASTE: u8 = 8;

/// What a program drew: both screens, the cursor, the pen and the modes.
#[derive(Debug, Clone)]
pub struct Screen {
    primary: Grid,
    alternate: Grid,
    /// The alternate screen is shown.
    alt: bool,
    pen: Pen,
    /// `pen`, packed as cells keep it.
    ink: Ink,
    saved_pen: Pen,
    /// The hyperlinks cells and pens point to.
    links: Links,
    modes: u8,
    mouse_mode: MouseProtocolMode,
    mouse_encoding: MouseProtocolEncoding,
    last_char: Option<char>,
    /// A character dropped from a full cluster (see [`cluster::Spill`]).
    spill: Option<cluster::Spill>,
    /// The `seq` when the shown screen was switched.
    switched: u64,
}

impl Screen {
    fn new(rows: u16, cols: u16) -> Screen {
        let (rows, cols) = (rows.max(1), cols.max(1));
        Screen {
            primary: Grid::new(rows, cols),
            alternate: Grid::new(rows, cols),
            alt: false,
            pen: Pen::DEFAULT,
            ink: Ink::DEFAULT,
            saved_pen: Pen::DEFAULT,
            links: Links::default(),
            modes: 0,
            mouse_mode: MouseProtocolMode::None,
            mouse_encoding: MouseProtocolEncoding::Default,
            last_char: None,
            spill: None,
            switched: 0,
        }
    }

    fn grid(&self) -> &Grid {
        if self.alt {
            &self.alternate
        } else {
            &self.primary
        }
    }

    fn grid_mut(&mut self) -> &mut Grid {
        if self.alt {
            &mut self.alternate
        } else {
            &mut self.primary
        }
    }

    /// (rows, cols).
    pub fn size(&self) -> (u16, u16) {
        self.primary.size()
    }

    pub fn cell(&self, row: u16, col: u16) -> Option<&Cell> {
        self.grid().cell(row, col)
    }

    pub fn row(&self, row: u16) -> Option<&Row> {
        self.grid().row(row)
    }

    pub fn row_wrapped(&self, row: u16) -> bool {
        self.grid().row(row).is_some_and(Row::wrapped)
    }

    /// The primary screen's first row carries on the text of the last row of history.
    pub fn continues_history(&self) -> bool {
        self.primary.top_continues
    }

    /// (row, col); the column equals the width after a character was printed in the
    /// last column (the next one wraps).
    pub fn cursor_position(&self) -> (u16, u16) {
        let p = self.grid().pos;
        (p.row, p.col)
    }

    /// The shown screen's scroll region: its top and bottom rows.
    pub fn scroll_region(&self) -> (u16, u16) {
        self.grid().region()
    }

    /// Cursor positions count from the top of the scroll region (DECOM).
    pub fn origin_mode(&self) -> bool {
        self.grid().origin()
    }

    pub fn alternate_screen(&self) -> bool {
        self.alt
    }
    pub fn application_keypad(&self) -> bool {
        self.modes & APP_KEYPAD != 0
    }
    pub fn application_cursor(&self) -> bool {
        self.modes & APP_CURSOR != 0
    }
    pub fn hide_cursor(&self) -> bool {
        self.modes & HIDE_CURSOR != 0
    }
    pub fn bracketed_paste(&self) -> bool {
        self.modes & BRACKETED_PASTE != 0
    }
    pub fn mouse_protocol_mode(&self) -> MouseProtocolMode {
        self.mouse_mode
    }
    pub fn mouse_protocol_encoding(&self) -> MouseProtocolEncoding {
        self.mouse_encoding
    }
    pub fn pen(&self) -> Pen {
        self.pen
    }

    /// The hyperlink with this id (a cell's or a pen's `link`), if any.
    pub fn link(&self, id: u16) -> Option<&std::sync::Arc<Link>> {
        self.links.get(id)
    }

    /// OSC 8: what the pen draws from now on links to `link` (None: to nothing).
    fn set_link(&mut self, link: Option<Link>) {
        let id = link.and_then(|link| {
            let seq = self.primary.seq;
            let Screen {
                primary,
                alternate,
                pen,
                saved_pen,
                links,
                ..
            } = self;
            links.intern(link, seq, |used| {
                let mut mark = |id: u16| {
                    if let Some(u) = used.get_mut(usize::from(id)) {
                        *u = true;
                    }
                };
                mark(pen.link);
                mark(saved_pen.link);
                for row in primary.rows().chain(alternate.rows()) {
                    row.used_cells().iter().for_each(|c| mark(c.link()));
                }
            })
        });
        self.set_pen(Pen {
            link: id.unwrap_or(0),
            ..self.pen
        });
    }

    fn set_pen(&mut self, pen: Pen) {
        self.pen = pen;
        self.ink = pen.ink();
    }

    fn set_mode(&mut self, mode: u8, on: bool) {
        if on {
            self.modes |= mode;
        } else {
            self.modes &= !mode;
        }
    }

    /// The rows of the shown screen changed since `seq`, or None if they all may have.
    pub fn rows_changed_since(&self, seq: u64) -> Option<Vec<u16>> {
        let g = self.grid();
        if g.all_changed > seq || self.switched > seq {
            return None;
        }
        Some(
            g.rows()
                .enumerate()
                .filter(|(_, r)| r.changed > seq)
                .map(|(i, _)| i as u16)
                .collect(),
        )
    }

    /// RIS: everything as a new screen has it, in place (a program may reset 512 times in
    /// 1 KiB; new grids each time would be a megabyte of allocation per reset).
    fn reset(&mut self) {
        let seq = self.primary.seq;
        self.primary.clear();
        self.alternate.clear();
        self.alt = false;
        self.pen = Pen::DEFAULT;
        self.ink = Ink::DEFAULT;
        self.saved_pen = Pen::DEFAULT;
        self.links.clear();
        self.modes = 0;
        self.mouse_mode = MouseProtocolMode::None;
        self.mouse_encoding = MouseProtocolEncoding::Default;
        self.last_char = None;
        self.spill = None;
        self.stamp(seq);
        self.primary.all_changed = seq;
        self.switched = seq;
    }

    fn stamp(&mut self, seq: u64) {
        self.primary.seq = seq;
        self.alternate.seq = seq;
    }

    fn set_size(&mut self, rows: u16, cols: u16, dropped: &mut Lines) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        let mut scratch = Vec::new();
        let links = &self.links;
        self.primary.set_size(rows, cols, |row| {
            dropped.push_row(format::line(row, links, &mut scratch), row.wrapped)
        });
        self.alternate.set_size(rows, cols, |_| {});
    }

    fn enter_alternate(&mut self) {
        if !self.alt {
            self.alt = true;
            self.switched = self.primary.seq;
        }
    }

    fn exit_alternate(&mut self) {
        if self.alt {
            self.alt = false;
            self.switched = self.primary.seq;
        }
    }

    fn save_cursor(&mut self) {
        self.grid_mut().save_cursor();
        self.saved_pen = self.pen;
    }

    fn restore_cursor(&mut self) {
        self.grid_mut().restore_cursor();
        self.set_pen(self.saved_pen);
    }

    /// How wide `c` is drawn, or None if it is not drawn at all.
    fn width_of(&self, c: char) -> Option<u16> {
        let width = match c.width() {
            Some(w) => w as u16,
            None if u32::from(c) < 256 => return None,
            None => 1,
        }
        .min(2);
        let g = self.grid();
        if width > g.size().1 || (width == 0 && g.pos.col == 0) {
            return None;
        }
        Some(width)
    }
}

/// The shown grid and, for the primary screen, where its rows that scroll off go.
macro_rules! grid_and_keep {
    ($screen:expr, $dropped:expr, $scratch:expr, $g:ident, $keep:ident) => {
        let alt = $screen.alt;
        let $g = if alt {
            &mut $screen.alternate
        } else {
            &mut $screen.primary
        };
        let (dropped, scratch, links) = (&mut $dropped, &mut $scratch, &$screen.links);
        let mut push = |row: &$crate::term::vt::Row| {
            dropped.push_row(
                $crate::term::vt::format::line(row, links, scratch),
                row.wrapped,
            )
        };
        let $keep: Option<&mut dyn FnMut(&$crate::term::vt::Row)> =
            if alt { None } else { Some(&mut push) };
    };
}
pub(crate) use grid_and_keep;

/// The emulator proper: parser, screens, and what the program asked of its terminal.
///
/// Text between escape sequences is most of any output; while the parser is known to
/// stand in its ground state (fresh, or just after a control or escape sequence ended),
/// such text is taken here, without the parser, and runs of printable ASCII are written
/// to the row in one go. Control strings (OSC, DCS, …) are taken here too, with bounded
/// memory ([`strings`]): the parser is never given an ESC before the byte after it has
/// been seen, and is watched after one until it leaves that state, so it never enters
/// one. Everything else goes through the parser, which is told to stop as soon as it is
/// back in the ground state.
pub struct Terminal {
    parser: vte::Parser,
    /// The parser is in its ground state, holding no part of a character, and no string
    /// or ESC is in progress here.
    ground: bool,
    /// The control string in progress.
    string: Option<Str>,
    /// The text of the OSC in progress.
    osc: Vec<u8>,
    /// The output ended with an ESC, not yet given to the parser: the next byte tells
    /// whether it begins a string.
    held_esc: bool,
    /// The parser stands right after an ESC (and bytes that leave it there: controls, which
    /// it executes, and DEL and bytes above 0x7f, which it ignores): the next byte may
    /// still begin a string.
    in_escape: bool,
    /// The next this many bytes go to the parser one at a time: the last it was given
    /// ended inside a character (see `await_char`).
    bytewise: u8,
    /// The last place in the output being processed where `ground` held.
    ground_at: Option<usize>,
    state: State,
    /// Every byte through the parser (to test the fast path against).
    #[cfg(test)]
    parser_only: bool,
}

struct State {
    screen: Screen,
    /// Rows scrolled off the top of the primary screen, formatted, oldest first.
    dropped: Lines,
    /// Where a row is formatted before it is kept.
    scratch: Vec<u8>,
    title: String,
    effects: Effects,
    /// Kitty keyboard flags, modifyOtherKeys, focus reports.
    keyboard: Keyboard,
    /// The colours answered to OSC 10/11/12/4 queries.
    colors: std::sync::Arc<Colors>,
    /// Set when the parser ends a control or escape sequence, which leaves it in the
    /// ground state; and, if `await_char`, when it completes the character it held.
    stop: bool,
    /// The parser holds the start of a character cut off at the end of some output.
    await_char: bool,
    /// Synchronized output (mode 2026) and the screen drawn meanwhile.
    sync: sync::Sync,
}

impl Terminal {
    pub fn new(rows: u16, cols: u16) -> Terminal {
        Terminal {
            parser: vte::Parser::new(),
            ground: true,
            string: None,
            osc: Vec::new(),
            held_esc: false,
            in_escape: false,
            bytewise: 0,
            ground_at: None,
            state: State {
                screen: Screen::new(rows, cols),
                dropped: Lines::default(),
                scratch: Vec::new(),
                title: String::new(),
                effects: Effects::default(),
                keyboard: Keyboard::default(),
                colors: Default::default(),
                stop: false,
                await_char: false,
                sync: sync::Sync::default(),
            },
            #[cfg(test)]
            parser_only: false,
        }
    }

    /// Where in the output last processed the parser was last known in its ground state
    /// holding nothing (everything before was finished); None if nowhere in it.
    pub fn ground_from(&self) -> Option<usize> {
        #[cfg(test)]
        if self.parser_only {
            return None;
        }
        self.ground_at
    }

    pub fn screen(&self) -> &Screen {
        &self.state.screen
    }

    /// Resizes the screens (and the screen drawn during synchronized output, which is
    /// then labelled `seq`; the live ones are stamped `seq + 1` in that case: see
    /// [`Terminal::stamp`]).
    pub fn set_size(&mut self, rows: u16, cols: u16, seq: u64) {
        let seq = self.resize_frozen(rows, cols, seq);
        self.state.screen.stamp(seq);
        let State {
            screen, dropped, ..
        } = &mut self.state;
        screen.set_size(rows, cols, dropped);
    }

    /// Resizes the screen drawn during synchronized output, if there is one, labelling it
    /// `seq`; returns the stamp for the live screens (`seq + 1` if there was one).
    pub(super) fn resize_frozen(&mut self, rows: u16, cols: u16, seq: u64) -> u64 {
        match &mut self.state.sync.frozen {
            Some(f) => {
                f.screen.stamp(seq);
                f.screen.set_size(rows, cols, &mut Lines::default());
                f.seq = seq;
                seq.wrapping_add(1)
            }
            None => seq,
        }
    }

    /// The stamp of the last change: at least the `seq` last given, more when a copy of
    /// the screen was taken for synchronized output (the changes after it have the next).
    pub fn stamp(&self) -> u64 {
        self.state.screen.primary.seq
    }

    /// Synchronized output is on (mode 2026).
    pub fn synchronized(&self) -> bool {
        self.state.sync.on
    }

    /// The screen drawn while synchronized output is on; None when it is off, or the
    /// copy was given up (see [`Terminal::settle_sync`]).
    pub fn frozen(&self) -> Option<&Frozen> {
        self.state
            .sync
            .frozen
            .as_deref()
            .filter(|_| self.state.sync.on)
    }

    /// Gives up the copy of a frame that took longer than [`SYNC_TIMEOUT`] by `now`: the
    /// live screen is drawn from then on, until the mode is turned on anew.
    pub fn settle_sync(&mut self, now: std::time::Instant) {
        let late = self
            .frozen()
            .is_some_and(|f| now.saturating_duration_since(f.since) >= SYNC_TIMEOUT);
        if late {
            self.state.sync.frozen = None;
        }
    }

    /// The rows that scrolled off the primary screen, formatted, oldest first, until
    /// the caller clears them.
    pub fn dropped(&mut self) -> &mut Lines {
        &mut self.state.dropped
    }

    pub fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.state.effects)
    }

    pub fn title(&self) -> &str {
        &self.state.title
    }

    pub fn set_title(&mut self, title: String) {
        self.state.title = title;
    }

    /// Marks whether the primary screen's first row carries on the last row of history
    /// (an emulator rebuilt from an image, whose history says so).
    pub fn set_continues_history(&mut self, on: bool) {
        self.state.screen.primary.top_continues = on;
    }

    /// Effects taken before they could be returned, given back to be returned later.
    pub fn restore_effects(&mut self, effects: Effects) {
        self.state.effects = effects;
    }

    /// What the program asked of the keyboard.
    pub fn keyboard(&self) -> &Keyboard {
        &self.state.keyboard
    }

    /// How keys are to be encoded for the program, on the screen shown now.
    pub fn key_mode(&self) -> KeyMode {
        let screen = &self.state.screen;
        KeyMode {
            kitty: self.state.keyboard.kitty(screen.alt),
            modify_other_keys: self.state.keyboard.modify_other_keys(),
            app_cursor: screen.application_cursor(),
        }
    }

    pub fn colors(&self) -> std::sync::Arc<Colors> {
        self.state.colors.clone()
    }

    /// The colours colour queries are answered with (the user's terminal's, when known).
    pub fn set_colors(&mut self, colors: std::sync::Arc<Colors>) {
        self.state.colors = colors;
    }

    /// Looks at the primary screen, also while the alternate one is shown.
    pub fn with_primary<T>(&mut self, f: impl FnOnce(&Screen) -> T) -> T {
        let alt = std::mem::replace(&mut self.state.screen.alt, false);
        let out = f(&self.state.screen);
        self.state.screen.alt = alt;
        out
    }
}

impl State {
    /// What the parser does with text in its ground state: controls (C0 and C1) are
    /// executed, everything else printed; a run of printable ASCII is written at once.
    fn ground_text(&mut self, text: &str) {
        use vte::Perform as _;
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if (0x20..0x7f).contains(&bytes[i]) {
                let run = bytes[i..]
                    .iter()
                    .position(|b| !(0x20..0x7f).contains(b))
                    .unwrap_or(bytes.len() - i);
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
    fn plain_sgr(&mut self, bytes: &[u8]) -> Option<usize> {
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
    fn ascii_run(&mut self, run: &[u8]) -> usize {
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
        if start > 0 && r.cells[start - 1].is_wide() {
            return 0;
        }
        let room = usize::from(cols).min(r.cells.len()).saturating_sub(start);
        let n = r.cells[start..start + room.min(run.len())]
            .iter()
            .position(Cell::is_wide)
            .unwrap_or(room.min(run.len()));
        for (cell, &b) in r.cells_mut(start, start + n).iter_mut().zip(run) {
            cell.set_ascii(b, pen);
        }
        g.pos.col += n as u16;
        if let Some(&last) = run[..n].last() {
            screen.last_char = Some(char::from(last));
        }
        n
    }

    /// Draws `c` at the cursor, wrapping and scrolling as needed.
    #[inline]
    fn text(&mut self, c: char) {
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
    fn text_slow(&mut self, c: char) {
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
    fn extend_cluster(&mut self, mut base: Pos, c: char) {
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
            if next < r.cells.len() && r.cells[next].is_wide_continuation() {
                let ink = r.cells[next].ink();
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
    fn cluster_base(&self) -> Option<Pos> {
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
    fn spilled(&self, at: Pos) -> Option<cluster::Spill> {
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
    if col > 0 && r.cells[col - 1].is_wide() {
        let p = r.cells[col - 1].ink();
        r.cells[col - 1].clear(p);
    }
    let n = r.cells.len();
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
