//! End-to-end with the real agents: Claude Code and Codex (as installed from npm, see
//! `support::real_agents`) run their real TUIs in herdr panes against a local mock of
//! their APIs (`support::mock_api`), and herdr must tell what they are doing — with
//! herdr's hooks installed and without (screen rules only). States are observed as users
//! and scripts see them: `pane wait --agent-state` and the `pane.agent` events.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::mock_api::{MockApi, LONG_END, TEXT_ANSWER, TOOL_ANSWER};
use support::real_agents::{self, Events};
use support::{json, ok, prompt, Env, Outer, Term};

/// A turn against the mock takes well under a second; the agents' start-up a few. This is
/// for the slowest machine.
const TURN: Duration = Duration::from_secs(30);

/// A real agent at its prompt in pane p1, watched by a client (so a finished turn reads
/// `idle`, not `done`) and by an event subscriber.
struct Agent {
    client: Term,
    events: Events,
    env: Env,
    mock: MockApi,
    work: PathBuf,
    /// The agent's process, once it is at its prompt.
    pid: Option<i32>,
}

impl Agent {
    /// Claude Code, with herdr's hooks installed or not.
    fn claude(name: &str, hooks: bool) -> Agent {
        Agent::claude_in(name, hooks, Outer::legacy(), None)
    }

    /// Claude Code, watched by a client in a terminal that answers as `outer`.
    fn claude_in(name: &str, hooks: bool, outer: Outer, term_program: Option<&str>) -> Agent {
        let env = Env::new(name);
        let mock = MockApi::start();
        let work = env.home().join("work");
        std::fs::create_dir_all(&work).unwrap();
        real_agents::claude(&env, &mock, &work);
        if let Some(program) = term_program {
            // The user's terminal says what it is (in the environment herdr was started
            // in, which its panes inherit).
            real_agents::profile(&env, &format!("export TERM_PROGRAM={program}\n"));
        }
        if hooks {
            ok(env.herdr(&["integration", "install", "claude"]));
        }
        let mut agent = Agent::start(env, mock, work, "claude", outer, 150);
        // Its input box and the hints below it: ready for a prompt.
        agent.wait_output("for shortcuts");
        agent.wait_state("idle", TURN);
        agent.pid = agent.pane()["pid"]
            .as_i64()
            .and_then(|shell| real_agents::foreground_pid(shell as i32));
        agent
    }

    /// Codex, with herdr's notify hook installed.
    fn codex(name: &str) -> Agent {
        Agent::codex_sized(name, 150)
    }

    /// Codex, watched by a client `cols` wide. Its user had a `notify` of their own, which
    /// herdr's hook runs after its report: it adds each turn to `~/notified.jsonl`.
    fn codex_sized(name: &str, cols: u16) -> Agent {
        let env = Env::new(name);
        let mock = MockApi::start();
        let work = env.home().join("work");
        std::fs::create_dir_all(&work).unwrap();
        real_agents::codex(&env, &mock, &work);
        let config = env.home().join(".codex/config.toml");
        let settings = std::fs::read_to_string(&config).unwrap();
        let own = r#"notify = ["sh", "-c", "printf '%s\n' \"$0\" >> \"$HOME/notified.jsonl\""]"#;
        std::fs::write(&config, format!("{own}\n{settings}")).unwrap();
        ok(env.herdr(&["integration", "install", "codex"]));
        let mut agent = Agent::start(env, mock, work, "codex", Outer::legacy(), cols);
        agent.wait_output("Ask Codex to do anything");
        agent.wait_state("idle", TURN);
        agent.pid = agent.pane()["pid"]
            .as_i64()
            .and_then(|shell| real_agents::foreground_pid(shell as i32));
        agent
    }

    fn start(
        env: Env,
        mock: MockApi,
        work: PathBuf,
        command: &str,
        outer: Outer,
        cols: u16,
    ) -> Agent {
        ok(env.herdr(&["server", "start"]));
        let events = Events::start(&env);
        let client = env.client_in(outer, cols, 45, &[]);
        prompt(&env, "p1");
        support::submit(&env, "p1", &format!("cd {} && {command}", work.display()));
        Agent {
            client,
            events,
            env,
            mock,
            work,
            pid: None,
        }
    }

