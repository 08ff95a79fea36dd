//! Working or waiting for the user, for any agent, from what the kernel and the terminal
//! show — no screen rules, nothing that changes with an agent's release.
//!
//! The server takes a [`Reading`] of a pane now and then (the bytes its programs wrote so
//! far, the bells and desktop notifications among them, and the processes of the pane's
//! session from /proc); a [`Sampler`] turns two readings into a [`Sample`] (what happened
//! between them), and a [`Classifier`] decides from the last few samples. The signals:
//!
//! - output: Claude Code and Codex animate a spinner or a timer while they work (every
//!   50–1000 ms) and draw nothing while they wait for the user;
//! - CPU: a tool the agent runs (a build, a test) burns it in the pane's session even
//!   when nothing is printed, and an agent streaming an answer uses it: CPU that drops
//!   as the output stops is the end of the work;
//! - input: its echo is not work, and a single key (Enter) answered by more than an
//!   echo is work at once;
//! - a bell or a notification (BEL, OSC 9, OSC 777): the agent says it wants the user.
//!
//! Invariant: everything here is pure (no clock, no I/O) and bounded: a classifier keeps
//! at most `WINDOW` samples, a sampler one reading.

use std::collections::{BTreeMap, VecDeque};

/// One process of a pane's session, as /proc showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    /// The state letter of `/proc/PID/stat` (`R` running, `S` asleep, `D` in the disk…).
    pub state: u8,
    /// CPU time used so far, in clock ticks: its own and that of its reaped children
    /// (utime + stime + cutime + cstime), so a child that lived between two readings
    /// still counts.
    pub ticks: u64,
}

/// What a pane showed at one moment: totals since it started, and its processes now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// When, in milliseconds on any clock that only goes forwards.
    pub at_ms: u64,
    /// Bytes its programs wrote, all told.
    pub written: u64,
    /// Bells and desktop notifications (BEL, OSC 9, OSC 777), all told.
    pub bells: u64,
    /// Bytes of input given to its program (typed, pasted), all told.
    pub typed: u64,
    /// The processes of its session (its shell and everything started from it that did not
    /// leave the session).
    pub procs: Vec<Proc>,
}

/// What happened in a pane between two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Milliseconds since the reading before.
    pub dt: u32,
    /// Bytes written in that time.
    pub out: u32,
    /// Bells and notifications in that time.
    pub bells: u32,
    /// CPU ticks (10 ms each) the session's processes used in that time.
    pub cpu: u32,
    /// Processes of the session running (`R`) or in uninterruptible sleep (`D`) now.
    pub run: u32,
    /// Bytes of input given to the program in that time.
    pub typed: u32,
}

/// Turns readings into samples. The CPU of a process first seen in this reading is all
/// counted (it started since the last one), except in the first reading, which is only a
/// base; the CPU of one gone since is taken off again, as it reappears in its parent's
/// (the children's time of the process that reaped it), where it would count twice.
#[derive(Debug, Default)]
pub struct Sampler {
    last: Option<(Reading, BTreeMap<i32, u64>)>,
}

impl Sampler {
    /// A process's ticks at the last reading (0 for one not there).
    fn ticks_before(&self, pid: i32) -> u64 {
        (self.last.as_ref())
            .and_then(|(_, old)| old.get(&pid).copied())
            .unwrap_or(0)
    }

    /// The sample since the previous reading; none for the first.
    pub fn sample(&mut self, r: &Reading) -> Option<Sample> {
        let ticks: BTreeMap<i32, u64> = r.procs.iter().map(|p| (p.pid, p.ticks)).collect();
        let totals = Reading {
            procs: Vec::new(),
            ..*r
        };
        let grown: u64 = (ticks.iter())
            .map(|(pid, t)| t.saturating_sub(self.ticks_before(*pid)))
            .sum();
        let gone: u64 = (self.last.iter().flat_map(|(_, old)| old.iter()))
            .filter(|(pid, _)| !ticks.contains_key(pid))
            .map(|(_, t)| *t)
            .sum();
        let cpu = grown.saturating_sub(gone);
        let (last, _) = self.last.replace((totals, ticks))?;
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Some(Sample {
            dt: narrow(r.at_ms.saturating_sub(last.at_ms)),
            out: narrow(r.written.wrapping_sub(last.written)),
            bells: narrow(r.bells.wrapping_sub(last.bells)),
            cpu: narrow(cpu),
            run: narrow(
                r.procs
                    .iter()
                    .filter(|p| matches!(p.state, b'R' | b'D'))
                    .count() as u64,
            ),
            typed: narrow(r.typed.wrapping_sub(last.typed)),
        })
    }
}

/// What the classifier makes of a pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Working,
    /// Waiting for the user; `notified` once the agent rang or sent a notification since
    /// it stopped working (not taken for a prompt: agents ring when a turn ends too).
    Waiting {
        notified: bool,
    },
}

