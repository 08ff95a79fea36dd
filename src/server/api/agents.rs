//! Which agent runs in each pane: detected from the foreground process (re-checked only
//! when that process changes), and reported by the agents' own hooks (`agent.report`, in
//! `agent_report`).
//!
//! A report counts only if it comes from inside the pane (the reporting process descends
//! from the pane's shell) while that pane runs the agent it names, and only if its
//! sequence number is newer than the last one from the same source — so a late report
//! from an agent that already exited can never change the next one's state.
//!
//! An agent's hooks start its states; its screen rules, where it has them, only see the
//! ends its hooks do not report (a prompt answered by Esc, work interrupted): a state
//! a hook set ends by the screen only once the screen showed it and then stopped.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::agent;
use crate::model::ids::TerminalId;
use crate::pty::proc;
use crate::server::Server;

pub(crate) const STATES: &[&str] = &["working", "blocked", "idle", "done"];

/// Without hook reports, an agent whose pane printed nothing for this long (or whose screen
/// stopped showing it busy for this long) is idle. Long enough that a pause between two
/// bursts of output is not reported as idle.
const IDLE_AFTER: Duration = Duration::from_secs(3);
/// How soon an agent whose screen stopped showing it busy, but which its samples still
/// show at work, is looked at again.
const STILL_WORKING_RETRY: Duration = Duration::from_millis(250);
/// How often a pane without a known agent is looked at again on output.
const DETECT_INTERVAL: Duration = Duration::from_secs(1);
/// How often a pane whose agent is known is looked at again on output (has it quit?).
const KNOWN_DETECT_INTERVAL: Duration = Duration::from_secs(2);
/// Output this soon after a resize is the program redrawing, not working.
const RESIZE_REDRAW: Duration = Duration::from_secs(1);
/// After output in an agent pane with screen rules, its screen is read this much later
/// (one read for a burst of output).
const LOOK_DELAY: Duration = Duration::from_millis(150);
/// The same while its screen has yet to show the state its hooks just set: a frame's
/// time, so a prompt drawn and answered at once is seen (a person, or a script, takes
/// longer); for `CONFIRM_WINDOW` after the hook (an agent draws what its hook announced
/// at once; a state the screen never shows is not looked for that often for long).
const CONFIRM_DELAY: Duration = Duration::from_millis(10);
const CONFIRM_WINDOW: Duration = Duration::from_secs(2);

/// The fallback state machine's memory, per terminal, and the screen rules it uses.
#[derive(Default)]
pub(crate) struct Activity {
    /// When a working agent without hooks becomes idle unless it shows otherwise.
    quiet_at: BTreeMap<TerminalId, Instant>,
    /// When each terminal was last checked for an agent on output.
    detected_at: BTreeMap<TerminalId, Instant>,
    /// Output came too soon after the last check: when to check again (a program that
    /// draws its first screen and waits is found without printing more).
    detect_again: BTreeMap<TerminalId, Instant>,
    /// When the screen of an agent pane with rules is read next.
    look_at: BTreeMap<TerminalId, Instant>,
    /// For an agent whose hooks report: the state its hooks set last, once its screen has
    /// shown it too (only then may the screen end it).
    confirmed: BTreeMap<TerminalId, &'static str>,
    /// Until when the screen is read at `CONFIRM_DELAY` after output, to confirm the
    /// state a hook just set.
    confirm_until: BTreeMap<TerminalId, Instant>,
    /// How much each agent's program had written when last looked at: a notification
    /// without new bytes (a resize, a redraw for a client) is no activity.
    written: BTreeMap<TerminalId, u64>,
    /// Screen rules by agent name (see `agent::rules`).
    pub(crate) rules: BTreeMap<String, crate::agent::rules::Rules>,
    /// The threads of agents run by a shared server, by the terminal that shows each (at
    /// most one per terminal: see `agent_route`).
    pub(super) threads: BTreeMap<String, TerminalId>,
    /// Restored panes whose resume command was typed, until when their shell in front is
    /// not taken for the agent having quit.
    pub(super) resuming: BTreeMap<TerminalId, Instant>,
    /// The foreground process each terminal last showed that is no agent.
    pub(super) plain: BTreeMap<TerminalId, i32>,
    /// Counts the times a terminal's agent was found, replaced or gone (what a save
    /// keeps of agents; their states are not kept).
    pub(crate) detections: u64,
}

