//! Records the corpus the any-agent classifier is measured on (`tests/agent_corpus.rs`,
//! docs/agents.md): the real Claude Code and Codex against the mock API without hooks, a
//! shell, vim and builds, each sampled every 250 ms with the truth its script knows.
//! Run by `scripts/record-agent-corpus [claude|codex|terminal]…` (needs the real agents);
//! `HERDR_CORPUS_RUN=N` names the run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::api::Api;
use support::corpus::{self, Recorder, Truth};
use support::mock_api::{MockApi, LONG_END, TEXT_ANSWER, TOOL_ANSWER};
use support::{ok, prompt, real_agents, Env};

fn main() {
    let mut what: Vec<String> = std::env::args().skip(1).collect();
    if what.is_empty() {
        what = vec!["claude".into(), "codex".into(), "terminal".into()];
    }
    for w in what {
        match w.as_str() {
            "claude" => record_claude(),
            "codex" => record_codex(),
            "terminal" => record_terminal(),
            other => {
                eprintln!("unknown recording {other:?}: give claude, codex or terminal");
                std::process::exit(2);
            }
        }
    }
}

/// Generous: a turn against the mock takes a second or two.
const TURN: Duration = Duration::from_secs(60);

/// Writes a recording as `<name>-<run>.jsonl`, the run given by `HERDR_CORPUS_RUN`
/// (default 1): recordings of several runs stand beside each other.
fn write_corpus(name: &str, lines: Vec<String>) {
    std::fs::create_dir_all(corpus::dir()).unwrap();
    let run = std::env::var("HERDR_CORPUS_RUN").unwrap_or_else(|_| "1".into());
    let mut text = lines.join("\n");
    text.push('\n');
    let file = corpus::dir().join(format!("{name}-{run}.jsonl"));
    std::fs::write(file, text).unwrap();
}

