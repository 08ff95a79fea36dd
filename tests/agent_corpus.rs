//! How right the any-agent classifier (`herdr::agent::activity`) is, on recorded real
//! sessions (`tests/data/agent-corpus/*.jsonl`, see `support::corpus`): the real Claude
//! Code and Codex against the mock API, without hooks, in scenarios that cover their
//! states; a plain shell, vim and builds. The replay runs with every `cargo test` and fails
//! when the classifier gets worse than the accuracy docs/agents.md reports.
//!
//! Re-recording (needs the real agents, see docs/agents.md):
//! `HERDR_CORPUS_RUN=3 cargo test --test agent_corpus -- --ignored --test-threads 1`.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdr::agent::activity::{Classifier, Verdict};
use serde_json::json;
use support::api::Api;
use support::corpus::{self, Recorder, Scenario, Truth};
use support::mock_api::{MockApi, LONG_END, TEXT_ANSWER, TOOL_ANSWER};
use support::{ok, prompt, real_agents, Env};

/// The share of samples the classifier must get right, per corpus file and over all of
/// them: the measured figures docs/agents.md reports, rounded down. Nearly all misses
/// are in the first second after the truth changed (the classifier needs two samples of
/// output to call it work, and half a second without to call it over).
const MIN_ACCURACY: &[(&str, f64)] = &[
    ("claude", 0.94),
    ("codex", 0.92),
    ("terminal", 0.94),
    ("all", 0.94),
];
/// The share it must get right from a second after each change of the truth on.
const MIN_SETTLED: f64 = 0.99;

/// Right and total samples.
#[derive(Default, Clone, Copy)]
struct Score {
    right: usize,
    total: usize,
}

impl Score {
    fn add(&mut self, right: bool) {
        self.total += 1;
        self.right += usize::from(right);
    }

    fn share(&self) -> f64 {
        self.right as f64 / self.total.max(1) as f64
    }
}

/// Runs the classifier over one file; scores by truth label, by scenario, and for the
/// misses, how long after the truth last changed they came.
struct Replay {
    by_label: BTreeMap<&'static str, Score>,
    by_scenario: BTreeMap<String, Score>,
    /// Misses within 1 s of a change of the truth, and later ones.
    near_change: usize,
    far: usize,
    /// The samples 1 s or more after a change of the truth.
    settled: Score,
    /// The first misses, for the report: scenario, ms since the truth changed, sample.
    misses: Vec<String>,
}

/// From this long after the truth changed, a sample counts as settled.
const SETTLED_MS: u64 = 1000;

fn replay(scenarios: &[Scenario]) -> Replay {
    let mut c = Classifier::default();
    let mut r = Replay {
        by_label: BTreeMap::new(),
        by_scenario: BTreeMap::new(),
        near_change: 0,
        far: 0,
        settled: Score::default(),
        misses: Vec::new(),
    };
    let mut last_truth = None;
    let mut since_change = 0u64;
    for sc in scenarios {
        for (sample, working) in &sc.samples {
            let said = c.push(*sample) == Verdict::Working;
            if last_truth != Some(*working) {
                since_change = 0;
                last_truth = Some(*working);
            } else {
                since_change += u64::from(sample.dt);
            }
            let label = if *working { "working" } else { "waiting" };
            r.by_label.entry(label).or_default().add(said == *working);
            r.by_scenario
                .entry(sc.name.clone())
                .or_default()
                .add(said == *working);
            if since_change >= SETTLED_MS {
                r.settled.add(said == *working);
            }
            if said != *working {
                if r.misses.len() < 60 {
                    r.misses.push(format!(
                        "{} +{since_change} ms, truth {label}: {sample:?}",
                        sc.name
                    ));
                }
                if since_change < SETTLED_MS {
                    r.near_change += 1;
                } else {
                    r.far += 1;
                }
            }
        }
    }
    r
}