impl Server {
    /// Re-detects the agent of a terminal when its foreground process changed.
    pub(crate) fn refresh_agent(&mut self, tid: TerminalId) {
        let fg_pid = self.foreground_pid(tid);
        self.refresh_agent_seen(tid, fg_pid);
    }

    /// The process in front in a terminal (one ioctl).
    pub(crate) fn foreground_pid(&self, tid: TerminalId) -> Option<i32> {
        self.session.runtimes.get(tid)?.foreground_pid()
    }

    /// [`Server::refresh_agent`] with the pane's foreground process already asked for
    /// (one ioctl): its command line is read only when it changed (`pane list` refreshes
    /// every pane).
    fn refresh_agent_seen(&mut self, tid: TerminalId, fg_pid: Option<i32>) {
        let Some(leader) = self.session.runtimes.get(tid).and_then(|rt| rt.pid) else {
            return;
        };
        let Some(term) = self.session.state.terminals.get_mut(&tid) else {
            return;
        };
        let now = Instant::now();
        let resuming = self
            .agents
            .activity
            .resuming
            .get(&tid)
            .is_some_and(|until| now < *until);
        let cached = term.agent_pid.is_some() && term.agent_pid == fg_pid;
        // A shell leading its pane is not looked at while it is in the foreground; a pane
        // started with a program (`pane split -- codex`) may have the agent as its leader.
        let shell = term.argv.is_empty() && fg_pid == Some(leader as i32);
        if cached || (term.agent.is_none() && shell) {
            return;
        }
        let argv = fg_pid.and_then(proc::cmdline);
        let detected = argv.as_deref().and_then(agent::detect);
        match (detected, fg_pid) {
            (None, Some(pid)) => self.agents.activity.plain.insert(tid, pid),
            _ => self.agents.activity.plain.remove(&tid),
        };
        let found = match detected {
            Some(def) => {
                let new = term.agent.as_deref() != Some(def.name) || term.agent_pid != fg_pid;
                if new {
                    // A new agent process: a new generation, nothing carried over but
                    // the session a restore resumes in it.
                    if !resuming {
                        term.agent_session = None;
                        term.agent_source = None;
                    }
                    term.agent = Some(def.name.to_string());
                    term.agent_pid = fg_pid;
                    term.agent_state = None;
                    term.report_seq.clear();
                    term.hooked = false;
                    term.agent_error = None;
                    term.agent_since = Some(std::time::SystemTime::now());
                    term.agent_argv = argv.as_deref().map(agent::own_argv).unwrap_or_default();
                }
                new
            }
            // A restored pane's shell, before the resume command it was given started the
            // agent: its session stays (saved again if herdr restarts before that), for
            // `RESUME_GRACE` at most.
            None if resuming => return,
            None => {
                let gone = term.agent.is_some() || term.agent_session.is_some();
                term.agent = None;
                term.agent_pid = None;
                term.agent_state = None;
                term.agent_session = None;
                term.agent_source = None;
                term.report_seq.clear();
                term.hooked = false;
                term.agent_error = None;
                term.agent_since = None;
                term.agent_argv.clear();
                gone
            }
        };
        if found {
            self.agents.activity.detections += 1;
        }
        // The pane's agent changed: of the threads bound to it, only the session it resumes
        // stays (a thread another pane now shows is found there by its prompt).
        let kept = term.agent_session.as_ref().map(|s| s.value().to_string());
        self.agents
            .activity
            .threads
            .retain(|thread, t| *t != tid || kept.as_deref() == Some(thread.as_str()));
        if detected.is_some() {
            self.agents.activity.resuming.remove(&tid);
        }
        self.agents.activity.quiet_at.remove(&tid);
        self.agents.activity.look_at.remove(&tid);
        self.agents.activity.confirmed.remove(&tid);
        self.agents.activity.confirm_until.remove(&tid);
        self.forget_sampling(tid);
        if let Some(ps) = self
            .session
            .state
            .pane_of_terminal(tid)
            .and_then(|p| self.session.state.panes.get_mut(&p))
        {
            ps.seen = true;
        }
    }

