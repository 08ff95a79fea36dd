//! The terminal emulator of one pane: herdr's own emulator ([`vt`]) plus what a pane
//! keeps around it — the compact history of lines scrolled off, the view scrolled back
//! into it, and where the output stands between escape sequences (for handoff images).
//!
//! Invariant: `process` never blocks and never panics on any byte sequence; everything the
//! terminal must say back to the program is returned, never written from here.

pub(crate) mod history;
mod image;
mod mirror;
pub mod vt;

pub use mirror::{MirrorPos, MIRROR_MAX};

pub use history::Lines;
pub use image::{Image, ImageError};

/// Output is taken in slices of this many bytes; the rows a slice scrolled off the screen
/// are moved to the compact history after it.
const SLICE: usize = 64 << 10;

/// Side effects of feeding bytes, for the pane's I/O actor to carry out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Bytes the terminal answers to the program (written back into the PTY).
    pub responses: Vec<u8>,
    /// Complete OSC 52 sequences to forward to the attached clients.
    pub clipboard: Vec<Vec<u8>>,
    pub bell: bool,
    /// A desktop notification was asked for (OSC 9 with a message, OSC 777 `notify`).
    pub notification: bool,
    pub title_changed: bool,
}

pub struct Emulator {
    term: vt::Terminal,
    /// Bumped on every `process`; lets renderers skip unchanged panes.
    seq: u64,
    /// Bytes the program wrote, all told (a resize or a scroll changes nothing here).
    written: u64,
    /// Bells and notifications the program sent, all told (one per `process` at most).
    bells: u64,
    /// Where the output stands between escape sequences (for [`Emulator::image`]).
    tracker: image::Tracker,
    /// Lines scrolled off the top of the primary screen, oldest first.
    history: history::History,
    /// How many lines back into history the view is scrolled (0 = live).
    offset: usize,
    /// The screen shown while scrolled back, rebuilt when the offset or content changes;
    /// dropped back at the live view. (Boxed: a terminal of its own, 1.1 KiB before its
    /// rows, that most panes never have.)
    view: Option<Box<View>>,
    /// The `seq` when what is shown changed as a whole (the view was scrolled).
    everything: u64,
    /// The program's bytes kept for a mirror (`mirror`), while one is kept.
    tap: Option<mirror::Tap>,
    /// Queries are answered (not in a mirror).
    answers: bool,
}

struct View {
    seq: u64,
    offset: usize,
    term: vt::Terminal,
}

impl Emulator {
    pub fn new(rows: u16, cols: u16, scrollback: usize) -> Emulator {
        Emulator {
            term: vt::Terminal::new(rows.max(1), cols.max(1)),
            seq: 0,
            written: 0,
            bells: 0,
            tracker: Default::default(),
            history: history::History::new(scrollback),
            offset: 0,
            view: None,
            everything: 0,
            tap: None,
            answers: true,
        }
    }

    pub fn process(&mut self, bytes: &[u8]) -> Effects {
        self.seq = self.seq.wrapping_add(1);
        if let Some(tap) = &mut self.tap {
            tap.keep(bytes);
        }
        for slice in bytes.chunks(SLICE) {
            let fed = self.feed(slice);
            // A copy of the screen for synchronized output moves the stamp on.
            self.seq = self.seq.max(self.term.stamp());
            if !fed {
                break;
            }
            #[cfg(test)]
            let mut whole = self.tracker.clone();
            match self.term.ground_from() {
                // Up to there everything is finished: the tracker need not look at it.
                Some(from) => {
                    self.tracker.reset();
                    self.tracker.feed(&slice[from..]);
                }
                None => self.tracker.feed(slice),
            }
            #[cfg(test)]
            {
                whole.feed(slice);
                assert_eq!(whole, self.tracker, "after {slice:?}");
            }
            self.drain();
        }
        self.written = self.written.wrapping_add(bytes.len() as u64);
        let mut effects = self.term.take_effects();
        if !self.answers {
            effects.responses.clear();
        }
        if effects.bell || effects.notification {
            self.bells = self.bells.wrapping_add(1);
        }
        effects
    }