/// Samples kept: enough for the longest look back (`OUTPUT_HOLD_MS`, `CPU_WINDOW_MS`).
const WINDOW: usize = 16;
/// Output this recent means work: the agents' animations draw a frame every 250 ms or
/// sooner while they work, with a gap of one sample now and then (measured on the
/// corpus). Shorter would take such a gap for the end of the work; longer reports work
/// for longer after it ended. (Output and CPU that stop together end it sooner:
/// `stopped`.)
pub const OUTPUT_HOLD_MS: u64 = 500;
/// Output in a single sample (a redraw: a focus change, a key echoed, Codex's pulse at
/// its approval prompt) does not start work; output in this many samples within
/// `OUTPUT_HOLD_MS` does.
const OUTPUT_SAMPLES: usize = 2;
/// CPU use over this long is looked at, so one busy tick is not work.
const CPU_WINDOW_MS: u64 = 750;
/// The share of a core (percent) the session must use over `CPU_WINDOW_MS` to be at
/// work. Claude Code's own drawing takes up to 30 % while the user types (measured on
/// the corpus); a build or a test takes a whole core.
const CPU_BUSY_PERCENT: u64 = 45;
/// Over this share of a core (percent) in a sample, a program works hard at what it
/// draws: Claude Code streaming an answer uses 25–50 %; its spinner alone, while an
/// answer is slow to come, 4–20 % (measured on the corpus).
const WORKING_CPU_PERCENT: u64 = 25;
/// Under this share of a core (percent) in a sample, a program is at rest: waiting for
/// the user, the agents use 0–8 % in nearly every sample (measured on the corpus). CPU
/// that drops from `WORKING_CPU_PERCENT` to this in the sample where the output stops
/// is the end of the work, at once (`stopped`); output that stops otherwise waits
/// `OUTPUT_HOLD_MS` for more (a spinner skipping a frame while its agent waits for a
/// slow answer uses little CPU before and after).
const REST_CPU_PERCENT: u64 = 15;
/// The samples before a final screen that must each have drawn, less than half of it
/// (the frames of an animation: `final_screen`).
const STEADY_SAMPLES: usize = 2;
/// Milliseconds of CPU in one clock tick (`CLK_TCK` is 100 on Linux).
const TICK_MS: u64 = 10;

/// The last samples of one pane and what was decided from them.
#[derive(Debug)]
pub struct Classifier {
    window: VecDeque<Sample>,
    verdict: Verdict,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier {
            window: VecDeque::with_capacity(WINDOW),
            verdict: Verdict::Waiting { notified: false },
        }
    }
}

impl Classifier {
    /// Takes the next sample and says what the pane is doing now.
    pub fn push(&mut self, s: Sample) -> Verdict {
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(s);
        self.verdict = decide(self.window.make_contiguous(), self.verdict);
        self.verdict
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }
}

/// The samples of the last `ms` milliseconds, newest last (the newest always).
fn recent(window: &[Sample], ms: u64) -> &[Sample] {
    let mut spent = 0u64;
    let mut from = window.len();
    while from > 0 {
        spent += u64::from(window[from - 1].dt);
        from -= 1;
        if spent >= ms {
            break;
        }
    }
    &window[from..]
}

/// Output right after input of at most this many bytes is the echo of what was typed
/// (the agent redrawing its input box: 100–250 bytes a key for both agents), not work.
const ECHO_BYTES: u32 = 400;

/// A single key is at most this many bytes (Enter, or Esc in the kitty keyboard
/// protocol's encoding)...
const KEY_BYTES: u32 = 8;
/// ...and output of at least this many bytes in the sample that holds it is the
/// program's answer to it (a new screen: Enter sent a prompt and the agent drew its
/// spinner), not an echo.
const KEY_ANSWER_BYTES: u32 = 1000;

/// Whether the output of a sample answers a single key (see `KEY_ANSWER_BYTES`).
fn answers_key(s: &Sample) -> bool {
    single_key(s) && s.out >= KEY_ANSWER_BYTES
}

/// Whether a single key was given in a sample (see `KEY_BYTES`).
fn single_key(s: &Sample) -> bool {
    s.typed > 0 && s.typed <= KEY_BYTES
}

/// Whether the newest sample is the program's answer to a key, which starts work at
/// once: a new screen in the sample of the key (`answers_key`), or, in the sample right
/// after a key, with no more input, more than any echo draws (`ECHO_BYTES`): Enter sent
/// a prompt and the agent drew its spinner, the answer to a permission prompt came.
fn answer_to_key(window: &[Sample]) -> bool {
    let [.., before, newest] = window else {
        return window.last().is_some_and(answers_key);
    };
    answers_key(newest) || (newest.typed == 0 && single_key(before) && newest.out > ECHO_BYTES)
}

