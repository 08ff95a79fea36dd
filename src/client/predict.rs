//! Predictive local echo over a slow link (mosh's model). A printable key typed at the
//! end of a line — a shell's or an agent's prompt — is shown at once, underlined, where
//! the host's echo will put it; the host's frame then confirms it (it draws the same
//! character there) or contradicts it (another character, the cursor gone elsewhere, or
//! nothing within a few round trips: a password prompt, a program that took the key). A
//! contradiction takes back every character shown ahead and nothing more is shown until
//! an echo is seen again; so does every key that is not plain text (Enter, a control key,
//! the prefix, an arrow): the keys after it are shown only once the host echoed one.
//!
//! The client keeps its own copy of the screen the host drew (herdr's emulator, fed every
//! byte the host sent) and guesses only into blank cells of it, on the cursor's row,
//! never into the last column. It never changes the host's frames: before they are drawn
//! the cursor goes back where the host left it; after them the characters still ahead are
//! drawn again (a frame may have erased them) and the cursor put after them.
//!
//! Pure: each call answers with the bytes to write, and the caller writes them.

use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::term::vt;

/// `[remote] predict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Shown when a round trip takes over AUTO_ABOVE.
    Auto,
    Always,
    Never,
}

impl Policy {
    pub fn from_config(word: &str) -> Policy {
        match word {
            "always" => Policy::Always,
            "never" => Policy::Never,
            _ => Policy::Auto,
        }
    }
}

/// Below this round trip the host's echo comes as fast as the eye: `auto` shows nothing.
const AUTO_ABOVE: Duration = Duration::from_millis(30);
/// A guess still not echoed after this many round trips, and never sooner than
/// EXPIRE_MIN, was wrong (a busy host may echo late: taking a guess back only to have the
/// echo draw it again would flicker).
const EXPIRE_RTTS: u32 = 4;
const EXPIRE_MIN: Duration = Duration::from_millis(1500);

/// A key, as prediction sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typed {
    /// Plain text, one character.
    Char(char),
    Backspace,
    /// The arrows that move along the line.
    Left,
    Right,
    /// Anything else: Enter, a control key, another arrow, a mouse report, a paste.
    Other,
}

/// A character typed and not yet echoed, where the echo is expected.
#[derive(Debug)]
struct Guess {
    row: u16,
    col: u16,
    ch: char,
    at: Instant,
    /// Drawn on the terminal (the guesses of an untrusted run are only watched).
    shown: bool,
    /// The run it was typed in: only an echo of the current run earns trust (the echo of
    /// a command typed before Enter says nothing of the password prompt after it).
    epoch: u64,
    /// Its place in the order of typing (after Left, not the order on the row).
    n: u64,
}

pub struct Predictor {
    policy: Policy,
    /// What the host drew, as the terminal shows it but for the guesses.
    screen: vt::Terminal,
    fed: u64,
    /// Oldest first.
    guesses: Vec<Guess>,
    /// How many of the last guesses were typed since the last key that was not text.
    run: usize,
    /// How many guesses of the run are right of the cursor (Left moved it back over
    /// them: what is typed then goes in between, as a shell's line editor does).
    back: usize,
    /// An echo was seen since the last key that was not text: guesses are shown.
    trusted: bool,
    /// Counts the keys that were not text (each starts a new epoch).
    epoch: u64,
    /// Counts the guesses made.
    made: u64,
    /// The terminal's cursor is not where the host left it (guesses were drawn).
    moved: bool,
}

impl Predictor {
    pub fn new(policy: Policy, (cols, rows): (u16, u16)) -> Predictor {
        Predictor {
            policy,
            screen: vt::Terminal::new(rows.max(1), cols.max(1)),
            fed: 0,
            guesses: Vec::new(),
            run: 0,
            back: 0,
            trusted: false,
            epoch: 0,
            made: 0,
            moved: false,
        }
    }

    /// The terminal has this size: if it changed, every guess is dropped (the host's
    /// next frame is a full one, which erases them).
    pub fn fit(&mut self, (cols, rows): (u16, u16)) {
        let (have_rows, have_cols) = self.screen.screen().size();
        if (have_cols, have_rows) == (cols.max(1), rows.max(1)) {
            return;
        }
        self.guesses.clear();
        self.end_run();
        self.moved = false;
        self.fed += 1;
        self.screen.set_size(rows.max(1), cols.max(1), self.fed);
    }

    /// The link is gone: the guesses shown are taken back (the terminal shows only what
    /// the host drew, as a link that comes back expects).
    pub fn forget(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.take_back(&mut out);
        self.trusted = false;
        self.settle_cursor(&mut out);
        out
    }