    /// Feeds the emulator; false if it panicked, which is a bug, but must not take the
    /// pane with it: the emulator is rebuilt from an image of itself, and the rest of
    /// `bytes` is lost.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        use std::panic::{catch_unwind, AssertUnwindSafe};
        let seq = self.seq;
        if catch_unwind(AssertUnwindSafe(|| self.term.process(bytes, seq))).is_ok() {
            return true;
        }
        crate::log::error!(
            "term",
            "the emulator failed on a program's output; it was rebuilt from its screen"
        );
        let effects = self.term.take_effects();
        let (rows, cols) = self.size();
        let cap = self.history.capacity();
        let rebuilt = catch_unwind(AssertUnwindSafe(|| {
            let mut image = self.image();
            Emulator::from_image(&mut image, cap)
        }));
        let mut fresh = rebuilt.unwrap_or_else(|_| {
            let mut e = Emulator::new(rows, cols, cap);
            std::mem::swap(&mut e.history, &mut self.history);
            e
        });
        fresh.seq = self.seq;
        fresh.written = self.written;
        fresh.bells = self.bells;
        fresh.everything = self.seq;
        fresh.term.restore_effects(effects);
        fresh.term.set_colors(self.term.colors());
        fresh.tap = self.tap.take();
        fresh.answers = self.answers;
        *self = fresh;
        false
    }

    /// The screen rows changed since `seq` (an earlier [`Emulator::seq`]) in the live
    /// screen; None when that may be any of them.
    pub fn rows_changed_since(&self, seq: u64) -> Option<Vec<u16>> {
        if self.everything > seq {
            return None;
        }
        self.shown().rows_changed_since(seq)
    }

    /// The screen to show when not scrolled back: the live one, or while the program
    /// holds synchronized output on, the one it last finished.
    pub fn shown(&self) -> &vt::Screen {
        match self.term.frozen() {
            Some(f) => &f.screen,
            None => self.term.screen(),
        }
    }

    /// The sequence number of what [`Emulator::display`] shows: [`Emulator::seq`], or
    /// that of the finished frame shown during synchronized output (each number stands
    /// for one content; the rows changed since it are those stamped later).
    pub fn display_seq(&self) -> u64 {
        match self.term.frozen() {
            Some(f) if self.offset == 0 => f.seq,
            _ => self.seq,
        }
    }

    /// When the frame in progress under synchronized output will be shown as it stands,
    /// if it has not ended by then.
    pub fn sync_deadline(&self) -> Option<std::time::Instant> {
        self.term.frozen().map(|f| f.since + vt::SYNC_TIMEOUT)
    }

    /// Shows the live screen if the frame in progress is late by `now` (see
    /// [`Emulator::sync_deadline`]); called before drawing.
    pub fn settle_sync(&mut self, now: std::time::Instant) {
        self.term.settle_sync(now);
    }

    /// The program has been quiet a while: memory kept only to make its next output
    /// faster is given back.
    pub fn idle(&mut self) {
        self.term.release_spare();
    }

    /// Synchronized output (mode 2026) is on.
    pub fn synchronized(&self) -> bool {
        self.term.synchronized()
    }

    /// How many bytes the program has written so far (to tell its output from redraws).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// How many times the program rang or asked for a notification so far (an agent that
    /// wants its user does).
    pub fn bells(&self) -> u64 {
        self.bells
    }

    /// Moves the rows that scrolled off the screen to the compact history.
    fn drain(&mut self) {
        let dropped = self.term.dropped();
        for (line, wrapped) in dropped.rows() {
            self.history.push_row(line, wrapped);
        }
        dropped.clear();
    }

    /// The live screen (what the program sees and queries).
    pub fn screen(&self) -> &vt::Screen {
        self.term.screen()
    }

    /// The screen to draw: the live one (or, during synchronized output, the frame last
    /// finished), or the scrolled-back view of history.
    pub fn display(&mut self) -> &vt::Screen {
        if self.offset == 0 {
            return self.shown();
        }
        let seq = self.display_seq();
        let fresh = matches!(&self.view, Some(v) if v.seq == seq && v.offset == self.offset);
        if !fresh {
            self.view = Some(Box::new(self.build_view()));
        }
        match &self.view {
            Some(v) => v.term.screen(),
            None => self.shown(),
        }
    }

    /// The view scrolled back `offset` rows: the rows from there on, those of one line
    /// (kept at whatever width) run on into each other, laid out at the pane's width.
    fn build_view(&self) -> View {
        let (rows, cols) = self.size();
        let h = self.history.len();
        let top = h - self.offset.min(h);
        // Spare rows below the view keep a row's overflow from scrolling it. (Bytes over
        // columns is an upper bound of the rows one can take.)
        let spare = self
            .history
            .rows_from(top)
            .take(usize::from(rows))
            .map(|(l, _)| l.len().div_ceil(usize::from(cols.max(1))))
            .max()
            .unwrap_or(0)
            .min(64) as u16;
        let mut term = vt::Terminal::new(rows.saturating_add(spare), cols);
        let mut joined = false;
        // Fed a row at a time until the view is full: a line taller than the view costs
        // no more than the view.
        for (part, wrapped) in self.rows_down(top, true) {
            if term.screen().cursor_position().0 >= rows {
                break;
            }
            if !joined && term.screen().cursor_position() != (0, 0) {
                if term.screen().cursor_position().0 + 1 >= rows {
                    break;
                }
                term.process(b"\r\n", 0);
            }
            term.process(b"\x1b[0m", 0);
            term.process(part.as_bytes(), 0);
            joined = wrapped;
        }
        term.process(b"\x1b[0m\x1b[?25l", 0);
        View {
            seq: self.display_seq(),
            offset: self.offset,
            term,
        }
    }

    /// The last history row runs on into the screen's first row (which is the primary
    /// screen's, and shown).
    fn history_joins_screen(&self) -> bool {
        let screen = self.term.screen();
        screen.continues_history() && !screen.alternate_screen()
    }

    /// A history row, formatted (`ansi`) or plain (a wrapped one keeps its last blanks).
    fn history_text(line: &str, wrapped: bool, ansi: bool) -> String {
        match (ansi, wrapped) {
            (true, _) => line.to_string(),
            (false, true) => history::plain_untrimmed(line),
            (false, false) => history::plain(line),
        }
    }

    /// A row of the shown screen, formatted (`ansi`) or plain, and whether it is wrapped.
    fn screen_text(&self, row: u16, ansi: bool) -> (String, bool) {
        let screen = self.term.screen();
        let wrapped = screen.row_wrapped(row);
        let text = if ansi {
            screen.line(row)
        } else {
            screen.row_plain(row, !wrapped)
        };
        (text, wrapped)
    }

    /// Rows from row `from` (counted from the top of history; the screen follows it) down
    /// to the screen's last, each with whether its text runs on into the next.
    fn rows_down(&self, from: usize, ansi: bool) -> impl Iterator<Item = (String, bool)> + '_ {
        let h = self.history.len();
        let joins_screen = self.history_joins_screen();
        let rows = self.size().0;
        let history = self
            .history
            .rows_from(from)
            .enumerate()
            .map(move |(k, (line, wrapped))| {
                let wrapped = wrapped && (from + k + 1 < h || joins_screen);
                (Self::history_text(line, wrapped, ansi), wrapped)
            });
        let first = u16::try_from(from.saturating_sub(h)).unwrap_or(u16::MAX);
        history.chain((first..rows).map(move |r| self.screen_text(r, ansi)))
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// How keys are to be encoded for the program (kitty flags, modifyOtherKeys, cursor
    /// key mode of the screen shown).
    pub fn key_mode(&self) -> vt::KeyMode {
        self.term.key_mode()
    }

    /// The program asked to be told when its pane gains or loses focus (mode 1004).
    pub fn focus_events(&self) -> bool {
        self.term.keyboard().focus_events()
    }

    /// The colours colour queries are answered with.
    pub fn set_colors(&mut self, colors: std::sync::Arc<vt::Colors>) {
        self.term.set_colors(colors);
    }

    pub fn title(&self) -> &str {
        self.term.title()
    }

    pub fn size(&self) -> (u16, u16) {
        self.term.screen().size()
    }

    /// Resizes the screens. At a new width the primary screen's lines are laid out again
    /// (with the start of its first line, if that is in history), so nothing is cut.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let (old_rows, old_cols) = self.size();
        if (old_rows, old_cols) == (rows.max(1), cols.max(1)) {
            return;
        }
        self.seq = self.seq.wrapping_add(1);
        if old_cols == cols.max(1) {
            self.term.set_size(rows, cols, self.seq);
        } else {
            self.drain();
            let mut carried = Vec::new();
            if self.term.screen().continues_history() {
                while carried.len() < vt::CARRY_MAX && self.history.wrapped_last() {
                    match self.history.pop() {
                        Some((line, _)) => carried.push(line),
                        None => break,
                    }
                }
                carried.reverse();
            }
            self.term.reflow(rows, cols, self.seq, &carried);
        }
        // (A frame shown during synchronized output is labelled `seq`, the live screens
        // after it.)
        self.seq = self.seq.max(self.term.stamp());
        // A shorter screen (or longer lines) pushes rows into history.
        self.drain();
    }

    /// Scrolls the view back `rows` lines into history (0 = live view); clamped. The
    /// alternate screen (full-screen programs) has no history to scroll into.
    pub fn set_scrollback(&mut self, rows: usize) {
        let max = if self.term.screen().alternate_screen() {
            0
        } else {
            self.history.len()
        };
        self.offset = rows.min(max);
        if self.offset == 0 {
            // Back at the live view: the scrolled-back screen and its rows go.
            self.view = None;
        }
        self.seq = self.seq.wrapping_add(1);
        self.everything = self.seq;
    }

    pub fn scrollback(&self) -> usize {
        self.offset
    }

    /// The last `n` lines of history and screen, oldest first: the program's lines, the
    /// rows of a wrapped one joined (whatever widths they were drawn at). Trailing blank
    /// rows of the screen are left out. `ansi` keeps colours and attributes as SGR. At
    /// most `4 n` rows (and no fewer than `n + 256`) are read back: a line longer than
    /// that is cut at its start.
    pub fn last_lines(&self, n: usize, ansi: bool) -> Vec<String> {
        let (rows, cols) = self.size();
        let screen = self.term.screen();
        let plain = self.screen_plain(cols);
        let mut end = usize::from(rows);
        while end > 0
            && plain[end - 1].trim().is_empty()
            && !(end >= 2 && screen.row_wrapped((end - 2) as u16))
        {
            end -= 1;
        }
        let joins_screen = self.history_joins_screen();
        // Newest first, each row with whether it runs on into the one after it.
        let screen_rows = (0..end as u16).rev().map(|r| self.screen_text(r, ansi));
        let history_rows = self
            .history
            .rows_rev()
            .enumerate()
            .map(move |(k, (line, wrapped))| {
                let wrapped = wrapped && (k > 0 || joins_screen);
                (Self::history_text(line, wrapped, ansi), wrapped)
            });
        let budget = n.saturating_mul(4).max(n.saturating_add(256));
        let mut newest_first = screen_rows.chain(history_rows).take(budget).peekable();
        let mut lines = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        while lines.len() < n {
            let Some((text, _)) = newest_first.next() else {
                break;
            };
            parts.push(text);
            if newest_first.peek().is_some_and(|(_, wrapped)| *wrapped) {
                continue;
            }
            let mut line = String::new();
            for (k, part) in parts.drain(..).rev().enumerate() {
                if ansi && k > 0 {
                    line.push_str("\x1b[0m");
                }
                line.push_str(&part);
            }
            if !ansi {
                line.truncate(line.trim_end().len());
            }
            lines.push(line);
        }
        lines.reverse();
        lines
    }

    /// The lines between two positions counted back from the bottom row of the screen
    /// (0 = bottom row), both included, oldest first, as plain text.
    pub fn lines_back(&self, from: usize, to: usize) -> Vec<String> {
        let last = self.history_len() + usize::from(self.size().0) - 1;
        let (older, newer) = (from.max(to), from.min(to));
        match last.checked_sub(newer) {
            Some(end) => self.lines(last.saturating_sub(older), end + 1, false),
            None => Vec::new(),
        }
    }

    /// Lines `start..end`, numbered from the top of history (the screen follows it).
    fn lines(&self, start: usize, end: usize, ansi: bool) -> Vec<String> {
        let h = self.history.len();
        let cols = self.size().1;
        let screen = self.term.screen();
        let plain = (!ansi && end > h).then(|| self.screen_plain(cols));
        (start..end)
            .map(|i| match self.history.get(i) {
                Some(line) if ansi => line.to_string(),
                Some(line) => history::plain(line),
                None if ansi => screen.line((i - h) as u16),
                None => plain
                    .as_ref()
                    .and_then(|p| p.get(i - h).cloned())
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The screen's rows as plain text, trailing blanks trimmed.
    fn screen_plain(&self, cols: u16) -> Vec<String> {
        self.term
            .screen()
            .rows(0, cols)
            .map(|r| r.trim_end().to_string())
            .collect()
    }

    /// How many history lines exist above the live screen.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The history rows copy mode reads above the screen: none over the alternate screen
    /// (a full-screen program's view has no history, as `set_scrollback` says).
    pub fn text_history(&self) -> usize {
        if self.term.screen().alternate_screen() {
            0
        } else {
            self.history.len()
        }
    }

    /// Rows of history and screen together: what copy mode moves over.
    pub fn text_len(&self) -> usize {
        self.text_history() + usize::from(self.size().0)
    }

    /// Row `i` of history and screen together (see [`Emulator::text_len`]), as plain
    /// text with its trailing blanks trimmed.
    pub fn text_row(&self, i: usize) -> String {
        let h = self.text_history();
        if i < h {
            return self.history.get(i).map(history::plain).unwrap_or_default();
        }
        u16::try_from(i - h)
            .map(|r| self.term.screen().row_plain(r, true))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod reflow_tests;

#[cfg(test)]
mod tests;