    /// Output in a pane. An agent's screen is read against its rules soon (for one whose
    /// hooks report, to see the ends they miss); an agent without rules or hooks is read
    /// soon by its sampler (`sampling.rs`).
    pub(crate) fn agent_activity(&mut self, tid: TerminalId) {
        let now = Instant::now();
        let known = self
            .session
            .state
            .terminals
            .get(&tid)
            .is_some_and(|t| t.agent.is_some());
        // Also for a known agent (slowly): once it quits, its pane is a shell again.
        let interval = if known {
            KNOWN_DETECT_INTERVAL
        } else {
            DETECT_INTERVAL
        };
        let due = self
            .agents
            .activity
            .detected_at
            .get(&tid)
            .is_none_or(|t| now >= *t + interval);
        if due {
            self.agents.activity.detected_at.insert(tid, now);
            self.agents.activity.detect_again.remove(&tid);
            self.refresh_agent(tid);
        } else if let Some(at) = self.agents.activity.detected_at.get(&tid) {
            self.agents
                .activity
                .detect_again
                .entry(tid)
                .or_insert(*at + interval);
        }
        let Some((agent, hooked)) = self.watched_agent(tid) else {
            self.forget_sampling(tid);
            return;
        };
        let Some(rt) = self.session.runtimes.get(tid) else {
            return;
        };
        let written = crate::pty::lock(&rt.emulator).written();
        let redraw = rt.resized_at.is_some_and(|at| now < at + RESIZE_REDRAW);
        // An agent found just now is looked at even without new output (it may have
        // drawn its whole screen before it was found, and wait).
        let fresh = self.raw_state(tid).is_none();
        let before = self.agents.activity.written.insert(tid, written);
        if before == Some(written) && !fresh {
            return;
        }
        // The program redrawing for its new size is not work: its bytes do not count.
        let redrawn = match (redraw, before) {
            (true, Some(b)) => written.wrapping_sub(b),
            _ => 0,
        };
        self.sampling_output(tid, redrawn);
        if self.agents.activity.rules.contains_key(&agent) {
            let at = now + self.look_delay(tid, hooked, now);
            let next = self.agents.activity.look_at.entry(tid).or_insert(at);
            *next = (*next).min(at);
        }
    }

    /// How soon after output an agent's screen is read: soon, for a state its hooks set
    /// that the screen has not shown yet — the prompt just drawn may be answered within a
    /// burst's delay, and the screen would never have shown it to herdr.
    fn look_delay(&self, tid: TerminalId, hooked: bool, now: Instant) -> Duration {
        let current = self.raw_state(tid);
        let f = &self.agents.activity;
        let unconfirmed = hooked
            && matches!(current.as_deref(), Some("working" | "blocked"))
            && f.confirmed.get(&tid).copied() != current.as_deref()
            && f.confirm_until.get(&tid).is_some_and(|t| now < *t);
        if unconfirmed {
            CONFIRM_DELAY
        } else {
            LOOK_DELAY
        }
    }

    /// The agent of a terminal, and whether its hooks report its state.
    fn watched_agent(&self, tid: TerminalId) -> Option<(String, bool)> {
        let term = self.session.state.terminals.get(&tid)?;
        Some((term.agent.clone()?, term.hooked))
    }

    /// The state of a terminal's agent as last set (`done` is `idle` here).
    fn raw_state(&self, tid: TerminalId) -> Option<String> {
        self.session.state.terminals.get(&tid)?.agent_state.clone()
    }