    /// A key was typed (and sent): what to draw now.
    pub fn typed(&mut self, key: Typed, now: Instant, rtt: Option<Duration>) -> Vec<u8> {
        let mut out = Vec::new();
        if self.policy == Policy::Never {
            return out;
        }
        match key {
            Typed::Char(ch) => match self.next_cell(ch) {
                Some((row, col)) => {
                    let shown = self.trusted && self.shows(rtt);
                    // (Typed with guesses right of the cursor: they move one cell right.)
                    let at = self.guesses.len().saturating_sub(self.back);
                    for g in &mut self.guesses[at..] {
                        g.col += 1;
                    }
                    self.guesses.insert(
                        at,
                        Guess {
                            row,
                            col,
                            ch,
                            at: now,
                            shown,
                            epoch: self.epoch,
                            n: self.made,
                        },
                    );
                    self.made += 1;
                    self.run += 1;
                    if shown {
                        self.draw_guesses(&mut out);
                    }
                }
                None => self.end_run(),
            },
            Typed::Backspace if self.run > self.back && self.run_shown() => {
                // The guess left of the cursor goes; those right of it move one cell left
                // and the row's last cell is blank again.
                let at = self.guesses.len() - self.back - 1;
                let end = self.guesses.last().map(|g| (g.row, g.col));
                let gone = self.guesses.remove(at);
                self.run -= 1;
                for g in &mut self.guesses[at..] {
                    g.col -= 1;
                }
                if let Some((row, col)) = end.filter(|_| gone.shown) {
                    self.draw_blank_at(row, col, &mut out);
                    self.draw_guesses(&mut out);
                    if self.run == 0 {
                        cup(&mut out, gone.row, gone.col);
                    }
                }
            }
            Typed::Left if self.back < self.run && self.run_shown() => {
                self.back += 1;
                self.draw_guesses(&mut out);
            }
            Typed::Right if self.back > 0 => {
                self.back -= 1;
                self.draw_guesses(&mut out);
            }
            Typed::Backspace | Typed::Left | Typed::Right | Typed::Other => self.end_run(),
        }
        out
    }

    /// Every guess of the run is shown (so they can be moved among).
    fn run_shown(&self) -> bool {
        let from = self.guesses.len() - self.run;
        self.guesses[from..].iter().all(|g| g.shown)
    }

    /// The host's bytes are about to be drawn: the cursor goes back where it left it.
    pub fn before_output(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if std::mem::take(&mut self.moved) {
            let (row, col) = self.screen.screen().cursor_position();
            cup(&mut out, row, col);
        }
        out
    }

    /// The host's bytes were drawn: each guess is confirmed, contradicted or left
    /// waiting, and those still waiting are drawn again.
    pub fn after_output(&mut self, bytes: &[u8], now: Instant, rtt: Option<Duration>) -> Vec<u8> {
        self.fed += 1;
        self.screen.process(bytes, self.fed);
        self.judge(now, rtt)
    }

    /// Time passed: guesses not echoed in time are taken back.
    pub fn tick(&mut self, now: Instant, rtt: Option<Duration>) -> Vec<u8> {
        self.judge(now, rtt)
    }

    /// When a guess expires, if one waits.
    pub fn deadline(&self, rtt: Option<Duration>) -> Option<Instant> {
        // (The oldest by time: after Left, a later guess may come first in the row.)
        let oldest = self.guesses.iter().map(|g| g.at).min()?;
        Some(oldest + expiry(rtt))
    }

    fn shows(&self, rtt: Option<Duration>) -> bool {
        match self.policy {
            Policy::Always => true,
            Policy::Never => false,
            Policy::Auto => rtt.is_some_and(|r| r > AUTO_ABOVE),
        }
    }

    fn end_run(&mut self) {
        self.run = 0;
        self.back = 0;
        self.trusted = false;
        self.epoch += 1;
    }

    /// Where a character typed now lands: after the last guess of this run, else at the
    /// host's cursor; only a blank cell that is not the row's last, for a character one
    /// cell wide.
    fn next_cell(&self, ch: char) -> Option<(u16, u16)> {
        if ch.is_control() || unicode_width::UnicodeWidthChar::width(ch) != Some(1) {
            return None;
        }
        let screen = self.screen.screen();
        // Where it goes, and the cell the run grows into (the same, at the run's end).
        let ((row, col), end) = match self.guesses.last().filter(|_| self.run > 0) {
            Some(last) => {
                let end = last.col + 1;
                match self.back {
                    0 => ((last.row, end), end),
                    back => {
                        let g = &self.guesses[self.guesses.len() - back];
                        ((g.row, g.col), end)
                    }
                }
            }
            None if screen.hide_cursor() => return None,
            None => {
                let (row, col) = screen.cursor_position();
                ((row, col), col)
            }
        };
        let (_, cols) = screen.size();
        let blank = screen.cell(row, end).is_some_and(|c| !c.has_contents());
        (end + 1 < cols && blank).then_some((row, col))
    }

