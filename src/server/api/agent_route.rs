//! Which pane a report from an agent's shared process is about. Codex runs its turns in
//! one background server for all its TUIs (`codex app-server`), started by the first TUI
//! and outliving it: its hooks carry that first pane's environment and descend from that
//! pane's process tree, or from init once herdr restarted. Such a report is routed by the
//! thread it names — to the pane it was bound to — and a thread not bound yet to the one
//! Codex pane in the turn's folder whose screen shows the turn's prompt. A report that
//! fits no pane, or more than one, is dropped and logged: never applied to the wrong one.

use super::ApiError;
use crate::agent::Route;
use crate::log;
use crate::model::ids::TerminalId;
use crate::pty::proc;
use crate::server::Server;

/// How many of a pane's last lines are searched for the prompt (a long answer scrolls it
/// off the screen).
const PROMPT_LINES: usize = 1000;
/// How long a restored pane's resume command has to start its agent.
const RESUME_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether `pid` runs under an agent's shared background server (a `codex app-server`
/// among its ancestors): then neither its environment nor its place in the process tree
/// says which pane it reports for.
pub(super) fn under_shared_server(mut pid: i32) -> bool {
    // Above this server are not its panes' processes (a server started from a tool call of
    // Codex would otherwise take every report for one from Codex's server).
    let server = std::process::id() as i32;
    for _ in 0..64 {
        if pid <= 1 || pid == server {
            return false;
        }
        if proc::cmdline(pid).is_some_and(|argv| is_shared_server(&argv)) {
            return true;
        }
        match proc::parent(pid) {
            Some(ppid) => pid = ppid,
            None => return false,
        }
    }
    false
}

/// `…/codex app-server …`: Codex's background server.
fn is_shared_server(argv: &[String]) -> bool {
    let program = argv.first().map(|p| p.rsplit('/').next().unwrap_or(p));
    program == Some("codex") && argv.iter().skip(1).any(|a| a == "app-server")
}

/// Whether a screen's lines show `prompt` as the last prompt the user sent: Codex draws
/// each after `› `, and its input box last, also after `› `; so one of the last two such
/// lines (an older prompt further up is another turn). The line is cut short where the
/// pane is narrow (then at least 8 of its characters count), and the prompt where it is
/// long (`Route::PROMPT_MAX`).
pub(crate) fn shows_prompt(lines: &[String], prompt: &str) -> bool {
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return false;
    }
    let cut = prompt.len() + 4 > Route::PROMPT_MAX;
    lines
        .iter()
        .rev()
        .filter_map(|line| line.trim_start().strip_prefix("› "))
        .take(2)
        .any(|shown| {
            let shown = shown.trim_end();
            shown == prompt
                || (shown.chars().count() >= 8 && prompt.starts_with(shown))
                || (cut && shown.starts_with(prompt))
        })
}