    /// What the screen of an agent with rules shows: `Some(None)` is nothing busy.
    fn screen_state(&self, tid: TerminalId, agent: &str) -> Option<Option<&'static str>> {
        let rules = self.agents.activity.rules.get(agent)?;
        let rt = self.session.runtimes.get(tid)?;
        let rows: Vec<String> = {
            let emu = crate::pty::lock(&rt.emulator);
            let screen = emu.screen();
            screen.rows(0, screen.size().1).collect()
        };
        Some(rules.classify(&rows).filter(|s| *s != "idle"))
    }

    /// Reads an agent's screen after output: busy states apply at once; a screen that no
    /// longer shows it busy makes it idle only if that lasts `IDLE_AFTER`.
    fn look_at_screen(&mut self, tid: TerminalId, now: Instant) {
        let Some((agent, hooked)) = self.watched_agent(tid) else {
            return;
        };
        let Some(found) = self.screen_state(tid, &agent) else {
            return;
        };
        if hooked {
            self.refine_hooked(tid, found, now);
            return;
        }
        match found {
            Some(busy) => {
                self.agents.activity.quiet_at.remove(&tid);
                self.set_agent_state(tid, busy);
            }
            None => {
                let current = self
                    .session
                    .state
                    .terminals
                    .get(&tid)
                    .and_then(|t| t.agent_state.clone());
                match current.as_deref() {
                    // Idle once neither the screen nor output has shown work for
                    // `IDLE_AFTER`: an agent may hide its status line while its answer
                    // streams, or have no room for it in a narrow pane.
                    Some("working") => {
                        self.agents.activity.quiet_at.insert(tid, now + IDLE_AFTER);
                    }
                    Some("blocked") => {
                        self.agents
                            .activity
                            .quiet_at
                            .entry(tid)
                            .or_insert(now + IDLE_AFTER);
                    }
                    Some("idle") => {}
                    _ => self.set_agent_state(tid, "idle"),
                }
            }
        }
    }

    /// What the screen of an agent whose hooks report adds to them. The hooks start
    /// every state; the screen confirms the one they set, and ends a confirmed one that
    /// it stops showing: a permission prompt gone while a spinner shows is work again
    /// (approved, and the tool runs: the hook comes only when it is done); a prompt or
    /// work gone from the screen for `IDLE_AFTER` is idle (answered with Esc, or
    /// interrupted: no hook runs then). Work the screen never confirmed ends the same way
    /// only once the output stopped too. A prompt on screen while the hooks say working
    /// is blocked (hooks that do not report prompts). Nothing else: a spinner left on
    /// screen after the hook said idle is not work, and a prompt the rules do not know
    /// stays blocked.
    fn refine_hooked(&mut self, tid: TerminalId, found: Option<&'static str>, now: Instant) {
        let current = self.raw_state(tid);
        let confirmed = self.agents.activity.confirmed.get(&tid).copied();
        let f = &mut self.agents.activity;
        match (current.as_deref(), found) {
            (Some("working"), Some("blocked")) => {
                f.quiet_at.remove(&tid);
                f.confirmed.insert(tid, "blocked");
                self.set_agent_state(tid, "blocked");
            }
            (Some("blocked"), Some("working")) if confirmed == Some("blocked") => {
                f.quiet_at.remove(&tid);
                f.confirmed.insert(tid, "working");
                self.set_agent_state(tid, "working");
            }
            (Some(now_state @ ("working" | "blocked")), Some(shown)) if now_state == shown => {
                f.quiet_at.remove(&tid);
                f.confirmed.insert(tid, shown);
            }
            (Some(now_state @ ("working" | "blocked")), None) if confirmed == Some(now_state) => {
                f.quiet_at.entry(tid).or_insert(now + IDLE_AFTER);
            }
            (Some("working"), None) => {
                // Work the screen never showed (interrupted before a look saw it, or a
                // spinner the rules miss): idle once the agent has also printed nothing
                // for `IDLE_AFTER` — agents animate while they work; each output, read
                // here, starts the wait again.
                f.quiet_at.insert(tid, now + IDLE_AFTER);
            }
            _ => {}
        }
    }

    /// A hook set the agent's state to `state`: confirmed at once if the screen shows it
    /// already (the agent drew its prompt before the hook ran: the user may answer it
    /// before the agent prints again), and the screen is read again soon whether or not
    /// the agent prints.
    pub(super) fn hook_set_state(&mut self, tid: TerminalId, state: &str) {
        self.agents.activity.quiet_at.remove(&tid);
        self.agents.activity.confirmed.remove(&tid);
        let Some((agent, _)) = self.watched_agent(tid) else {
            return;
        };
        let Some(shown) = self.screen_state(tid, &agent) else {
            return;
        };
        if let Some(s) = shown.filter(|s| *s == state) {
            self.agents.activity.confirmed.insert(tid, s);
        }
        let now = Instant::now();
        self.agents
            .activity
            .confirm_until
            .insert(tid, now + CONFIRM_WINDOW);
        self.agents
            .activity
            .look_at
            .insert(tid, now + CONFIRM_DELAY);
    }

    /// Input is about to reach an agent whose hooks set a state the screen has not yet
    /// confirmed: the screen is read first, for what the input answers is what it shows
    /// now. A prompt drawn after its hook ran and answered at once (a script's keys) can
    /// come and go between two looks; unconfirmed, it would never end.
    pub(crate) fn before_agent_input(&mut self, tid: TerminalId) {
        let Some(term) = self.session.state.terminals.get(&tid) else {
            return;
        };
        let (Some(agent), true) = (term.agent.as_deref(), term.hooked) else {
            return;
        };
        let current = match term.agent_state.as_deref() {
            Some("working") => "working",
            Some("blocked") => "blocked",
            _ => return,
        };
        if self.agents.activity.confirmed.get(&tid) == Some(&current) {
            return;
        }
        if self.screen_state(tid, agent) == Some(Some(current)) {
            self.agents.activity.confirmed.insert(tid, current);
        }
    }

    /// A closed terminal leaves nothing behind.
    pub(crate) fn forget_agent_activity(&mut self, tid: TerminalId) {
        self.agents.activity.threads.retain(|_, t| *t != tid);
        self.agents.activity.resuming.remove(&tid);
        self.agents.activity.plain.remove(&tid);
        self.agents.activity.quiet_at.remove(&tid);
        self.agents.activity.detected_at.remove(&tid);
        self.agents.activity.detect_again.remove(&tid);
        self.agents.activity.look_at.remove(&tid);
        self.agents.activity.written.remove(&tid);
        self.agents.activity.confirmed.remove(&tid);
        self.agents.activity.confirm_until.remove(&tid);
        self.agents.notify.forget(tid);
        self.forget_sampling(tid);
    }

    pub(crate) fn agent_quiet_deadline(&self) -> Option<Instant> {
        let f = &self.agents.activity;
        f.quiet_at
            .values()
            .chain(f.look_at.values())
            .chain(f.detect_again.values())
            .min()
            .copied()
            .into_iter()
            .chain(self.sampling_deadline())
            .min()
    }

    /// Screens due to be read are read; agents without hooks that stayed quiet (or not
    /// busy on screen) are idle now.
    pub(crate) fn agent_quiet_tick(&mut self, now: Instant) {
        let due = |m: &BTreeMap<TerminalId, Instant>| -> Vec<TerminalId> {
            m.iter()
                .filter(|(_, t)| **t <= now)
                .map(|(id, _)| *id)
                .collect()
        };
        for tid in due(&self.agents.activity.detect_again) {
            // Output the last check came too early for: looked at now, as it would have
            // been had more come.
            self.agents.activity.detect_again.remove(&tid);
            self.agents.activity.detected_at.remove(&tid);
            self.agent_activity(tid);
        }
        self.sampling_tick(now);
        for tid in due(&self.agents.activity.look_at) {
            self.agents.activity.look_at.remove(&tid);
            self.look_at_screen(tid, now);
        }
        for tid in due(&self.agents.activity.quiet_at) {
            self.agents.activity.quiet_at.remove(&tid);
            let Some((agent, hooked)) = self.watched_agent(tid) else {
                continue;
            };
            let found = self.screen_state(tid, &agent).flatten();
            if !hooked && found.is_none() && self.sampled_working(tid) {
                // The screen shows nothing busy, but the agent still animates or burns
                // CPU (Codex hides its working line while an answer streams): not idle
                // yet; looked at again shortly.
                self.agents
                    .activity
                    .quiet_at
                    .insert(tid, now + STILL_WORKING_RETRY);
                continue;
            }
            if !hooked {
                self.set_agent_state(tid, found.unwrap_or("idle"));
                continue;
            }
            let current = self.raw_state(tid);
            let confirmed = self.agents.activity.confirmed.get(&tid).copied();
            let ended = current.as_deref() == confirmed || current.as_deref() == Some("working");
            match found {
                None if current.is_some() && ended => {
                    self.agents.activity.confirmed.remove(&tid);
                    self.set_agent_state(tid, "idle");
                }
                None => {}
                Some(_) => self.refine_hooked(tid, found, now),
            }
        }
    }

    /// Whether a client shows the terminal now.
    fn viewed(&self, tid: TerminalId) -> bool {
        !self.clients.by_id.is_empty() && self.is_visible(tid)
    }

    /// Sets an agent's state and tells waits, subscribers and clients when what users see
    /// changed. An agent that finishes (idle after working or blocked, or a report of
    /// "done") while no client shows its pane is "done" until one does.
    pub(super) fn set_agent_state(&mut self, tid: TerminalId, state: &str) {
        let viewed = self.viewed(tid);
        let pane = self.session.state.pane_of_terminal(tid);
        let shown =
            |s: &Server| pane.and_then(|p| s.session.state.agent_state(p).map(str::to_string));
        let before = shown(self);
        let Some(term) = self.session.state.terminals.get_mut(&tid) else {
            return;
        };
        let raw = if state == "done" { "idle" } else { state };
        let finished = state == "done"
            || (raw == "idle"
                && matches!(term.agent_state.as_deref(), Some("working" | "blocked")));
        if term.agent_state.as_deref() != Some(raw) || term.agent_since.is_none() {
            term.agent_since = Some(std::time::SystemTime::now());
        }
        term.agent_state = Some(raw.to_string());
        let agent = term.agent.clone();
        if let Some(ps) = pane.and_then(|p| self.session.state.panes.get_mut(&p)) {
            if raw != "idle" {
                ps.seen = true;
            } else if finished {
                ps.seen = viewed;
            }
        }
        let after = shown(self);
        if before == after {
            return;
        }
        if let Some(p) = pane {
            let id = self.pane_no(p);
            self.emit(json!({ "event": "pane.agent", "id": id, "agent": agent, "state": after }));
            if let Some(s @ ("blocked" | "done")) = after.as_deref() {
                self.agent_notify(tid, p, s);
            }
        }
        self.recheck_waits(Some(tid));
        self.request_render();
    }

    /// Panes a client shows now have been seen: a "done" agent there becomes idle, and a
    /// bell it rang is no longer marked.
    pub(crate) fn note_seen(&mut self) {
        if self.clients.by_id.is_empty() {
            return;
        }
        let Some(tab) = self.session.state.active_tab() else {
            return;
        };
        let shown = if tab.zoomed {
            vec![tab.focused]
        } else {
            tab.layout.panes()
        };
        for p in shown {
            if let Some(ps) = self.session.state.panes.get_mut(&p).filter(|ps| ps.bell) {
                ps.bell = false;
                self.request_render();
            }
            let Some(ps) = self.session.state.panes.get_mut(&p).filter(|ps| !ps.seen) else {
                continue;
            };
            ps.seen = true;
            let tid = ps.terminal;
            let agent = self
                .session
                .state
                .terminals
                .get(&tid)
                .and_then(|t| t.agent.clone());
            let id = self.pane_no(p);
            self.emit(json!({ "event": "pane.agent", "id": id, "agent": agent, "state": "idle" }));
            self.recheck_waits(Some(tid));
            self.request_render();
        }
    }

    /// Every pane's agent, as `pane list` shows them: a foreground process already found
    /// to be no agent is not read again here (output in its pane still looks again, so a
    /// program that `exec`s an agent is found once it draws). Returns each terminal's
    /// foreground process as it was asked for, for the listing to describe.
    pub(crate) fn refresh_agents(&mut self) -> HashMap<TerminalId, Option<i32>> {
        let mut seen = HashMap::with_capacity(self.session.runtimes.len());
        for tid in self.session.runtimes.ids() {
            let fg = self.foreground_pid(tid);
            seen.insert(tid, fg);
            let plain = fg.is_some() && self.agents.activity.plain.get(&tid).copied() == fg;
            let no_agent = self
                .session
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.is_none());
            if !(plain && no_agent) {
                self.refresh_agent_seen(tid, fg);
            }
        }
        seen
    }
}
