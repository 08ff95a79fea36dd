//! `agent.report`: what an agent's hook tells herdr, checked (from inside the pane, or
//! routed by thread from an agent's shared server: `agent_route`), then applied to the
//! pane's agent: its state, its session, the error that ended its turn.

use serde_json::json;

use super::agent_route;
use super::agents::STATES;
use super::{now, ApiError, ApiResult};
use crate::agent::{self, SessionRef};
use crate::protocol::api::AgentReport;
use crate::pty::proc;
use crate::server::Server;

/// An `error` longer than this is refused; what is kept is one line of at most
/// `agent::claude::MAX_ERROR` bytes.
const MAX_ERROR_PARAM: usize = 4096;

/// The longest `prompt` and `cwd` a report may give to be routed by.
const MAX_ROUTE_PARAM: usize = 4096;

/// A report's `cwd` and `prompt`: the turn it is about, for a report from an agent's
/// shared server (both, or neither).
fn route_param(p: &AgentReport) -> Result<Option<agent::Route>, ApiError> {
    let (cwd, prompt) = (p.cwd.as_deref(), p.prompt.as_deref());
    for (name, v) in [("cwd", cwd), ("prompt", prompt)] {
        if v.is_some_and(|v| v.len() > MAX_ROUTE_PARAM) {
            return Err(ApiError::params(format!(
                "\"{name}\" is at most {MAX_ROUTE_PARAM} bytes"
            )));
        }
    }
    Ok(match (cwd, prompt) {
        (Some(cwd), Some(prompt)) => Some(agent::Route {
            cwd: cwd.to_string(),
            prompt: prompt.to_string(),
        }),
        _ => None,
    })
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
        match proc::parent(pid) {
            Some(ppid) => pid = ppid,
            None => return false,
        }
    }
    false
}

impl Server {
    pub(crate) fn agent_report(&mut self, peer_pid: i32, p: AgentReport) -> ApiResult {
        let source = p.source.clone();
        let name = p.agent.as_str();
        let def = agent::by_name(name).ok_or_else(|| {
            ApiError::params(format!("unknown agent {name:?}; see docs/agents.md"))
        })?;
        let state = p.state.as_deref();
        if let Some(s) = state {
            if !STATES.contains(&s) {
                return Err(ApiError::params(format!(
                    "\"state\" must be one of {}, got {s:?}",
                    STATES.join(", ")
                )));
            }
        }
        let session = match (p.session_id.as_deref(), p.session_path.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(ApiError::params(
                    "give session_id or session_path, not both",
                ))
            }
            (Some(id), None) => Some(
                SessionRef::Id(id.to_string())
                    .validate()
                    .map_err(|e| ApiError::params(e.to_string()))?,
            ),
            (None, Some(path)) => Some(
                SessionRef::Path(path.to_string())
                    .validate()
                    .map_err(|e| ApiError::params(e.to_string()))?,
            ),
            (None, None) => None,
        };
        let error = p
            .error
            .as_deref()
            .map(|e| {
                if e.len() > MAX_ERROR_PARAM {
                    Err(ApiError::params(format!(
                        "\"error\" is at most {MAX_ERROR_PARAM} bytes"
                    )))
                } else {
                    Ok(agent::claude::one_line(e))
                }
            })
            .transpose()?;
        let seq = p.seq;
        let route = route_param(&p)?;
        // Only from inside the pane (or, from an agent's shared server, about the pane
        // whose agent showed the turn), and only about the agent running there now.
        let tid = if agent_route::under_shared_server(peer_pid) {
            let thread = session.as_ref().map(SessionRef::value);
            self.route_shared(def.name, thread, route.as_ref())?
        } else {
            let target = self.target_pane(p.pane)?;
            let tid = self
                .session
                .state
                .panes
                .get(&target)
                .map(|ps| ps.terminal)
                .ok_or_else(|| ApiError::new("not_found", "no such pane"))?;
            let leader = self
                .session
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
            tid
        };
        let pane = self
            .session
            .state
            .pane_of_terminal(tid)
            .ok_or_else(|| ApiError::new("not_found", "no such pane"))?;
        self.refresh_agent(tid);
        let id = self.pane_no(pane);
        let Some(term) = self.session.state.terminals.get_mut(&tid) else {
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
            let thread = s.value().to_string();
            term.agent_session = Some(s);
            term.agent_source = Some(source.clone());
            self.bind_thread(&thread, tid);
        }
        let Some(term) = self.session.state.terminals.get_mut(&tid) else {
            return Err(ApiError::new("not_found", "no such pane"));
        };
        if error.is_some() {
            term.agent_error = error;
        } else if matches!(state, Some("working" | "blocked")) {
            term.agent_error = None;
        }
        if matches!(state, Some("working" | "blocked")) {
            // Hooks that report work report its start and (mostly) its end: from now on
            // they decide, the screen only sees the ends they miss.
            term.hooked = true;
        }
        let hooked = term.hooked;
        crate::log::debug!(
            "agent",
            "report for terminal {tid:?} from {source}: state {state:?}, seq {seq:?}"
        );
        if let Some(s) = state {
            if hooked {
                self.hook_set_state(tid, s);
            }
            self.set_agent_state(tid, s);
        }
        let agent_state = self.session.state.agent_state(pane).map(str::to_string);
        now(json!({ "id": id, "accepted": true, "agent": def.name, "state": agent_state }))
    }
}
