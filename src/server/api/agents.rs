//! Which agent runs in each pane: detected from the foreground process (re-checked only
//! when that process changes), and reported by the agents' own hooks (`agent.report`).
//!
//! A report counts only if it comes from inside the pane (the reporting process descends
//! from the pane's shell) while that pane runs the agent it names, and only if its
//! sequence number is newer than the last one from the same source — so a late report
//! from an agent that already exited can never change the next one's state.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::targets::{opt_str, opt_u64, req_str};
use super::{now, ApiError, ApiResult};
use crate::agent::{self, SessionRef};
use crate::model::ids::TerminalId;
use crate::pty::proc;
use crate::server::Server;

const STATES: &[&str] = &["working", "blocked", "idle", "done"];

/// Without hook reports, an agent whose pane printed nothing for this long is idle. Long
/// enough that a pause between two bursts of output is not reported as idle.
const IDLE_AFTER: Duration = Duration::from_secs(3);
/// How often a pane without a known agent is looked at again on output.
const DETECT_INTERVAL: Duration = Duration::from_secs(1);

/// The fallback state machine's memory, per terminal.
#[derive(Default)]
pub(crate) struct Activity {
    /// When a working agent without hooks becomes idle unless it prints again.
    quiet_at: BTreeMap<TerminalId, Instant>,
    /// When each terminal was last checked for an agent on output.
    detected_at: BTreeMap<TerminalId, Instant>,
}

/// Whether `pid` is `ancestor` or one of its descendants (following parents in /proc).
fn descends_from(mut pid: i32, ancestor: i32) -> bool {
    for _ in 0..64 {
        if pid == ancestor {
            return true;
        }
        if pid <= 1 {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            return false;
        };
        match rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            Some(ppid) => pid = ppid,
            None => return false,
        }
    }
    false
}

impl Server {
    /// Re-detects the agent of a terminal when its foreground process changed.
    pub(crate) fn refresh_agent(&mut self, tid: TerminalId) {
        let Some(leader) = self.runtimes.get(tid).and_then(|rt| rt.pid) else {
            return;
        };
        let fg = proc::foreground(leader);
        let Some(term) = self.state.terminals.get_mut(&tid) else {
            return;
        };
        let fg_pid = fg.as_ref().map(|f| f.pid);
        let cached = term.agent_pid.is_some() && term.agent_pid == fg_pid;
        if cached || (term.agent.is_none() && fg_pid == Some(leader as i32)) {
            return;
        }
        match fg.as_ref().and_then(|f| agent::detect(&f.argv)) {
            Some(def) => {
                if term.agent.as_deref() != Some(def.name) || term.agent_pid != fg_pid {
                    // A new agent process: a new generation, nothing carried over.
                    term.agent = Some(def.name.to_string());
                    term.agent_pid = fg_pid;
                    term.agent_state = None;
                    term.report_seq.clear();
                }
            }
            None => {
                term.agent = None;
                term.agent_pid = None;
                term.agent_state = None;
                term.agent_session = None;
                term.agent_source = None;
                term.report_seq.clear();
            }
        }
    }

    /// Output in a pane: for an agent that has no hooks, that means it is working; quiet
    /// for `IDLE_AFTER` means idle. Hook reports, once any arrived, are the only truth.
    pub(crate) fn agent_activity(&mut self, tid: TerminalId) {
        let now = Instant::now();
        let known = self
            .state
            .terminals
            .get(&tid)
            .is_some_and(|t| t.agent.is_some());
        let due = self
            .agent_fallback
            .detected_at
            .get(&tid)
            .is_none_or(|t| now >= *t + DETECT_INTERVAL);
        if !known && due {
            self.agent_fallback.detected_at.insert(tid, now);
            self.refresh_agent(tid);
        }
        let Some(term) = self.state.terminals.get(&tid) else {
            return;
        };
        if term.agent.is_none() || !term.report_seq.is_empty() || term.agent_source.is_some() {
            return;
        }
        self.agent_fallback.quiet_at.insert(tid, now + IDLE_AFTER);
        if term.agent_state.as_deref() != Some("working") {
            self.set_agent_state(tid, "working");
        }
    }

    /// A closed terminal leaves nothing behind.
    pub(crate) fn forget_agent_activity(&mut self, tid: TerminalId) {
        self.agent_fallback.quiet_at.remove(&tid);
        self.agent_fallback.detected_at.remove(&tid);
    }

    pub(crate) fn agent_quiet_deadline(&self) -> Option<Instant> {
        self.agent_fallback.quiet_at.values().min().copied()
    }