/// A sample's CPU, in percent of a core.
fn cpu_percent(s: &Sample) -> u64 {
    u64::from(s.cpu) * TICK_MS * 100 / u64::from(s.dt).max(1)
}

/// Whether the newest sample says the work is over: nothing was drawn or typed in it, and
/// either the CPU dropped with the output, from `WORKING_CPU_PERCENT` in the sample
/// before to under `REST_CPU_PERCENT`; or nothing in the session ran at all (not one
/// tick) right after a `final_screen`; or all there was before it was the answer to a
/// key (a redraw: Esc took a prompt away). Otherwise a sample without output may be an
/// animation skipping a frame, and `OUTPUT_HOLD_MS` decides.
fn stopped(window: &[Sample]) -> bool {
    let [earlier @ .., before, newest] = window else {
        return false;
    };
    if newest.out > 0 || newest.typed > 0 {
        return false;
    }
    let dropped =
        cpu_percent(before) >= WORKING_CPU_PERCENT && cpu_percent(newest) < REST_CPU_PERCENT;
    let at_rest = newest.cpu == 0 && final_screen(earlier, before);
    dropped || at_rest || answer_to_key(&window[..window.len() - 1])
}

/// Whether `last` looks like a program's last screen of a piece of work: it drew in each
/// of the `STEADY_SAMPLES` before it, as an animation does (one that draws less often
/// than a sample skips some), and `last` drew at least twice what each of them did: more
/// than another frame (Codex puts its answer into its history as its working line goes).
/// Its work may have run outside the pane's session (Codex's runs in its shared server),
/// so no drop of the CPU tells the end there.
fn final_screen(earlier: &[Sample], last: &Sample) -> bool {
    earlier.len() >= STEADY_SAMPLES
        && earlier[earlier.len() - STEADY_SAMPLES..]
            .iter()
            .all(|s| s.out > 0 && 2 * s.out <= last.out)
}

/// Whether the output of `window[i]` is the program's own: not the echo of input given
/// in that sample, or a small output right after input.
fn own_output(window: &[Sample], i: usize) -> bool {
    let s = window[i];
    if s.out == 0 {
        return false;
    }
    if s.typed > 0 {
        return answers_key(&s);
    }
    let echo_before = i > 0 && window[i - 1].typed > 0 && !answers_key(&window[i - 1]);
    !(echo_before && s.out <= ECHO_BYTES)
}

/// The rules, over the samples newest last. Working: `CPU_BUSY_PERCENT` of a core over
/// the last `CPU_WINDOW_MS`; or the answer to a key (`answer_to_key`); or output of its
/// own (not the echo of typing) in `OUTPUT_SAMPLES` samples of the last `OUTPUT_HOLD_MS`.
/// While already working, any output of its own in the last `OUTPUT_HOLD_MS` keeps it —
/// unless the newest sample says it `stopped`: output and CPU stopped together, or all
/// there was is the answer to a key. A bell or a notification in the newest sample ends
/// work at once (the agent rang because it waits), unless the CPU says otherwise.
/// Otherwise waiting.
pub fn decide(window: &[Sample], before: Verdict) -> Verdict {
    let Some(newest) = window.last() else {
        return before;
    };
    let span = recent(window, CPU_WINDOW_MS);
    let cpu_ms: u64 = span.iter().map(|s| u64::from(s.cpu) * TICK_MS).sum();
    let wall_ms: u64 = span.iter().map(|s| u64::from(s.dt)).sum();
    // Over the whole window even while fewer samples are in: one busy moment is not work.
    let busy_cpu = cpu_ms * 100 >= CPU_BUSY_PERCENT * wall_ms.max(CPU_WINDOW_MS);
    let waiting = Verdict::Waiting {
        notified: matches!(before, Verdict::Waiting { notified: true }),
    };
    if newest.bells > 0 && !busy_cpu {
        return Verdict::Waiting { notified: true };
    }
    if busy_cpu {
        return Verdict::Working;
    }
    if before == Verdict::Working && stopped(window) {
        return waiting;
    }
    // Output up to a bell was the agent saying it is done.
    let from = window.len() - recent(window, OUTPUT_HOLD_MS).len();
    let since_bell = (window[from..].iter())
        .rposition(|s| s.bells > 0)
        .map_or(from, |i| from + i + 1);
    let printed = (since_bell..window.len())
        .filter(|i| own_output(window, *i))
        .count();
    let needed = if before == Verdict::Working {
        1
    } else {
        OUTPUT_SAMPLES
    };
    if printed >= needed || answer_to_key(window) {
        return Verdict::Working;
    }
    waiting
}

#[cfg(test)]
mod tests;
