//! The state of an agent that has neither hooks nor screen rules, from the signals the
//! kernel and the terminal give (`agent::activity`): its pane's output, bells and
//! notifications, and the CPU and run states of the processes in its session. An agent
//! with screen rules and no hooks is sampled too: its samples keep it from going idle
//! while the rules see nothing busy but it still works.
//!
//! Bounded per turn: all the panes due are read in one pass over /proc (one stat read
//! per process on the machine), at most every `FAST` while one of them works or just
//! printed, every `SLOW` while all of them wait, and never while no pane needs it. A
//! pane keeps one reading and `activity::WINDOW` samples.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{now, ApiError, ApiResult};
use crate::agent::activity::{Classifier, Proc, Reading, Sampler, Verdict};
use crate::model::ids::TerminalId;
use crate::protocol::api::PaneTarget;
use crate::pty::proc;
use crate::server::Server;

/// How often a pane that works (or printed since it was last read) is read: as often as
/// the agents animate, so work is seen to start and end within a sample or two.
const FAST: Duration = Duration::from_millis(250);
/// How often a pane that waits is read: work that starts without output (a build run
/// quietly) is seen within this; output makes the next read come at `FAST`
/// (`Server::sampling_output`).
const SLOW: Duration = Duration::from_secs(1);

/// One sampled pane.
#[derive(Default)]
struct Watched {
    sampler: Sampler,
    classifier: Classifier,
    /// When it was last read (none before the first reading).
    read_at: Option<Instant>,
    /// It printed since it was last read.
    printed: bool,
    /// Bytes it wrote redrawing itself after a resize, all told: not work, taken off
    /// what it wrote.
    redrawn: u64,
}

/// The sampled panes and when the next pass is due.
#[derive(Default)]
pub(crate) struct Sampling {
    panes: BTreeMap<TerminalId, Watched>,
    /// The clock readings are stamped against.
    epoch: Option<Instant>,
}

impl Watched {
    /// When this pane is due to be read again (now, for one never read).
    fn due(&self) -> Instant {
        let Some(at) = self.read_at else {
            return Instant::now();
        };
        let fast = self.printed || self.classifier.verdict() == Verdict::Working;
        at + if fast { FAST } else { SLOW }
    }
}

impl Server {
    /// Whether a terminal is sampled: an agent is detected whose hooks do not report.
    fn sampled(&self, tid: TerminalId) -> bool {
        (self.session.state.terminals.get(&tid)).is_some_and(|t| !t.hooked && t.agent.is_some())
    }

    /// Whether its samples decide its state: neither hooks nor screen rules say what it
    /// does. (Under screen rules, they only keep a pane the rules no longer see busy
    /// from going idle while it still works: `sampled_working`.)
    fn decided_by_samples(&self, tid: TerminalId) -> bool {
        self.sampled(tid)
            && (self.session.state.terminals.get(&tid))
                .and_then(|t| t.agent.as_ref())
                .is_some_and(|a| !self.agents.activity.rules.contains_key(a))
    }

    /// Whether a sampled terminal's samples say it works now.
    pub(crate) fn sampled_working(&self, tid: TerminalId) -> bool {
        (self.agents.sampling.panes.get(&tid))
            .is_some_and(|w| w.classifier.verdict() == Verdict::Working)
    }

    /// Output in a terminal (`redrawn` bytes of it a redraw after a resize): a sampled
    /// one is read soon; one that became sampled (its agent was just detected) starts
    /// being read; one that no longer is, is let go.
    pub(crate) fn sampling_output(&mut self, tid: TerminalId, redrawn: u64) {
        if !self.sampled(tid) {
            self.forget_sampling(tid);
            return;
        }
        let w = self.agents.sampling.panes.entry(tid).or_default();
        w.redrawn = w.redrawn.wrapping_add(redrawn);
        w.printed |= redrawn == 0;
    }

    pub(crate) fn forget_sampling(&mut self, tid: TerminalId) {
        self.agents.sampling.panes.remove(&tid);
    }

    /// When the next pass is due.
    pub(crate) fn sampling_deadline(&self) -> Option<Instant> {
        self.agents.sampling.panes.values().map(Watched::due).min()
    }