    fn judge(&mut self, now: Instant, rtt: Option<Duration>) -> Vec<u8> {
        let mut out = Vec::new();
        let expire = expiry(rtt);
        let screen = self.screen.screen();
        let (crow, ccol) = screen.cursor_position();
        let epoch = self.epoch;
        let there = |g: &Guess| screen.cell(g.row, g.col).map_or("", |c| c.contents());
        let is_echo = |g: &Guess| {
            let t = there(g);
            t.starts_with(g.ch) && t.chars().count() == 1
        };
        // Only the oldest guess not echoed yet may be found contradicted (the ones typed
        // after it wait for it: after Left, the echo of a key typed before may still be
        // on its way and land where a later one was guessed); any may be late.
        let oldest = self
            .guesses
            .iter()
            .filter(|g| !is_echo(g))
            .map(|g| g.n)
            .min();
        let mut echoed = false;
        let mut wrong = false;
        let mut blanks = Vec::new();
        let right_from = self.guesses.len().saturating_sub(self.back);
        let mut kept = Vec::with_capacity(self.guesses.len());
        let mut gone_right = 0;
        // Guesses of this run taken away (echoed or not): a run's count never includes
        // what was typed before it (before an Enter, whose echoes may still come).
        let mut gone = 0;
        for (i, g) in std::mem::take(&mut self.guesses).into_iter().enumerate() {
            let keep = if is_echo(&g) {
                echoed |= g.epoch == epoch;
                false
            } else {
                // Something else there (the frame drew it), the cursor moved off the row
                // or past the guess, or no echo in time: wrong, and a blank cell is taken
                // back.
                let passed = crow != g.row || ccol > g.col;
                let late = now.saturating_duration_since(g.at) > expire;
                let judged = Some(g.n) == oldest && (!there(&g).is_empty() || passed);
                if judged || late {
                    wrong = true;
                    if there(&g).is_empty() && g.shown {
                        blanks.push((g.row, g.col));
                    }
                }
                !(judged || late)
            };
            if keep {
                kept.push(g);
            } else {
                gone += usize::from(g.epoch == epoch);
                if i >= right_from {
                    gone_right += 1;
                }
            }
        }
        self.guesses = kept;
        self.run = self.run.saturating_sub(gone);
        self.back = self.back.saturating_sub(gone_right).min(self.run);
        if echoed {
            self.trusted = true;
        }
        if wrong {
            for (row, col) in blanks {
                self.draw_blank_at(row, col, &mut out);
            }
            // What is left of the guesses goes too: the host does not echo as guessed.
            self.take_back(&mut out);
            self.end_run();
        }
        self.draw_guesses(&mut out);
        self.settle_cursor(&mut out);
        out
    }

    /// With no guess shown, the cursor goes back where the host left it.
    fn settle_cursor(&mut self, out: &mut Vec<u8>) {
        if self.moved && !self.guesses.iter().any(|g| g.shown) {
            out.extend(self.before_output());
        }
    }

    /// Takes back every guess (blank cells drawn where they were shown).
    fn take_back(&mut self, out: &mut Vec<u8>) {
        for g in std::mem::take(&mut self.guesses) {
            if g.shown {
                self.draw_blank(&g, out);
            }
        }
        self.run = 0;
        self.back = 0;
    }

    fn draw_blank(&mut self, g: &Guess, out: &mut Vec<u8>) {
        self.draw_blank_at(g.row, g.col, out);
    }

    /// Draws the cell at (row, col) blank, in the pen the host left there.
    fn draw_blank_at(&mut self, row: u16, col: u16, out: &mut Vec<u8>) {
        if let Some(cell) = self.screen.screen().cell(row, col) {
            cup(out, row, col);
            vt::draw_in_pen_of(cell, " ", false, out);
            self.moved = true;
        }
    }

    /// Draws the guesses shown, underlined, and puts the cursor after the last one (or
    /// where Left took it).
    fn draw_guesses(&mut self, out: &mut Vec<u8>) {
        let screen = self.screen.screen();
        let mut last = None;
        for g in self.guesses.iter().filter(|g| g.shown) {
            if let Some(cell) = screen.cell(g.row, g.col) {
                cup(out, g.row, g.col);
                let mut buf = [0u8; 4];
                vt::draw_in_pen_of(cell, g.ch.encode_utf8(&mut buf), true, out);
                last = Some((g.row, g.col + 1));
            }
        }
        let back = self.guesses.len().checked_sub(self.back);
        let cursor = match back.and_then(|i| self.guesses.get(i)) {
            Some(g) if self.back > 0 => Some((g.row, g.col)),
            _ => last,
        };
        if let Some((row, col)) = cursor {
            cup(out, row, col);
            self.moved = true;
        }
    }
}

fn expiry(rtt: Option<Duration>) -> Duration {
    rtt.map_or(EXPIRE_MIN, |r| (r * EXPIRE_RTTS).max(EXPIRE_MIN))
}

/// Moves the cursor to (row, col), both from 0.
fn cup(out: &mut Vec<u8>, row: u16, col: u16) {
    let _ = write!(out, "\x1b[{};{}H", u32::from(row) + 1, u32::from(col) + 1);
}

#[cfg(test)]
mod tests;
