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
mod row;
mod strings;
mod sync;
#[cfg(test)]
pub(crate) mod tests;
mod text;

use unicode_width::UnicodeWidthChar as _;

pub use cell::{Cell, Color, Ink, Pen, Underline};
pub use format::draw_in_pen_of;
use grid::Grid;
pub use grid::Row;
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
            alternate: Grid::unmade(rows, cols),
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
            self.alternate.make();
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
    parser: Parser,
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

/// `vte`'s parser, made when output first needs it and given back while the terminal
/// waits in its ground state (`release_spare`): 432 bytes, its room for a sequence's
/// parameters, that an idle pane need not keep.
#[derive(Default)]
struct Parser(Option<Box<vte::Parser>>);

impl Parser {
    fn get(&mut self) -> &mut vte::Parser {
        self.0.get_or_insert_with(Default::default)
    }

    /// Back to a fresh parser (kept, if made).
    fn reset(&mut self) {
        if let Some(parser) = &mut self.0 {
            **parser = vte::Parser::new();
        }
    }
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
            parser: Parser::default(),
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
                f.resized();
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

    /// Gives back memory kept only to make the next output faster (the terminal is idle).
    pub fn release_spare(&mut self) {
        self.state.drop_spare();
        if self.ground {
            // It holds nothing: the next output starts with a fresh one either way.
            self.parser.0 = None;
        }
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

    /// What the terminal answers `bytes` with (the effects' responses, taken).
    #[cfg(test)]
    pub(crate) fn replies_to(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.process(bytes, 1);
        self.take_effects().responses
    }

    /// Looks at the primary screen, also while the alternate one is shown.
    pub fn with_primary<T>(&mut self, f: impl FnOnce(&Screen) -> T) -> T {
        let alt = std::mem::replace(&mut self.state.screen.alt, false);
        let out = f(&self.state.screen);
        self.state.screen.alt = alt;
        out
    }
}