    /// Reads the panes due, in one pass over /proc, and applies their verdicts.
    pub(crate) fn sampling_tick(&mut self, now: Instant) {
        let gone: Vec<TerminalId> = (self.agents.sampling.panes.keys().copied())
            .filter(|t| !self.sampled(*t))
            .collect();
        for tid in gone {
            self.forget_sampling(tid);
        }
        // A pane due within half a fast period is read with the others, a little early:
        // the panes read together stay together, so there is one pass for all of them
        // (not one per pane, at times of their own), and no sample is shorter than that.
        let soon = now + FAST / 2;
        let due: Vec<TerminalId> = (self.agents.sampling.panes.iter())
            .filter(|(_, w)| w.due() <= soon)
            .map(|(t, _)| *t)
            .collect();
        if due.is_empty() {
            return;
        }
        let leaders: BTreeSet<i32> = (due.iter())
            .filter_map(|t| self.session.runtimes.get(*t)?.pid)
            .map(|p| p as i32)
            .collect();
        let mut by_session: BTreeMap<i32, Vec<Proc>> = BTreeMap::new();
        for p in proc::sessions(&leaders) {
            by_session.entry(p.session).or_default().push(Proc {
                pid: p.pid,
                state: p.state,
                ticks: p.ticks,
            });
        }
        for tid in due {
            let reading = self.reading(tid, now, &mut by_session);
            let verdict = self.agents.sampling.panes.get_mut(&tid).and_then(|w| {
                w.read_at = Some(now);
                w.printed = false;
                let sample = w.sampler.sample(reading.as_ref()?)?;
                Some((w.classifier.push(sample), sample))
            });
            if let Some((v, sample)) = verdict.filter(|_| self.decided_by_samples(tid)) {
                self.apply_verdict(tid, v, sample.out > 0);
            }
        }
    }

    /// What a terminal shows now, for its sampler.
    fn reading(
        &mut self,
        tid: TerminalId,
        now: Instant,
        by_session: &mut BTreeMap<i32, Vec<Proc>>,
    ) -> Option<Reading> {
        let epoch = *self.agents.sampling.epoch.get_or_insert(now);
        let rt = self.session.runtimes.get(tid)?;
        let (written, bells) = {
            let emu = crate::pty::lock(&rt.emulator);
            (emu.written(), emu.bells())
        };
        let typed = rt.handle.typed();
        let procs = by_session.remove(&(rt.pid? as i32)).unwrap_or_default();
        let redrawn = self
            .agents
            .sampling
            .panes
            .get(&tid)
            .map_or(0, |w| w.redrawn);
        Some(Reading {
            at_ms: u64::try_from(now.duration_since(epoch).as_millis()).unwrap_or(u64::MAX),
            written: written.wrapping_sub(redrawn),
            bells,
            typed,
            procs,
        })
    }

    /// Sets the state the classifier found. A fresh agent is not called idle while it is
    /// still drawing its first screen (it would read idle, working, idle at start).
    fn apply_verdict(&mut self, tid: TerminalId, v: Verdict, printed: bool) {
        let current = self
            .session
            .state
            .terminals
            .get(&tid)
            .and_then(|t| t.agent_state.clone());
        match v {
            Verdict::Working => self.set_agent_state(tid, "working"),
            Verdict::Waiting { .. } if current.is_none() && printed => {}
            Verdict::Waiting { .. } => {
                if current.as_deref() != Some("idle") {
                    self.set_agent_state(tid, "idle");
                }
            }
        }
    }

    /// The raw signals of a pane and the classifier's verdict, as `pane.signals` returns
    /// them: totals so far (bytes written, bells) and the processes of its session, for
    /// recording a corpus and for telling why a pane shows the state it does.
    pub(crate) fn pane_signals(&mut self, tid: TerminalId) -> Option<Value> {
        let rt = self.session.runtimes.get(tid)?;
        let leader = rt.pid? as i32;
        let (written, bells) = {
            let emu = crate::pty::lock(&rt.emulator);
            (emu.written(), emu.bells())
        };
        let procs: Vec<Value> = proc::sessions(&[leader].into())
            .iter()
            .map(|p| json!([p.pid, (p.state as char).to_string(), p.ticks]))
            .collect();
        let verdict = self
            .agents
            .sampling
            .panes
            .get(&tid)
            .map(|w| match w.classifier.verdict() {
                Verdict::Working => "working",
                Verdict::Waiting { .. } => "waiting",
            });
        Some(json!({
            "written": written,
            "bells": bells,
            "typed": rt.handle.typed(),
            "procs": procs,
            "sampled": verdict,
        }))
    }

    /// `pane.signals`: [`Server::pane_signals`] for the pane asked for.
    pub(crate) fn pane_signals_api(&mut self, p: PaneTarget) -> ApiResult {
        let pane = self.target_pane(p.pane)?;
        let tid = self.session.state.panes.get(&pane).map(|ps| ps.terminal);
        let signals = tid
            .and_then(|t| self.pane_signals(t))
            .ok_or_else(|| ApiError::new("not_found", "no such pane, or it has no process"))?;
        now(signals)
    }
}
