//! Synchronized output (mode 2026): a program brackets a repaint with `CSI ? 2026 h` …
//! `CSI ? 2026 l` so that nobody sees it half drawn.
//!
//! When the mode is turned on, the shown screen is copied as it is (the last state the
//! program finished: it has not begun the new frame yet); while the mode is on, that copy
//! is what is drawn. The copy is dropped when the mode ends (the finished frame is drawn
//! then), on RIS, or once it is [`TIMEOUT`] old, so a program that never ends the mode
//! cannot freeze its pane.
//!
//! Cost: one copy of the shown grid per `process` call at most (a second `h` in the same
//! call keeps the copy taken at the first, an older finished state), so a flood of
//! `h`/`l` pairs costs a copy per piece of output, never per pair; one copy per terminal.
//! The copy's memory is kept for the next frame until the terminal is idle
//! ([`State::drop_spare`]): a program that paints 60 frames a second copies into the same
//! rows each time instead of allocating and freeing a screen's worth per frame.
//!
//! Change sequences: the copy is labelled with the sequence number of the call that took
//! it, and what the live screens change after it in that call is stamped with the next
//! number, so "the rows changed since N" holds for the copy and the live screen alike.

use std::time::{Duration, Instant};

use super::grid::Grid;
use super::{Screen, State};

/// How long a frame may take to finish before what is drawn so far is shown (terminals
/// that implement the mode wait about as long).
pub const TIMEOUT: Duration = Duration::from_millis(150);

/// The screen drawn while synchronized output is on.
#[derive(Debug, Clone)]
pub struct Frozen {
    pub screen: Screen,
    /// The sequence number of the call that took the copy.
    pub seq: u64,
    /// When the mode was turned on (last).
    pub since: Instant,
    /// The screen is an exact copy of the shown one as it stood at this sequence number
    /// (not once it was resized), so the next copy made in it need only copy the rows
    /// changed since.
    copy_of: Option<u64>,
}

/// The mode and its copy.
#[derive(Debug, Default)]
pub(super) struct Sync {
    pub on: bool,
    pub frozen: Option<Box<Frozen>>,
    /// A copy was taken during the call in progress.
    pub taken: bool,
    /// The last copy, no longer shown: its memory is reused for the next one.
    spare: Option<Box<Frozen>>,
}

impl Frozen {
    /// The copy was laid out at another size: no longer a copy of the shown screen.
    pub(super) fn resized(&mut self) {
        self.copy_of = None;
    }
}

impl Sync {
    /// At the start of each call: a copy kept from the last one after the mode ended goes.
    pub fn begin_call(&mut self) {
        self.taken = false;
        if !self.on && self.frozen.is_some() {
            self.spare = self.frozen.take();
        }
    }
}

impl State {
    /// Frees the memory kept for the next frame's copy (when the terminal is idle).
    pub(super) fn drop_spare(&mut self) {
        self.sync.spare = None;
    }

    pub(super) fn set_sync(&mut self, on: bool) {
        let sync = &mut self.sync;
        if on == sync.on {
            return;
        }
        sync.on = on;
        if !on {
            // The frame the copy showed until now (it did not time out, or it would be
            // gone): rows the program drew again as they were are not changed.
            if let Some(f) = &sync.frozen {
                self.screen.keep_unchanged_rows(&f.screen, f.seq);
            }
            if !sync.taken {
                sync.spare = sync.frozen.take();
            }
            return;
        }
        let now = Instant::now();
        match &mut sync.frozen {
            // Already copied in this call: that finished state stands.
            Some(f) if sync.taken => f.since = now,
            _ => {
                let seq = self.screen.primary.seq;
                let frozen = match sync.spare.take() {
                    Some(mut f) => {
                        self.screen.copy_shown_into(&mut f.screen, f.copy_of);
                        (f.seq, f.since, f.copy_of) = (seq, now, Some(seq));
                        f
                    }
                    None => Box::new(Frozen {
                        screen: self.screen.shown_copy(),
                        seq,
                        since: now,
                        copy_of: Some(seq),
                    }),
                };
                sync.frozen = Some(frozen);
                sync.taken = true;
                self.screen.stamp(seq.wrapping_add(1));
            }
        }
    }
}

impl Screen {
    /// See [`Grid::keep_unchanged_rows`]: for the shown screen, against `before` (a
    /// [`Screen::shown_copy`] taken at `at`), while the same screen is shown.
    fn keep_unchanged_rows(&mut self, before: &Screen, at: u64) {
        if self.switched > at {
            return;
        }
        self.grid_mut().keep_unchanged_rows(&before.primary, at);
    }

    /// The shown screen alone, as a screen of its own (drawn, not written to).
    fn shown_copy(&self) -> Screen {
        let mut copy = Screen::new(1, 1);
        self.copy_shown_into(&mut copy, None);
        copy
    }

    /// [`Screen::shown_copy`] made in `into`, reusing the room of its rows; `since`: `into`
    /// is a copy of this screen as it stood then (see [`Grid::copy_from`]).
    fn copy_shown_into(&self, into: &mut Screen, since: Option<u64>) {
        let since = since.filter(|&at| self.switched <= at);
        let mut primary = std::mem::replace(&mut into.primary, Grid::unmade(1, 1));
        primary.copy_from(self.grid(), since);
        *into = Screen {
            primary,
            alternate: Grid::unmade(1, 1),
            alt: false,
            pen: self.pen,
            ink: self.ink,
            saved_pen: self.saved_pen,
            modes: self.modes,
            mouse_mode: self.mouse_mode,
            mouse_encoding: self.mouse_encoding,
            last_char: self.last_char,
            spill: None,
            switched: self.switched,
            // (The links its cells point to; the live table may reclaim ids meanwhile.)
            links: self.links.clone(),
        };
    }
}