impl Server {
    /// The terminal a shared server's report about `thread` is for, binding the thread
    /// to it when it is found by its prompt.
    pub(super) fn route_shared(
        &mut self,
        agent: &str,
        thread: Option<&str>,
        route: Option<&Route>,
    ) -> Result<TerminalId, ApiError> {
        let runs_agent = |s: &Server, tid: TerminalId| {
            s.session
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.as_deref().is_none_or(|a| a == agent))
        };
        if let Some(thread) = thread {
            // Bound, and still that pane's session (a live handoff keeps the sessions, not
            // the bindings).
            let has = |s: &Server, tid: TerminalId| {
                runs_agent(s, tid)
                    && s.session.state.terminals.get(&tid).is_some_and(|t| {
                        t.agent_session
                            .as_ref()
                            .is_some_and(|x| x.value() == thread)
                    })
            };
            let bound = self.agents.activity.threads.get(thread).copied();
            if let Some(tid) = bound.filter(|&t| has(self, t)) {
                return Ok(tid);
            }
            let holding: Vec<TerminalId> = self
                .session
                .runtimes
                .ids()
                .into_iter()
                .filter(|&t| has(self, t))
                .collect();
            if let [tid] = holding[..] {
                self.bind_thread(thread, tid);
                return Ok(tid);
            }
        }
        let found = match route {
            Some(r) => self.panes_showing(agent, r),
            None => Vec::new(),
        };
        match (found.as_slice(), thread) {
            ([tid], Some(thread)) => {
                self.bind_thread(thread, *tid);
                Ok(*tid)
            }
            ([tid], None) => Ok(*tid),
            _ => {
                let what = format!(
                    "a report from {agent}'s shared server (thread {}) fits {} panes; dropped",
                    thread.unwrap_or("unknown"),
                    found.len()
                );
                log::warn!("agent", "{what}");
                Err(ApiError::new("unroutable", what))
            }
        }
    }

    /// A restore typed the command resuming `session` into `tid`: until the agent starts
    /// (for `RESUME_GRACE` at most) its shell in front keeps the session, and the agent's
    /// shared server reports `session` for this pane.
    pub(crate) fn expect_resume(&mut self, tid: TerminalId, session: &str) {
        let until = std::time::Instant::now() + RESUME_GRACE;
        self.agents.activity.resuming.insert(tid, until);
        self.bind_thread(session, tid);
    }

    /// Remembers that `thread` shows in `tid` (a pane shows one thread at a time).
    pub(crate) fn bind_thread(&mut self, thread: &str, tid: TerminalId) {
        let threads = &mut self.agents.activity.threads;
        threads.retain(|_, t| *t != tid);
        threads.insert(thread.to_string(), tid);
    }

    /// The terminals running `agent` whose screen shows the turn's prompt; of several,
    /// those in the turn's folder (a Codex started with `--cd` works in another).
    fn panes_showing(&mut self, agent: &str, route: &Route) -> Vec<TerminalId> {
        let mut found = Vec::new();
        let turn_dir = std::fs::canonicalize(&route.cwd).ok();
        for tid in self.session.runtimes.ids() {
            self.refresh_agent(tid);
            let runs = self
                .session
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.as_deref() == Some(agent));
            let Some(rt) = self.session.runtimes.get(tid).filter(|_| runs) else {
                continue;
            };
            let cwd = rt.foreground().and_then(|f| f.cwd);
            let lines = crate::pty::lock(&rt.emulator).last_lines(PROMPT_LINES, false);
            if shows_prompt(&lines, &route.prompt) {
                let here = cwd.and_then(|c| std::fs::canonicalize(c).ok());
                found.push((tid, turn_dir.is_some() && here == turn_dir));
            }
        }
        if found.len() > 1 {
            found.retain(|(_, here)| *here);
        }
        found.into_iter().map(|(tid, _)| tid).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_prompt_is_found_where_codex_drew_it_also_cut_short() {
        let screen = lines("  >_ OpenAI Codex\n› say hello\n• Hello from the mock.\n› Ask Codex");
        assert!(shows_prompt(&screen, "say hello"));
        let later = lines("› say hello\n• Hi.\n› continue\n• Done.\n› Ask Codex");
        assert!(!shows_prompt(&later, "say hello"), "an older turn's prompt");
        assert!(shows_prompt(&later, "continue"));
        let long = "y".repeat(Route::PROMPT_MAX);
        let wide = lines(&format!("› {long} and more\n› Ask Codex"));
        assert!(shows_prompt(&wide, &long), "a prompt cut at its limit");
        assert!(
            !shows_prompt(&lines("› say hello there"), "say hello"),
            "a whole prompt"
        );
        assert!(
            !shows_prompt(&screen, "say hell"),
            "a whole prompt, or 8 characters"
        );
        assert!(
            !shows_prompt(&screen, "hello"),
            "only after the prompt mark"
        );
        assert!(!shows_prompt(&screen, ""));
        let narrow = lines("› [long] tell me a\n  story");
        assert!(shows_prompt(&narrow, "[long] tell me a story"));
        assert!(
            !shows_prompt(&lines("› tell me"), "tell me a story"),
            "too little"
        );
    }

    #[test]
    fn only_codex_app_server_is_a_shared_server() {
        let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_shared_server(&v(&[
            "/h/.codex/packages/bin/codex",
            "app-server",
            "--listen",
            "unix://"
        ])));
        assert!(!is_shared_server(&v(&["codex"])));
        assert!(!is_shared_server(&v(&["node", "/x/codex", "app-server"])));
        assert!(!is_shared_server(&v(&["mycodex", "app-server"])));
        assert!(!under_shared_server(std::process::id() as i32));
    }
}
