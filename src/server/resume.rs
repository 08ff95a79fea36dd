//! Picking up where a client's link left off. Each frame sent to a client that takes
//! numbered frames gets the next number, and each row of its screen remembers the number
//! of the last frame that changed it. A client that comes back over a new connection (its
//! link dropped: a new Wi-Fi, a lid closed) names its token and the last frame it drew;
//! every row not changed since is still right on its screen, so only the others are sent
//! — not a full repaint, which on a slow link is the difference between one small frame
//! and seconds of drawing.
//!
//! Invariant: `changed_at[y] <= seq` for every row, and a frame numbered at or below
//! `full_at` is unknown (a full repaint, or a size change, came after it). Memory is
//! bounded: one number per row per client, and at most PARKED frames of clients whose
//! connection ended, each for PARK_FOR at most.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::render::diff::Frame;

/// How long a client whose connection ended may come back to its screen, and how many
/// such screens are kept at once (the oldest goes first).
const PARK_FOR: Duration = Duration::from_secs(15 * 60);
const PARKED: usize = 8;

/// Whether a token a client brings back can be one this server made (hex, as long as
/// `handoff::token` makes them): anything else gets a new one.
pub(crate) fn plausible_token(token: &str) -> bool {
    token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The numbers of a client's frames and of the rows they changed.
#[derive(Debug)]
pub(crate) struct FrameLog {
    /// Names the attachment; a client comes back with it.
    pub(crate) token: String,
    /// The number of the last frame sent.
    seq: u64,
    /// The number of the last frame drawn whole: what came before it is no base.
    full_at: u64,
    /// Per row: the number of the last frame that changed it.
    changed_at: Vec<u64>,
}

impl FrameLog {
    pub(crate) fn new(token: String) -> FrameLog {
        FrameLog {
            token,
            seq: 0,
            full_at: 0,
            changed_at: Vec::new(),
        }
    }

    /// A log for a client that came back naming frame `drawn` of an attachment this
    /// server cannot take up (parked too long, another size, another server): its
    /// numbers go on from there, so no number the client may still hold is ever taken
    /// for one of these frames (none of them is a base until the next full frame).
    pub(crate) fn after(token: String, drawn: u64) -> FrameLog {
        FrameLog {
            token,
            seq: drawn,
            full_at: drawn.saturating_add(1),
            changed_at: Vec::new(),
        }
    }

    /// The number the next frame gets.
    pub(crate) fn next(&self) -> u64 {
        self.seq + 1
    }

    /// A frame was sent that changed the rows flagged in `rows` (all of them, as a new
    /// base, when `full`); its number.
    pub(crate) fn sent(&mut self, rows: &[bool], full: bool) -> u64 {
        self.seq += 1;
        if full || rows.len() != self.changed_at.len() {
            self.full_at = self.seq;
            self.changed_at = vec![self.seq; rows.len()];
        } else {
            for (at, changed) in self.changed_at.iter_mut().zip(rows) {
                if *changed {
                    *at = self.seq;
                }
            }
        }
        self.seq
    }

    /// The rows a client that drew frame `drawn` does not have right; None when nothing
    /// of its screen can be trusted (a frame before the last full one, or one never sent).
    pub(crate) fn unknown_since(&self, drawn: u64) -> Option<Vec<bool>> {
        if drawn < self.full_at || drawn > self.seq || self.full_at == 0 || self.full_at > self.seq
        {
            return None;
        }
        Some(self.changed_at.iter().map(|at| *at > drawn).collect())
    }
}

/// A client's screen as it was sent, kept for it to come back to.
pub(crate) struct Parked {
    pub(crate) log: FrameLog,
    pub(crate) frame: Frame,
    at: Instant,
}

/// The screens of clients whose connection ended.
#[derive(Default)]
pub(crate) struct Parking {
    parked: VecDeque<Parked>,
}

impl Parking {
    pub(crate) fn park(&mut self, log: FrameLog, frame: Frame, now: Instant) {
        self.expire(now);
        if self.parked.len() >= PARKED {
            self.parked.pop_front();
        }
        self.parked.push_back(Parked {
            log,
            frame,
            at: now,
        });
    }

    /// The screen parked under `token`, if it is still there.
    pub(crate) fn take(&mut self, token: &str, now: Instant) -> Option<Parked> {
        self.expire(now);
        let i = self
            .parked
            .iter()
            .position(|p| crate::server::handoff::same_token(&p.log.token, token))?;
        self.parked.remove(i)
    }

    fn expire(&mut self, now: Instant) {
        self.parked
            .retain(|p| now.saturating_duration_since(p.at) < PARK_FOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_told_only_the_rows_changed_after_its_frame() {
        let mut log = FrameLog::new("t".into());
        assert_eq!(log.unknown_since(0), None, "nothing sent yet");
        assert_eq!(log.sent(&[true; 4], true), 1);
        assert_eq!(log.sent(&[false, true, false, false], false), 2);
        assert_eq!(log.sent(&[false, false, false, true], false), 3);
        assert_eq!(log.unknown_since(3), Some(vec![false; 4]));
        assert_eq!(log.unknown_since(2), Some(vec![false, false, false, true]));
        assert_eq!(log.unknown_since(1), Some(vec![false, true, false, true]));
        assert_eq!(log.unknown_since(0), None, "before the first full frame");
        assert_eq!(log.unknown_since(4), None, "never sent");
        // A full frame (or another size) is a new base.
        log.sent(&[true; 5], false);
        assert_eq!(log.unknown_since(3), None);
        assert_eq!(log.unknown_since(4), Some(vec![false; 5]));
        // A client back with frame 7 of an attachment that could not be taken up: no
        // number up to 7, nor any before the next full frame, is a base.
        let mut log = FrameLog::after("t".into(), 7);
        assert_eq!(log.unknown_since(7), None);
        assert_eq!(log.sent(&[true; 4], true), 8);
        assert_eq!(log.unknown_since(7), None);
        assert_eq!(log.unknown_since(8), Some(vec![false; 4]));
    }

    #[test]
    fn parked_screens_are_few_and_do_not_stay_for_ever() {
        let t0 = Instant::now();
        let mut parking = Parking::default();
        for i in 0..PARKED + 2 {
            parking.park(FrameLog::new(format!("c{i}")), Frame::new(2, 2), t0);
        }
        assert!(parking.take("c0", t0).is_none(), "the oldest went first");
        assert!(parking.take("c2", t0).is_some());
        assert!(parking.take("c2", t0).is_none(), "taken once");
        assert!(parking.take("c3", t0 + PARK_FOR).is_none(), "expired");
        assert!(parking.parked.is_empty());
    }
}
