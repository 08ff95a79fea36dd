//! Predictive echo wired into the client: one [`Predictor`] shared by the thread that
//! reads keys (a key sent is shown at once) and the one that draws the host's frames (each
//! confirms or takes back what was shown), with the round trip the pings measure. Every
//! write to the terminal that involves a guess happens under the predictor's lock, so a
//! frame and a guess never interleave.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::keepalive::{self, SharedWatch};
use super::predict::{Policy, Predictor, Typed};
use crate::input::{Key, KeyCode, Token};

#[derive(Clone)]
pub(super) struct Echo {
    predictor: Arc<Mutex<Predictor>>,
    watched: SharedWatch,
}

impl Echo {
    /// Prediction for a remote link, unless `[remote] predict = "never"`.
    pub(super) fn new(watched: SharedWatch, size: (u16, u16)) -> Option<Echo> {
        let policy = Policy::from_config(&crate::config::current().remote_predict);
        (policy != Policy::Never).then(|| Echo {
            predictor: Arc::new(Mutex::new(Predictor::new(policy, size))),
            watched,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Predictor> {
        self.predictor.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keys that were just sent: what is guessed of them is drawn.
    pub(super) fn typed(&self, tokens: &[Token]) {
        let rtt = keepalive::rtt(&self.watched);
        let now = Instant::now();
        let mut p = self.lock();
        let mut out = Vec::new();
        for t in tokens {
            for typed in classify(t) {
                out.extend(p.typed(typed, now, rtt));
            }
        }
        write(&out);
    }

    /// Draws the host's output, the guesses around it; false if the terminal cannot be
    /// written.
    pub(super) fn output(&self, bytes: &[u8]) -> bool {
        let rtt = keepalive::rtt(&self.watched);
        let mut p = self.lock();
        // (A frame after a resize is drawn at the new size: the copy takes it first.)
        p.fit(super::terminal_size());
        let before = p.before_output();
        let after = p.after_output(bytes, Instant::now(), rtt);
        // (The frame itself is not copied: the three go out in one flush.)
        let mut stdout = std::io::stdout().lock();
        [&before[..], bytes, &after[..]]
            .iter()
            .try_for_each(|part| stdout.write_all(part))
            .and_then(|_| stdout.flush())
            .is_ok()
    }

    /// When the oldest guess is due to be judged.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.lock().deadline(keepalive::rtt(&self.watched))
    }

    /// Time passed: guesses not echoed in time are taken back.
    pub(super) fn tick(&self) {
        let rtt = keepalive::rtt(&self.watched);
        let mut p = self.lock();
        write(&p.tick(Instant::now(), rtt));
    }

    /// The link is gone: what was guessed is taken back.
    pub(super) fn forget(&self) {
        let mut p = self.lock();
        write(&p.forget());
    }
}

fn write(bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|_| stdout.flush()).is_ok()
}

/// What a token of input is to prediction: plain text, a backspace, or anything else;
/// focus changes and kitty reports that are no press (releases) are nothing.
fn classify(t: &Token) -> Vec<Typed> {
    match t {
        Token::Text(text) => text.chars().map(Typed::Char).collect(),
        Token::Key { key, .. } => vec![match key.code {
            KeyCode::Char(c) if *key == Key::plain(KeyCode::Char(c)) => Typed::Char(c),
            KeyCode::Backspace if *key == Key::plain(KeyCode::Backspace) => Typed::Backspace,
            KeyCode::Left if *key == Key::plain(KeyCode::Left) => Typed::Left,
            KeyCode::Right if *key == Key::plain(KeyCode::Right) => Typed::Right,
            _ => Typed::Other,
        }],
        Token::Focus(_) | Token::Report(_) => Vec::new(),
        Token::Mouse(_) | Token::Paste { .. } | Token::Unknown(_) => vec![Typed::Other],
    }
}