    /// Waits until the pane's screen matches `regex`.
    fn wait_output(&self, regex: &str) {
        let out = self.env.herdr(&[
            "pane",
            "wait",
            "--pane",
            "p1",
            "--output",
            regex,
            "--timeout",
            &TURN.as_secs().to_string(),
        ]);
        assert!(
            out.status.success(),
            "{regex:?} never showed; the pane:\n{}\nthe mock was asked:\n{}",
            self.screen(),
            self.mock.summary()
        );
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.env.herdr(&["pane", "read", "--pane", "p1"]).stdout)
            .to_string()
    }

    /// Waits until the pane's agent state is `state`, for at most `timeout`.
    fn wait_state(&self, state: &str, timeout: Duration) {
        let out = self.env.herdr(&[
            "pane",
            "wait",
            "--pane",
            "p1",
            "--agent-state",
            state,
            "--timeout",
            &timeout.as_secs_f64().to_string(),
        ]);
        assert!(
            out.status.success(),
            "p1 was not {state} within {timeout:?}: {}; its states: {:?}; the pane:\n{}",
            self.pane()["agent_state"],
            self.events.states_since("p1", 0),
            self.screen()
        );
    }

    fn pane(&self) -> serde_json::Value {
        json(self.env.herdr(&["pane", "get", "--pane", "p1", "--json"]))
    }

    /// Types a prompt into the agent and submits it.
    fn ask(&self, text: &str) -> usize {
        let from = self.events.states("p1").len();
        type_and_enter(&self.env, "p1", text);
        from
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["pane", "keys", "--pane", "p1"];
        args.extend_from_slice(keys);
        ok(self.env.herdr(&args));
    }

    /// Waits until the states announced since the `from`-th include `want`, in order.
    fn wait_states(&self, from: usize, want: &[&str]) {
        self.events.wait_sequence("p1", from, want, TURN);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // The agent quits when its pane is hung up; it is gone before its HOME is.
        let _ = self.env.herdr(&["server", "stop"]);
        if let Some(pid) = self.pid {
            real_agents::wait_gone(pid, Duration::from_secs(10));
        }
        real_agents::stop_codex_daemons(&self.env);
    }
}

#[test]
fn claude_with_hooks_a_plain_turn_then_a_permission_prompt_blocked_at_once_and_approved() {
    let a = Agent::claude("real-claude-approve", true);
    assert_eq!(a.pane()["agent"], "claude");
    let from = a.ask("say hello");
    a.wait_output(TEXT_ANSWER);
    a.wait_states(from, &["working", "idle"]);
    a.wait_state("idle", TURN);

    let from = a.ask("[tool] make a file");
    a.wait_output("Do you want to proceed");
    // PermissionRequest comes as the prompt shows: blocked right away, not when Claude's
    // reminder comes 6 s later.
    a.wait_state("blocked", Duration::from_secs(1));
    // The user sees it on the sidebar, beside Claude's prompt.
    a.client.wait_text("! claude blocked p1");
    a.keys(&["Enter"]);
    a.wait_output(TOOL_ANSWER);
    a.wait_states(from, &["working", "blocked", "working", "idle"]);
    a.wait_state("idle", TURN);
    assert!(a.work.join("tool-ran").exists(), "the approved tool ran");
    assert_eq!(a.mock.turns(), ["text", "tool", "tool-result"]);
}

#[test]
fn claude_with_hooks_a_rejected_prompt_and_an_interrupted_turn_end_idle() {
    let a = Agent::claude("real-claude-esc", true);
    let from = a.ask("[tool] make a file");
    a.wait_output("Do you want to proceed");
    a.wait_state("blocked", TURN);
    // Esc rejects: Claude runs no hook at all, and waits for the next prompt.
    a.keys(&["Escape"]);
    a.wait_output("What should Claude do instead");
    a.wait_state("idle", TURN);
    assert!(
        !a.work.join("tool-ran").exists(),
        "the rejected tool did not run"
    );
    a.wait_states(from, &["working", "blocked", "idle"]);

    // Esc while it works: no Stop either.
    let from = a.ask("[slow] take your time");
    a.wait_state("working", TURN);
    a.wait_output("esc to interrupt");
    a.keys(&["Escape"]);
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "idle"]);
}