    /// Agents without hooks that stopped printing are idle now.
    pub(crate) fn agent_quiet_tick(&mut self, now: Instant) {
        let due: Vec<TerminalId> = self
            .agent_fallback
            .quiet_at
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(id, _)| *id)
            .collect();
        for tid in due {
            self.agent_fallback.quiet_at.remove(&tid);
            let fallback = self
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.is_some() && t.report_seq.is_empty());
            if fallback {
                self.set_agent_state(tid, "idle");
            }
        }
    }

    fn set_agent_state(&mut self, tid: TerminalId, state: &str) {
        let Some(term) = self.state.terminals.get_mut(&tid) else {
            return;
        };
        term.agent_state = Some(state.to_string());
        let agent = term.agent.clone();
        if let Some(p) = self.state.pane_of_terminal(tid) {
            let id = self.pane_no(p);
            self.emit(json!({ "event": "pane.agent", "id": id, "agent": agent, "state": state }));
        }
        self.recheck_waits(Some(tid));
        self.request_render();
    }

    pub(crate) fn refresh_agents(&mut self) {
        for tid in self.runtimes.ids() {
            self.refresh_agent(tid);
        }
    }

    pub(crate) fn agent_report(&mut self, peer_pid: i32, p: &Value) -> ApiResult {
        let pane = self.target_pane(p)?;
        let tid = self
            .state
            .panes
            .get(&pane)
            .map(|ps| ps.terminal)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))?;
        let source = req_str(p, "source")?.to_string();
        let name = req_str(p, "agent")?;
        let def = agent::by_name(name).ok_or_else(|| {
            ApiError::params(format!("unknown agent {name:?}; see docs/agents.md"))
        })?;
        let state = opt_str(p, "state")?;
        if let Some(s) = state {
            if !STATES.contains(&s) {
                return Err(ApiError::params(format!(
                    "\"state\" must be one of {}, got {s:?}",
                    STATES.join(", ")
                )));
            }
        }
        let session = match (opt_str(p, "session_id")?, opt_str(p, "session_path")?) {
            (Some(_), Some(_)) => {
                return Err(ApiError::params(
                    "give session_id or session_path, not both",
                ))
            }
            (Some(id), None) => Some(
                SessionRef::Id(id.to_string())
                    .validate()
                    .map_err(ApiError::params)?,
            ),
            (None, Some(path)) => Some(
                SessionRef::Path(path.to_string())
                    .validate()
                    .map_err(ApiError::params)?,
            ),
            (None, None) => None,
        };
        let seq = opt_u64(p, "seq")?;
        // Only from inside the pane, and only about the agent running there now.
        let leader = self
            .runtimes
            .get(tid)
            .and_then(|rt| rt.pid)
            .map(|p| p as i32);
        if !leader.is_some_and(|l| descends_from(peer_pid, l)) {
            return Err(ApiError::new(
                "stale_report",
                "the report does not come from a process of that pane",
            ));
        }
        self.refresh_agent(tid);
        let id = self.pane_no(pane);
        let Some(term) = self.state.terminals.get_mut(&tid) else {
            return Err(ApiError::new("not_found", "no such pane"));
        };
        if term.agent.as_deref().is_some_and(|a| a != def.name) {
            return Err(ApiError::new(
                "stale_report",
                format!(
                    "pane {id} runs {}, not {}",
                    term.agent.as_deref().unwrap_or("?"),
                    def.name
                ),
            ));
        }
        if let (Some(seq), Some(last)) = (seq, term.report_seq.get(&source)) {
            if seq <= *last {
                return now(
                    json!({ "id": id, "accepted": false, "reason": "an equal or newer report from this source came first" }),
                );
            }
        }
        // Every accepted report is remembered per source (even unsequenced ones: from now
        // on the hooks, not output activity, say what the agent is doing).
        match seq {
            Some(seq) => {
                term.report_seq.insert(source.clone(), seq);
            }
            None => {
                term.report_seq.entry(source.clone()).or_insert(0);
            }
        }
        term.agent = Some(def.name.to_string());
        let official = source == format!("herdr:{}", def.name);
        if let (Some(s), true) = (session, official) {
            term.agent_session = Some(s);
            term.agent_source = Some(source.clone());
        }
        let changed = state.is_some() && term.agent_state.as_deref() != state;
        if let Some(s) = state {
            term.agent_state = Some(s.to_string());
        }
        let agent_state = term.agent_state.clone();
        if changed {
            self.emit(
                json!({ "event": "pane.agent", "id": id, "agent": def.name, "state": agent_state }),
            );
            self.recheck_waits(Some(tid));
            self.request_render();
        }
        now(json!({ "id": id, "accepted": true, "agent": def.name, "state": agent_state }))
    }
}