/// What one recording says, for the report: its scores by truth, by scenario, and its
/// misses.
fn describe(name: &str, r: &Replay) -> String {
    let mut out = String::new();
    for (label, s) in &r.by_label {
        out += &format!("{name} {label}: {}/{}\n", s.right, s.total);
    }
    for (sc, s) in &r.by_scenario {
        out += &format!("  {sc}: {}/{}\n", s.right, s.total);
    }
    out += &format!(
        "  misses within 1 s of a change: {}, later: {}; settled: {}/{}\n",
        r.near_change, r.far, r.settled.right, r.settled.total
    );
    for m in &r.misses {
        out += &format!("    {m}\n");
    }
    out
}

/// The scores of one group of recordings (an agent's, or all of them).
#[derive(Default)]
struct Totals {
    by_label: BTreeMap<&'static str, Score>,
    settled: Score,
}

impl Totals {
    fn add(&mut self, r: &Replay) {
        for (label, s) in &r.by_label {
            let t = self.by_label.entry(label).or_default();
            t.right += s.right;
            t.total += s.total;
        }
        self.settled.right += r.settled.right;
        self.settled.total += r.settled.total;
    }

    fn all(&self) -> Score {
        let mut all = Score::default();
        for s in self.by_label.values() {
            all.right += s.right;
            all.total += s.total;
        }
        all
    }

    /// One line per truth, then the whole and the settled share, in percent.
    fn table(&self, group: &str) -> String {
        let pct = |s: &Score| format!("{}/{} = {:.1} %", s.right, s.total, 100.0 * s.share());
        let mut out = String::new();
        for (label, s) in &self.by_label {
            out += &format!("| {group} | {label} | {} |\n", pct(s));
        }
        out += &format!(
            "| {group} | all | {} | settled {} |\n",
            pct(&self.all()),
            pct(&self.settled)
        );
        out
    }
}

#[test]
fn the_classifier_is_as_right_as_reported_on_the_recorded_sessions() {
    let mut files: Vec<_> = std::fs::read_dir(corpus::dir())
        .expect("the corpus folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "the corpus: {files:?}");
    let mut report = String::new();
    let mut groups: BTreeMap<String, Totals> = BTreeMap::new();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let r = replay(&corpus::parse(&std::fs::read_to_string(&path).unwrap()));
        report += &describe(&name, &r);
        // `claude-2` is the second recording of claude.
        let group = name.split('-').next().unwrap_or(&name).to_string();
        groups.entry(group).or_default().add(&r);
        groups.entry("all".into()).or_default().add(&r);
    }
    let mut failed = Vec::new();
    for (group, t) in &groups {
        report += &t.table(group);
        let min = MIN_ACCURACY.iter().find(|(n, _)| n == group).map(|m| m.1);
        if min.is_none_or(|m| t.all().share() < m) {
            failed.push(format!("{group}: {:.4} < {min:?}", t.all().share()));
        }
        if t.settled.share() < MIN_SETTLED {
            failed.push(format!("{group}, settled: {:.4}", t.settled.share()));
        }
    }
    println!("{report}");
    assert!(failed.is_empty(), "{failed:?}\n{report}");
}

// ---- recording (ignored: needs the real agents; writes the corpus) ----

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

#[test]
#[ignore = "records the corpus: needs the real agents (docs/agents.md)"]
fn record_claude() {
    record_agent("claude");
}

#[test]
#[ignore = "records the corpus: needs the real agents (docs/agents.md)"]
fn record_codex() {
    record_agent("codex");
}

/// Runs `command` at the shell prompt; working until the screen shows `done` (printed
/// by the command when it ends).
fn shell_job(api: &mut Api, rec: &Recorder, name: &str, command: &str, done: &'static str) {
    rec.phase(
        name,
        Truth::Judged(Arc::new(move |s: &str| !s.contains(done))),
    );
    api.call("pane.submit", json!({"pane": "p1", "text": command}));
    wait_screen(api, done, |t| t.contains(done));
    rec.phase(&format!("{name}-after"), Truth::Waiting);
    hold(Duration::from_secs(3));
}

#[test]
#[ignore = "records the corpus (docs/agents.md)"]
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