#[test]
fn claude_with_hooks_an_api_error_ends_the_turn_idle_with_the_error_shown() {
    let a = Agent::claude("real-claude-error", true);
    let from = a.ask("[auth-error] hello");
    a.wait_output("Invalid API key");
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "idle"]);
    let pane = a.pane();
    let error = pane["agent_error"].as_str().unwrap_or("");
    assert!(
        error.contains("authentication_failed") && error.contains("Invalid API key"),
        "{pane}"
    );
    // The next turn that works clears it.
    let from = a.ask("say hello");
    a.wait_output(TEXT_ANSWER);
    a.wait_states(from, &["working", "idle"]);
    assert_eq!(a.pane()["agent_error"], serde_json::Value::Null);
}

#[test]
fn claude_without_hooks_its_real_permission_prompt_reads_blocked_from_the_screen() {
    let a = Agent::claude("real-claude-screen", false);
    let from = a.ask("[tool] make a file");
    a.wait_output("Do you want to proceed");
    a.wait_state("blocked", TURN);
    a.keys(&["Enter"]);
    a.wait_output(TOOL_ANSWER);
    a.wait_state("idle", TURN);
    a.wait_states(from, &["blocked", "idle"]);
    assert!(a.work.join("tool-ran").exists(), "the approved tool ran");
}

#[test]
fn codex_a_plain_turn_is_working_then_idle_and_its_own_thread_is_the_session() {
    let a = Agent::codex("real-codex-plain");
    assert_eq!(a.pane()["agent"], "codex");
    let from = a.ask("say hello");
    a.wait_output(TEXT_ANSWER);
    a.wait_state("idle", TURN);
    // Codex also runs a hidden thread that titles the session, and tells its notify when
    // that one is done, before the turn is: neither an idle mid-turn nor its session.
    a.wait_states(from, &["working", "idle"]);
    assert_eq!(a.events.states_since("p1", from), ["working", "idle"]);
    assert_eq!(a.mock.turns(), ["text"]);
    let thread = a
        .mock
        .requests()
        .iter()
        .find(|r| r.turn == "text")
        .and_then(|r| {
            r.body["client_metadata"]["thread_id"]
                .as_str()
                .map(str::to_string)
        })
        .expect("the turn's thread");
    ok(a.env.herdr(&["server", "stop"]));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.env.session_file()).unwrap()).unwrap();
    let text = saved.to_string();
    assert!(
        text.contains(&format!("\"agent_session\":{{\"id\":\"{thread}\"}}")),
        "the pane's own thread {thread} is saved: {text}"
    );
    // And resumed: the restored pane runs `codex resume <thread>`, which shows the turn.
    ok(a.env.herdr(&["server", "start"]));
    a.wait_output(TEXT_ANSWER);
    assert!(!a.screen().contains("No saved session"), "{}", a.screen());
}

#[test]
fn codex_its_approval_prompt_is_blocked_and_once_approved_it_works_then_idles() {
    let a = Agent::codex("real-codex-tool");
    let from = a.ask("[tool] make a file");
    a.wait_output("Would you like to run");
    // Its PermissionRequest hook comes as the prompt shows: blocked at once.
    a.wait_state("blocked", Duration::from_secs(1));
    a.client.wait_text("! codex blocked p1");
    // Mid-turn (notify comes only at its end): the hooks named the pane's thread.
    let thread = turn_thread(&a.mock, "tool");
    assert_eq!(sessions(&a.env), [("p1".into(), serde_json::json!(thread))]);
    answer_codex(&a.env, "p1", "Enter");
    a.wait_output(TOOL_ANSWER);
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "blocked", "working", "idle"]);
    assert!(a.work.join("tool-ran").exists(), "the approved tool ran");
}