/// Waits until the pane's screen makes `cond` true, polling its screen.
fn wait_screen(api: &mut Api, what: &str, cond: impl Fn(&str) -> bool) {
    let end = Instant::now() + TURN;
    loop {
        let screen = api.call("pane.read", json!({"pane": "p1"}));
        let text = screen["text"].as_str().unwrap_or("").to_string();
        if cond(&text) {
            return;
        }
        assert!(Instant::now() < end, "{what} never came; the pane:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Types `text` as a person would, a key every 120 ms, and then Enter.
fn type_slowly(api: &mut Api, text: &str) {
    for c in text.chars() {
        api.call("pane.send", json!({"pane": "p1", "text": c.to_string()}));
        std::thread::sleep(Duration::from_millis(120));
    }
    std::thread::sleep(Duration::from_millis(300));
    key(api, "Enter");
}

fn key(api: &mut Api, name: &str) {
    api.call("pane.keys", json!({"pane": "p1", "keys": [name]}));
}

/// Lets the recording run for `d` (the scenario's state lasting).
fn hold(d: Duration) {
    std::thread::sleep(d);
}

/// A real agent at its prompt in pane p1, watched by a client.
struct Session {
    env: Env,
    mock: MockApi,
    _client: support::Term,
    api: Api,
    agent: &'static str,
    work: std::path::PathBuf,
}

impl Session {
    fn start(agent: &'static str) -> Session {
        let env = Env::new(&format!("corpus-{agent}"));
        let mock = MockApi::start();
        let work = env.home().join("work");
        std::fs::create_dir_all(&work).unwrap();
        match agent {
            "claude" => real_agents::claude(&env, &mock, &work),
            _ => real_agents::codex(&env, &mock, &work),
        }
        ok(env.herdr(&["server", "start"]));
        let client = env.client(150, 45);
        prompt(&env, "p1");
        support::submit(&env, "p1", &format!("cd {} && {agent}", work.display()));
        let mut api = Api::connect(&env);
        let ready = if agent == "claude" {
            "for shortcuts"
        } else {
            "Ask Codex to do anything"
        };
        wait_screen(&mut api, "the agent's prompt", |s| s.contains(ready));
        Session {
            env,
            mock,
            _client: client,
            api,
            agent,
            work,
        }
    }

    /// The truth for an agent: its screen shows its permission prompt (waiting), or its
    /// own working line, or the mock streams an answer (working); else waiting. Its
    /// built-in screen rules tell the prompt and the working line, for this version.
    fn judge(&self) -> Arc<dyn Fn(&str) -> bool + Send + Sync> {
        let rules = herdr::agent::rules::load(None)
            .0
            .remove(self.agent)
            .expect("the agent's rules");
        let streaming = self.mock.streaming_counter();
        Arc::new(move |screen: &str| {
            let rows: Vec<String> = screen.lines().map(str::to_string).collect();
            match rules.classify(&rows) {
                Some("blocked") => false,
                Some("working") => true,
                _ => streaming.load(Ordering::Acquire) > 0,
            }
        })
    }

    fn scenario(&self, rec: &Recorder, name: &str) {
        rec.phase(
            &format!("{}/{name}", self.agent),
            Truth::Judged(self.judge()),
        );
    }

    /// Waits until the turn is over: the truth says waiting.
    fn wait_waiting(&mut self) {
        let judge = self.judge();
        wait_screen(&mut self.api, "the end of the turn", |s| !judge(s));
    }

    fn screen(&mut self) -> String {
        let screen = self.api.call("pane.read", json!({"pane": "p1"}));
        screen["text"].as_str().unwrap_or("").to_string()
    }

    /// Asks for the scripted tool call and leaves its permission prompt waiting `d`.
    fn prompt_left_waiting(&mut self, d: Duration) {
        type_slowly(&mut self.api, "[tool] make a file");
        let asks = self.permission_prompt();
        wait_screen(&mut self.api, "the permission prompt", |t| t.contains(asks));
        hold(d);
    }

    fn permission_prompt(&self) -> &'static str {
        if self.agent == "claude" {
            "Do you want to proceed"
        } else {
            "Would you like to run"
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.env.herdr(&["server", "stop"]);
        real_agents::stop_codex_daemons(&self.env);
    }
}

/// Every scenario of one agent, in one session.
fn record_agent(agent: &'static str) {
    let mut s = Session::start(agent);
    let rec = Recorder::start(&s.env, &format!("{agent}/idle"), Truth::Judged(s.judge()));
    hold(Duration::from_secs(6));

    s.scenario(&rec, "plain-turn");
    type_slowly(&mut s.api, "say hello");
    wait_screen(&mut s.api, "the answer", |t| t.contains(TEXT_ANSWER));
    s.wait_waiting();
    hold(Duration::from_secs(4));

    s.scenario(&rec, "long-answer");
    type_slowly(&mut s.api, "[long] tell me more");
    wait_screen(&mut s.api, "the long answer", |t| t.contains(LONG_END));
    s.wait_waiting();
    hold(Duration::from_secs(4));

    // A command that runs for seconds (Claude Code runs `sleep` without asking; Codex
    // asks: approved after a while).
    s.scenario(&rec, "tool-sleep");
    type_slowly(&mut s.api, "[sleep] wait a little");
    let asks = s.permission_prompt();
    wait_screen(&mut s.api, "the tool", |t| {
        t.contains(TOOL_ANSWER) || t.contains(asks)
    });
    if !s.screen().contains(TOOL_ANSWER) {
        hold(Duration::from_secs(5));
        key(&mut s.api, "Enter");
    }
    wait_screen(&mut s.api, "the answer after the tool", |t| {
        t.contains(TOOL_ANSWER)
    });
    s.wait_waiting();
    hold(Duration::from_secs(4));

    s.scenario(&rec, "prompt-approved");
    s.prompt_left_waiting(Duration::from_secs(8));
    key(&mut s.api, "Enter");
    let ran = s.work.join("tool-ran");
    support::wait_until("the approved tool", || ran.exists());
    wait_screen(&mut s.api, "the prompt gone", |t| !t.contains(asks));
    s.wait_waiting();
    hold(Duration::from_secs(4));

    s.scenario(&rec, "prompt-rejected");
    s.prompt_left_waiting(Duration::from_secs(4));
    key(&mut s.api, "Escape");
    s.wait_waiting();
    hold(Duration::from_secs(5));

    s.scenario(&rec, "interrupted");
    type_slowly(&mut s.api, "[slow] take your time");
    wait_screen(&mut s.api, "work", |t| t.contains("esc to interrupt"));
    hold(Duration::from_secs(4));
    key(&mut s.api, "Escape");
    s.wait_waiting();
    hold(Duration::from_secs(5));

    s.scenario(&rec, "idle-after");
    hold(Duration::from_secs(15));
    write_corpus(agent, rec.finish());
}

fn record_claude() {
    record_agent("claude");
}

fn record_codex() {
    record_agent("codex");
}

/// Runs `command` at the shell prompt; working from when the shell shows its line (it
/// read it: before, nothing of the command can be seen, and a sample taken between the
/// line sent and its echo is waiting) until the screen shows `done` (printed by the
/// command when it ends).
fn shell_job(api: &mut Api, rec: &Recorder, name: &str, command: &str, done: &'static str) {
    // The start of the line: it fits on the prompt's row, and tells the jobs apart.
    let line: String = command.chars().take(40).collect();
    rec.phase(
        name,
        Truth::Judged(Arc::new(move |s: &str| {
            s.contains(&line) && !s.contains(done)
        })),
    );
    api.call("pane.submit", json!({"pane": "p1", "text": command}));
    wait_screen(api, done, |t| t.contains(done));
    rec.phase(&format!("{name}-after"), Truth::Waiting);
    hold(Duration::from_secs(3));
}

fn record_terminal() {
    let env = Env::new("corpus-terminal");
    ok(env.herdr(&["server", "start"]));
    let _client = env.client(150, 45);
    prompt(&env, "p1");
    let mut api = Api::connect(&env);
    let rec = Recorder::start(&env, "shell/prompt", Truth::Waiting);
    hold(Duration::from_secs(6));
    rec.phase("shell/typing", Truth::Waiting);
    type_slowly(&mut api, "echo typed by hand");
    hold(Duration::from_secs(3));
    // A build burning CPU without a word, then one printing as it goes, then one whose
    // work is done by child processes that print now and then.
    let quiet = "timeout 8 sh -c 'while :; do :; done'; echo build-1-$((40+2))";
    shell_job(&mut api, &rec, "build/quiet-cpu", quiet, "build-1-42");
    let printing =
        "for i in $(seq 1 40); do echo compiling crate $i; sleep 0.2; done; echo build-2-$((40+2))";
    shell_job(&mut api, &rec, "build/printing", printing, "build-2-42");
    let children = "for i in 1 2 3 4; do sh -c 'n=0; while [ $n -lt 2000000 ]; do n=$((n+1)); done'; echo step $i; done; echo build-3-$((40+2))";
    shell_job(&mut api, &rec, "build/children", children, "build-3-42");
    rec.phase("vim/open", Truth::Waiting);
    api.call(
        "pane.submit",
        json!({"pane": "p1", "text": "vim -u NONE -N notes.txt"}),
    );
    wait_screen(&mut api, "vim", |t| t.contains("notes.txt"));
    hold(Duration::from_secs(6));
    rec.phase("vim/typing", Truth::Waiting);
    key(&mut api, "i");
    type_slowly(&mut api, "a few words typed in vim");
    key(&mut api, "Escape");
    hold(Duration::from_secs(4));
    api.call("pane.submit", json!({"pane": "p1", "text": ":q!"}));
    rec.phase("shell/prompt-after", Truth::Waiting);
    hold(Duration::from_secs(6));
    write_corpus("terminal", rec.finish());
}
