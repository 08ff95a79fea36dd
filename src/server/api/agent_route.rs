//! Which pane a report from an agent's shared process is about. Codex runs its turns in
//! one background server for all its TUIs (`codex app-server`), started by the first TUI
//! and outliving it: its hooks carry that first pane's environment and descend from that
//! pane's process tree, or from init once herdr restarted. Such a report is routed by the
//! thread it names — to the pane it was bound to — and a thread not bound yet to the one
//! Codex pane in the turn's folder whose screen shows the turn's prompt. A report that
//! fits no pane, or more than one, is dropped and logged: never applied to the wrong one.

use super::ApiError;
use crate::agent::Route;
use crate::model::ids::TerminalId;
use crate::pty::proc;
use crate::server::Server;

/// How many of a pane's last lines are searched for the prompt (a long answer scrolls it
/// off the screen).
const PROMPT_LINES: usize = 200;

/// Whether `pid` runs under an agent's shared background server (a `codex app-server`
/// among its ancestors): then neither its environment nor its place in the process tree
/// says which pane it reports for.
pub(super) fn under_shared_server(mut pid: i32) -> bool {
    for _ in 0..64 {
        if pid <= 1 {
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

/// Whether a screen's lines show `prompt` as a prompt the user sent: Codex draws it after
/// `› `, cut short where the pane is narrow (then at least 8 of its characters).
pub(crate) fn shows_prompt(lines: &[String], prompt: &str) -> bool {
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return false;
    }
    lines.iter().any(|line| {
        let Some(shown) = line.trim_start().strip_prefix("› ") else {
            return false;
        };
        let shown = shown.trim_end();
        shown == prompt || (shown.chars().count() >= 8 && prompt.starts_with(shown))
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
            s.state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.as_deref().is_none_or(|a| a == agent))
        };
        if let Some(thread) = thread {
            let bound = self.agent_fallback.threads.get(thread).copied();
            if let Some(tid) = bound.filter(|&t| runs_agent(self, t)) {
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
                eprintln!("herdr server: {what}");
                Err(ApiError::new("unroutable", what))
            }
        }
    }

    /// Remembers that `thread` shows in `tid` (a pane shows one thread at a time).
    pub(crate) fn bind_thread(&mut self, thread: &str, tid: TerminalId) {
        let threads = &mut self.agent_fallback.threads;
        threads.retain(|_, t| *t != tid);
        threads.insert(thread.to_string(), tid);
    }

    /// The terminals running `agent` in the turn's folder whose screen shows its prompt.
    fn panes_showing(&mut self, agent: &str, route: &Route) -> Vec<TerminalId> {
        let mut found = Vec::new();
        for tid in self.runtimes.ids() {
            self.refresh_agent(tid);
            let runs = self
                .state
                .terminals
                .get(&tid)
                .is_some_and(|t| t.agent.as_deref() == Some(agent));
            let Some(rt) = self.runtimes.get(tid).filter(|_| runs) else {
                continue;
            };
            let cwd = rt.foreground().and_then(|f| f.cwd);
            if cwd.is_none_or(|c| c.as_os_str() != route.cwd.as_str()) {
                continue;
            }
            let lines = crate::pty::lock(&rt.emulator).last_lines(PROMPT_LINES, false);
            if shows_prompt(&lines, &route.prompt) {
                found.push(tid);
            }
        }
        found
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