#[test]
fn codex_a_rejected_prompt_and_an_interrupted_turn_end_idle() {
    let a = Agent::codex("real-codex-esc");
    let from = a.ask("[tool] make a file");
    a.wait_output("Would you like to run");
    a.wait_state("blocked", TURN);
    answer_codex(&a.env, "p1", "Escape");
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "blocked", "idle"]);
    assert!(
        !a.work.join("tool-ran").exists(),
        "the rejected tool did not run"
    );

    let from = a.ask("[slow] take your time");
    a.wait_state("working", TURN);
    a.keys(&["Escape"]);
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "idle"]);
}

/// Answers Codex's approval prompt in `pane` with `key`, pressed again while the prompt
/// still shows a second later: Codex 0.171 was seen to lose a key that came within
/// moments of the prompt showing, sooner than a person reads it (and herdr says
/// `blocked` that soon now that Codex's hook tells it).
fn answer_codex(env: &Env, pane: &str, key: &str) {
    let end = std::time::Instant::now() + TURN;
    loop {
        ok(env.herdr(&["pane", "keys", "--pane", pane, key]));
        let pressed = std::time::Instant::now();
        while pressed.elapsed() < Duration::from_secs(1) {
            if !ok(env.herdr(&["pane", "read", "--pane", pane])).contains("esc to cancel") {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            std::time::Instant::now() < end,
            "{pane}: the prompt never took {key}"
        );
    }
}

/// Types `text` into the agent in `pane` and, once its input box shows it, presses Enter,
/// as a person does. (Both agents take an Enter that comes soon after fast keys, as seen
/// from them, for a new line in a paste: on a loaded machine `pane submit`'s pause between
/// the text and Enter can shrink to nothing by the time they read.)
fn type_and_enter(env: &Env, pane: &str, text: &str) {
    ok(env.herdr(&["pane", "send", "--pane", pane, text]));
    let shown: String = text
        .chars()
        .flat_map(|c| {
            let special = "\\^$.|?*+()[]{}".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect();
    // Codex draws `› text`, Claude Code `❯` and a no-break space.
    support::wait_output(env, pane, &format!("[›❯][ \u{a0}]{shown}"));
    ok(env.herdr(&["pane", "keys", "--pane", pane, "Enter"]));
}

/// The thread of the first request of the mock's `turn` kind, as Codex sent it.
fn turn_thread(mock: &MockApi, turn: &str) -> String {
    mock.requests()
        .iter()
        .find(|r| r.turn == turn)
        .and_then(|r| {
            r.body["client_metadata"]["thread_id"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no {turn} turn:\n{}", mock.summary()))
}

/// The thread of the turn whose prompt held `marker`, as Codex sent it to the API.
fn codex_thread(mock: &MockApi, marker: &str) -> String {
    mock.requests()
        .iter()
        .find(|r| r.turn == "text" && r.body["input"].to_string().contains(marker))
        .and_then(|r| {
            r.body["client_metadata"]["thread_id"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no turn asked {marker:?}:\n{}", mock.summary()))
}

/// The session `agent list` shows for each pane.
fn sessions(env: &Env) -> Vec<(String, serde_json::Value)> {
    let list = json(env.herdr(&["agent", "list", "--json"]));
    let rows = list.as_array().cloned().unwrap_or_default();
    rows.iter()
        .map(|a| {
            (
                a["pane"].as_str().unwrap_or("").to_string(),
                a["session_id"].clone(),
            )
        })
        .collect()
}

/// Runs Codex in a new pane split from p1, in the agent's folder; its id.
fn second_codex(a: &Agent) -> String {
    let p2 = ok(a.env.herdr(&["pane", "split"]));
    prompt(&a.env, &p2);
    start_codex(a, &p2, &format!("cd {} && codex", a.work.display()));
    p2
}

/// Runs `command` in the shell of `pane`, and waits for the Codex it starts to be at its
/// prompt.
fn start_codex(a: &Agent, pane: &str, command: &str) {
    support::submit(&a.env, pane, command);
    support::wait_output(&a.env, pane, "Ask Codex to do anything");
    let timeout = TURN.as_secs().to_string();
    let idle = [
        "pane",
        "wait",
        "--pane",
        pane,
        "--agent-state",
        "idle",
        "--timeout",
        &timeout,
    ];
    ok(a.env.herdr(&idle));
}

#[test]
fn codex_in_two_panes_each_turn_reaches_its_own_pane_also_after_a_restart() {
    let mut a = Agent::codex("real-codex-two");
    // The second Codex finds the background server the first one started: both run their
    // turns there, and its notify carries p1's environment.
    let p2 = second_codex(&a);
    let (from1, from2) = (a.events.states("p1").len(), a.events.states(&p2).len());
    type_and_enter(&a.env, &p2, "[p2] say hello");
    support::wait_output(&a.env, &p2, TEXT_ANSWER);
    a.events
        .wait_sequence(&p2, from2, &["working", "idle"], TURN);
    let t2 = codex_thread(&a.mock, "[p2]");
    support::wait_until("p2's thread saved for p2", || {
        sessions(&a.env).contains(&(p2.clone(), serde_json::json!(t2)))
    });
    type_and_enter(&a.env, "p1", "[p1] say hello");
    a.wait_output(TEXT_ANSWER);
    a.wait_states(from1, &["working", "idle"]);
    let t1 = codex_thread(&a.mock, "[p1]");
    assert_ne!(t1, t2);
    support::wait_until("p1's thread saved for p1", || {
        sessions(&a.env)
            == [
                ("p1".into(), serde_json::json!(t1)),
                (p2.clone(), serde_json::json!(t2)),
            ]
    });
    // A permission prompt in p2 blocks p2 at once (its hook runs in the server p1's
    // Codex started, with p1's environment), and p1 hears nothing of it.
    let (from1, from2) = (a.events.states("p1").len(), a.events.states(&p2).len());
    type_and_enter(&a.env, &p2, "[tool] make a file");
    support::wait_output(&a.env, &p2, "Would you like to run");
    let blocked = [
        "pane",
        "wait",
        "--pane",
        &p2,
        "--agent-state",
        "blocked",
        "--timeout",
        "1",
    ];
    ok(a.env.herdr(&blocked));
    answer_codex(&a.env, &p2, "Enter");
    a.events
        .wait_sequence(&p2, from2, &["working", "blocked", "working", "idle"], TURN);
    assert_eq!(a.events.states_since("p1", from1), Vec::<String>::new());
    assert_eq!(a.pane()["agent_state"], "idle");

    // After a restart both resume their own threads; the background server lives on,
    // now a child of init, and still reports for both.
    ok(a.env.herdr(&["server", "stop"]));
    ok(a.env.herdr(&["server", "start"]));
    a.events = Events::start(&a.env);
    // Watched again (a turn that ends unseen is "done").
    a.client = a.env.client_in(Outer::legacy(), 150, 45, &[]);
    for pane in ["p1", p2.as_str()] {
        support::wait_output(&a.env, pane, TEXT_ANSWER);
        let end = std::time::Instant::now() + TURN;
        loop {
            let got = json(a.env.herdr(&["pane", "get", "--pane", pane, "--json"]));
            if got["agent"] == "codex" && got["agent_state"] == "idle" {
                break;
            }
            let screen = ok(a.env.herdr(&["pane", "read", "--pane", pane]));
            assert!(
                std::time::Instant::now() < end,
                "{pane}: the resumed Codex is not at its prompt: {got}\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(
        sessions(&a.env),
        [
            ("p1".into(), serde_json::json!(t1)),
            (p2.clone(), serde_json::json!(t2))
        ],
        "each resumed pane knows its thread"
    );
    // A new Codex in p2, on a new thread whose first report comes from the server under
    // init: found by its prompt, saved for p2; p1 hears nothing and keeps its own.
    type_and_enter(&a.env, &p2, "/quit");
    support::wait_output(&a.env, &p2, "^PROMPT> ?$");
    start_codex(&a, &p2, "clear; codex");
    let (from1, from2) = (a.events.states("p1").len(), a.events.states(&p2).len());
    type_and_enter(&a.env, &p2, "[p2] fresh start");
    a.events
        .wait_sequence(&p2, from2, &["working", "idle"], TURN);
    // The user's own notify, which herdr's hook runs once its report was answered.
    let notified = a.env.home().join("notified.jsonl");
    support::wait_until("the turn's notify done", || {
        // The turn's own, not its title thread's (which quotes the prompt).
        std::fs::read_to_string(&notified)
            .is_ok_and(|t| t.contains(r#""input-messages":["[p2] fresh start"]"#))
    });
    let t3 = codex_thread(&a.mock, "[p2] fresh");
    assert_ne!(t3, t2);
    assert_eq!(
        sessions(&a.env),
        [
            ("p1".into(), serde_json::json!(t1)),
            (p2.clone(), serde_json::json!(t3))
        ],
        "the new thread saved for p2, p1 keeps its own; the server log:\n{}\np2:\n{}",
        std::fs::read_to_string(a.env.server_log()).unwrap_or_default(),
        ok(a.env.herdr(&["pane", "read", "--pane", &p2]))
    );
    assert_eq!(
        a.events.states_since("p1", from1),
        Vec::<String>::new(),
        "p2's turn said nothing about p1"
    );
}

/// Codex hides its status line while its answer streams, and in a narrow pane the line is
/// cut short: neither may read as idle before the turn is over.
fn codex_streams_a_long_answer_working_until_it_is_done(name: &str, cols: u16) {
    let a = Agent::codex_sized(name, cols);
    if cols < 60 {
        assert_eq!(a.pane()["cols"], cols, "no sidebar: {}", a.pane());
    }
    let from = a.ask("[long] tell me a story");
    a.wait_output(LONG_END);
    a.wait_state("idle", TURN);
    a.wait_states(from, &["working", "idle"]);
    assert_eq!(
        a.events.states_since("p1", from),
        ["working", "idle"],
        "no idle before the answer is done; the pane:\n{}",
        a.screen()
    );
}

#[test]
fn codex_streaming_a_long_answer_is_working_until_it_is_done() {
    codex_streams_a_long_answer_working_until_it_is_done("real-codex-long", 150);
}

#[test]
fn codex_in_a_narrow_pane_is_working_until_its_answer_is_done() {
    codex_streams_a_long_answer_working_until_it_is_done("real-codex-narrow", 27);
}

#[test]
fn claude_takes_shift_enter_as_a_new_line_in_its_prompt() {
    // The user's terminal speaks the kitty keyboard protocol (the harness plays it), and
    // Claude asks its pane for kitty keys: Shift+Enter reaches it told apart from Enter.
    // (Claude Code 2.1 asks only in a terminal it recognises from its environment, here
    // ghostty's TERM_PROGRAM, which panes inherit from where herdr was started; with none,
    // it takes Shift+Enter as Enter in any multiplexer.)
    let mut a = Agent::claude_in("real-claude-keys", false, Outer::kitty(), Some("ghostty"));
    a.client.send(b"line one");
    a.wait_output("line one");
    // Shift+Enter, as a kitty terminal reports it.
    a.client.send(b"\x1b[13;2u");
    a.client.send(b"line two");
    a.wait_output("line two");
    let screen = a.screen();
    let row = |text: &str| screen.lines().position(|l| l.contains(text));
    let (one, two) = (row("line one"), row("line two"));
    assert!(
        one.is_some() && two == one.map(|r| r + 1),
        "two lines in the prompt box:\n{screen}"
    );
    assert!(
        a.mock.turns().is_empty(),
        "nothing was submitted: {:?}",
        a.mock.turns()
    );
    // Enter alone submits both lines as one prompt.
    a.client.send(b"\r");
    a.wait_output(TEXT_ANSWER);
    let asked: Vec<String> = a
        .mock
        .requests()
        .iter()
        .filter(|r| r.turn == "text")
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        asked.iter().any(|b| b.contains("line one\\nline two")),
        "one prompt of two lines: {asked:?}"
    );
}
