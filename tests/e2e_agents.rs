//! End-to-end: agents detected in panes, hook reports, resume after a restart.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{json, ok, pane_list, prompt, wait_until, Env};

/// Installs a fake `claude` on the panes' PATH whose script runs `body` (after recording
/// how it was started), then idles like an agent waiting for input.
fn fake_claude_with(env: &Env, body: &str) -> std::path::PathBuf {
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join("claude");
    // Agents are found on PATH, as a resume command types just `claude`.
    let profile = env.home().join(".bash_profile");
    let rc = std::fs::read_to_string(&profile).unwrap();
    if !rc.contains("$HOME/bin") {
        std::fs::write(&profile, format!("{rc}PATH=\"$HOME/bin:$PATH\"\n")).unwrap();
    }
    let script = format!(
        "#!/bin/bash\necho \"argv=$*|cwd=$PWD\" >> \"$HOME/claude-runs.txt\"\n{body}\n\
         echo fake-claude-ready\nwhile :; do sleep 1; done\n"
    );
    executable(&path, &script);
    path
}

/// A fake `claude` that reports like the real hook would.
fn fake_claude(env: &Env, session_id: &str) -> std::path::PathBuf {
    let report = format!(
        "{} agent report --source herdr:claude --agent claude --session-id {session_id} --state working --seq 1",
        support::BIN
    );
    fake_claude_with(env, &report)
}

fn wait_agent_state(env: &Env, pane: &str, state: &str) {
    ok(env.herdr(&[
        "pane",
        "wait",
        "--pane",
        pane,
        "--agent-state",
        state,
        "--timeout",
        "20",
    ]));
}

/// A bash script named like the agent `name` in the test's bin folder, running `body`.
fn agent_script(env: &Env, name: &str, body: &str) -> std::path::PathBuf {
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join(name);
    executable(&path, &format!("#!/bin/bash\n{body}\n"));
    path
}

/// Writes an executable script.
fn executable(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn runs(env: &Env) -> Vec<String> {
    std::fs::read_to_string(env.home().join("claude-runs.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Starts the server and runs `command` in pane p1 from a new folder `dir`; returns it.
fn start_in(env: &Env, dir: &str, command: &str) -> std::path::PathBuf {
    let work = env.home().join(dir);
    std::fs::create_dir_all(&work).unwrap();
    ok(env.herdr(&["server", "start"]));
    prompt(env, "p1");
    support::submit(env, "p1", &format!("cd {} && {command}", work.display()));
    work
}

#[test]
fn detected_reported_and_resumed_once_after_a_restart() {
    let env = Env::new("agents");
    let claude = fake_claude(&env, "sess-42");
    let work = start_in(&env, "work", &format!("{} --model opus", claude.display()));
    support::wait_output(&env, "p1", "fake-claude-ready");
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["agent"], "claude", "{p1}");
    assert_eq!(p1["agent_state"], "working");
    wait_agent_state(&env, "p1", "working");

    // A report from outside the pane changes nothing.
    let out = env.herdr(&[
        "agent",
        "report",
        "--pane",
        "p1",
        "--source",
        "herdr:claude",
        "--agent",
        "claude",
        "--state",
        "idle",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not come from a process of that pane")
    );

    // A second pane runs the same agent session.
    let p2 = ok(env.herdr(&["pane", "split"]));
    prompt(&env, &p2);
    support::submit(&env, &p2, &claude.display().to_string());
    support::wait_output(&env, &p2, "fake-claude-ready");
    assert_eq!(runs(&env).len(), 2);

    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
    wait_until("the resumed agent ran", || runs(&env).len() >= 3);
    // Give a second resume the chance to appear if it wrongly would.
    support::wait_output(&env, "p1", "fake-claude-ready");
    let all = runs(&env);
    assert_eq!(all.len(), 3, "resumed exactly once: {all:?}");
    assert_eq!(
        all[2],
        format!("argv=--model opus --resume sess-42|cwd={}", work.display()),
        "the launch flag that still applies is kept"
    );
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["agent"], "claude");
}

#[test]
fn only_official_sources_resume() {
    let env = Env::new("agents-src");
    // Reports come from a third party: state is fine, but nothing may run at restore.
    let report = format!(
        "{} agent report --source plugin:x --agent claude --session-id evil --state blocked",
        support::BIN
    );
    let path = fake_claude_with(&env, &report);
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    support::submit(&env, "p1", &path.display().to_string());
    support::wait_output(&env, "p1", "fake-claude-ready");
    let p1: Value = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["agent_state"], "blocked");
    // The user sees it: a badge on the tab, a mark on the workspace in the sidebar.
    let t = env.client(140, 30);
    t.wait_text("[blocked]");
    t.wait("the workspace is marked", |t| {
        t.rows().iter().any(|r| r.starts_with(" 1!"))
    });
    t.wait("the status line counts it", |t| {
        t.row(29).contains("1 agent waiting")
    });
    drop(t);
    ok(env.herdr(&["server", "stop"]));
    let saved = std::fs::read_to_string(env.session_file()).unwrap();
    assert!(
        !saved.contains("evil"),
        "a third party's session ref was saved: {saved}"
    );
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    // Anything typed at restore would run before this.
    support::submit(&env, "p1", "echo checked-$((1+1))");
    support::wait_output(&env, "p1", "checked-2");
    assert_eq!(runs(&env).len(), 1, "nothing ran at restore");
}

#[test]
fn claude_integration_installs_hooks_that_report_and_resume() {
    let env = Env::new("agents-hook");
    let settings = env.home().join(".claude/settings.json");
    ok(env.herdr(&["integration", "install", "claude"]));
    assert!(ok(env.herdr(&["integration", "status", "claude"])).contains("claude: installed"));
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        installed["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
        "herdr agent hook claude UserPromptSubmit"
    );
    // What Claude Code does on a prompt: run the hook with the event's JSON on stdin.
    let hook = format!(
        "echo '{{\"session_id\":\"hook-sess\",\"hook_event_name\":\"UserPromptSubmit\"}}' | {} agent hook claude UserPromptSubmit",
        support::BIN
    );
    let claude = fake_claude_with(&env, &hook);
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    support::submit(&env, "p1", &claude.display().to_string());
    wait_agent_state(&env, "p1", "working");
    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
    wait_until("the resume ran", || {
        runs(&env)
            .iter()
            .any(|r| r.starts_with("argv=--resume hook-sess"))
    });
    // Outside herdr the hook does nothing and never fails the agent.
    let out = std::process::Command::new(support::BIN)
        .args(["agent", "hook", "claude", "Stop"])
        .env_clear()
        .env("HOME", env.home())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    ok(env.herdr(&["integration", "uninstall", "claude"]));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{}\n");
}

/// The user's own settings, as a person or another tool wrote them: herdr's command shares
/// an entry with the user's, numbers are written in ways serde_json would not write them,
/// a key is there twice, and the file is readable by all.
const USER_SETTINGS: &str = r#"{
  "cleanupPeriodDays": 1e2,
  "big": 12345678901234567890,
  "bigger": 98765432109876543210987654321,
  "model": "sonnet",
  "model": "opus",
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          },
          {
            "type": "command",
            "command": "herdr agent hook claude Stop"
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn claude_integration_edits_only_what_is_herdrs_in_the_users_settings() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new("agents-settings");
    let settings = env.home().join(".claude/settings.json");
    let backup = env.home().join(".claude/settings.json.herdr-backup");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, USER_SETTINGS).unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
    let mode = || std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777;

    ok(env.herdr(&["integration", "install", "claude"]));
    let installed = read(&settings);
    // herdr's entries go after the user's last event, and every byte around them stays.
    let (before, after) = USER_SETTINGS.split_at(USER_SETTINGS.rfind("    ]").unwrap() + 5);
    assert!(
        installed.starts_with(before) && installed.ends_with(after),
        "{installed}"
    );
    assert!(installed.contains("herdr agent hook claude UserPromptSubmit"));
    assert_eq!((read(&backup).as_str(), mode()), (USER_SETTINGS, 0o644));
    assert!(ok(env.herdr(&["integration", "install", "claude"])).contains("already"));
    assert_eq!(read(&settings), installed);

    ok(env.herdr(&["integration", "uninstall", "claude"]));
    let herdrs = r#",
          {
            "type": "command",
            "command": "herdr agent hook claude Stop"
          }"#;
    assert_eq!(read(&settings), USER_SETTINGS.replace(herdrs, ""));
    assert_eq!((read(&backup), mode()), (installed, 0o644));

    // A file herdr cannot read is named, explained and left alone.
    std::fs::write(&settings, "{\"model\": \"opus\",}").unwrap();
    let out = env.herdr(&["integration", "install", "claude"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&settings.display().to_string()) && err.contains("not valid JSON"),
        "{err}"
    );
    assert_eq!(read(&settings), "{\"model\": \"opus\",}");
}

#[test]
fn an_agent_without_hooks_or_rules_is_working_while_it_prints_then_done_until_seen() {
    let env = Env::new("agents-fallback");
    // opencode has no screen rules: its output activity is all herdr has. Prints for a
    // while, then waits quietly like an agent at its prompt.
    let agent = agent_script(&env, "opencode", "for i in $(seq 1 30); do echo thinking $i; sleep 0.1; done\necho agent-waiting\nwhile :; do sleep 1; done");
    ok(env.herdr(&["server", "start"]));
    let mut events = std::process::Command::new(support::BIN)
        .env_clear()
        .envs(env.vars())
        .args(["--session", &env.session, "events", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    prompt(&env, "p1");
    support::submit(&env, "p1", &agent.display().to_string());
    wait_agent_state(&env, "p1", "working");
    assert_eq!(
        json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]))["agent"],
        "opencode"
    );
    support::wait_output(&env, "p1", "agent-waiting");
    // Nobody was looking when it finished: done, until a client shows the pane.
    wait_agent_state(&env, "p1", "done");
    let t = env.client(140, 30);
    t.wait_text("○ opencode idle p1");
    wait_agent_state(&env, "p1", "idle");
    // In a split, the pane's border carries the badge too.
    ok(env.herdr(&["pane", "split", "--pane", "p1", "--direction", "down"]));
    t.wait_text("─ opencode idle ─");
    // Subscribers heard every change, in order.
    events.kill().unwrap();
    let printed = String::from_utf8(events.wait_with_output().unwrap().stdout).unwrap();
    let states: Vec<String> = printed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "pane.agent")
        .map(|e| {
            format!(
                "{}:{}",
                e["agent"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        states,
        ["opencode:working", "opencode:done", "opencode:idle"],
        "{printed}"
    );
}

#[test]
fn an_agent_without_hooks_or_rules_burning_cpu_silently_is_working_and_reading_its_terminal_idle() {
    let env = Env::new("agents-sampled");
    // kimi has no screen rules: what the kernel shows of it is all herdr has. It waits in
    // a read of its terminal; told "burn", it burns CPU without printing a thing until
    // the test lets it stop.
    let stop = env.home().join("stop-burning");
    let agent = agent_script(
        &env,
        "kimi",
        &format!(
            "echo agent-ready\nwhile read -r line; do\n  if [ \"$line\" = burn ]; then\n    \
             while [ ! -e {stop} ]; do :; done\n    echo burnt\n  fi\ndone",
            stop = stop.display()
        ),
    );
    ok(env.herdr(&["server", "start"]));
    let t = env.client(140, 30);
    prompt(&env, "p1");
    support::submit(&env, "p1", &agent.display().to_string());
    support::wait_output(&env, "p1", "agent-ready");
    wait_agent_state(&env, "p1", "idle");
    let pane = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(pane["agent"], "kimi", "{pane}");
    t.wait_text("○ kimi idle p1");

    support::submit(&env, "p1", "burn");
    wait_agent_state(&env, "p1", "working");
    t.wait_text("● kimi working p1");
    // No output at all: the CPU said so.
    let signals =
        support::api::Api::connect(&env).call("pane.signals", serde_json::json!({"pane": "p1"}));
    assert_eq!(signals["sampled"], "working", "{signals}");

    std::fs::write(&stop, "").unwrap();
    support::wait_output(&env, "p1", "burnt");
    wait_agent_state(&env, "p1", "idle");
    t.wait_text("○ kimi idle p1");
}

/// A fake Codex: records how it ran, shows Codex's working status line for a while, asks
/// for an approval, and when the turn ends runs the `notify` command of its config.toml
/// with the turn's JSON, as Codex does.
const FAKE_CODEX: &str = r#"#!/usr/bin/env python3
import json, os, subprocess, sys, time, tomllib
with open(os.path.expanduser("~/codex-runs.txt"), "a") as f:
    f.write("argv=%s|cwd=%s\n" % (" ".join(sys.argv[1:]), os.getcwd()))
if "resume" in sys.argv:
    print("codex-resumed", flush=True)
    while True:
        time.sleep(1)
for i in range(40):
    print("\r\u2022 Working (%ds \u2022 esc to interrupt)" % i, end="", flush=True)
    time.sleep(0.1)
print("\nWould you like to run the following command?\n  $ make test\n> 1. Yes, proceed\n  2. No, and tell Codex what to do differently", flush=True)
sys.stdin.readline()
print("\x1b[2J\x1b[Hran make test\nWould you like me to make the tests pass as well?", flush=True)
with open(os.path.expanduser("~/.codex/config.toml"), "rb") as f:
    notify = tomllib.load(f).get("notify")
payload = json.dumps({"type": "agent-turn-complete", "thread-id": "th-7", "turn-id": "1", "cwd": os.getcwd()})
if notify:
    subprocess.run(notify + [payload])
print("codex-turn-done", flush=True)
while True:
    time.sleep(1)
"#;

#[test]
fn codex_screen_rules_tell_its_state_and_its_notify_hook_makes_it_resume() {
    let env = Env::new("agents-codex");
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let codex = bin.join("codex");
    executable(&codex, FAKE_CODEX);
    // The hook is `herdr …`, found on PATH as after an install.
    std::os::unix::fs::symlink(support::BIN, bin.join("herdr")).unwrap();
    let profile = env.home().join(".bash_profile");
    let rc = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(&profile, format!("{rc}PATH=\"$HOME/bin:$PATH\"\n")).unwrap();
    // The user's own config, with a notify program of their own that must keep working.
    let mine = env.home().join("my-notify.sh");
    executable(&mine, "#!/bin/sh\necho \"$1\" > \"$HOME/my-notify.txt\"\n");
    let config = env.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let original = format!(
        "# my codex settings\nmodel = \"o3\" # default\nnotify = [\"{}\"]\n\n[profiles.fast]\nmodel = \"mini\"\n",
        mine.display()
    );
    std::fs::write(&config, &original).unwrap();
    ok(env.herdr(&["integration", "install", "codex"]));
    assert!(ok(env.herdr(&["integration", "status", "codex"])).contains("codex: installed"));

    let work = start_in(&env, "proj", "codex -m o3 'write the tests'");
    // No hooks for these: the screen rules tell them.
    wait_agent_state(&env, "p1", "working");
    wait_agent_state(&env, "p1", "blocked");
    support::submit(&env, "p1", "1");
    support::wait_output(&env, "p1", "codex-turn-done");
    // The turn ended while nobody looked.
    wait_agent_state(&env, "p1", "done");
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["agent"], "codex", "{p1}");
    wait_until("the user's own notify ran", || {
        std::fs::read_to_string(env.home().join("my-notify.txt"))
            .is_ok_and(|t| t.contains("\"thread-id\": \"th-7\""))
    });

    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
    support::wait_output(&env, "p1", "codex-resumed");
    let runs: Vec<String> = std::fs::read_to_string(env.home().join("codex-runs.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        runs,
        [
            format!("argv=-m o3 write the tests|cwd={}", work.display()),
            format!("argv=-m o3 resume th-7|cwd={}", work.display()),
        ],
        "resumed once, in its folder, with its model and without the old prompt"
    );
    ok(env.herdr(&["integration", "uninstall", "codex"]));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
}

#[test]
fn a_resume_whose_shell_cannot_start_leaves_the_session_to_the_next_pane() {
    let mut env = Env::new("agents-claim");
    let claude = fake_claude(&env, "sess-9");
    start_in(&env, "w", &claude.display().to_string());
    support::wait_output(&env, "p1", "fake-claude-ready");
    let p2 = ok(env.herdr(&["pane", "split"]));
    prompt(&env, &p2);
    support::submit(&env, &p2, &claude.display().to_string());
    support::wait_output(&env, &p2, "fake-claude-ready");
    ok(env.herdr(&["server", "stop"]));
    // The first pane to resume sess-9 fails to start: the claim is released, so the
    // other pane referencing it resumes it.
    env.extra_vars
        .push(("HERDR_TEST_FAULT".into(), "resume-spawn-fails-once".into()));
    ok(env.herdr(&["server", "start"]));
    wait_until("the other pane resumed", || {
        runs(&env)
            .iter()
            .any(|r| r.starts_with("argv=--resume sess-9"))
    });
    support::wait_output(&env, &p2, "fake-claude-ready");
    let panes = support::pane_list(&env);
    assert_eq!(panes.len(), 1, "the pane that failed is gone: {panes:?}");
    assert_eq!(runs(&env).len(), 3, "resumed once");
}

#[test]
fn agent_list_finds_the_agent_that_waits_with_its_session_and_since_when() {
    let env = Env::new("agent-list");
    let report = |state: &str, seq: u32| {
        format!(
            "{} agent report --source herdr:claude --agent claude --session-id sess-7 --state {state} --seq {seq}",
            support::BIN
        )
    };
    let body = format!(
        "{}\nread -r line\n{}\necho asked",
        report("working", 1),
        report("blocked", 2)
    );
    let claude = fake_claude_with(&env, &body);
    let work = start_in(&env, "proj", &claude.display().to_string());
    wait_agent_state(&env, "p1", "working");
    let p2 = ok(env.herdr(&["pane", "split"]));
    prompt(&env, &p2);

    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    support::submit(&env, "p1", "go");
    wait_agent_state(&env, "p1", "blocked");
    let listed = json(env.herdr(&["agent", "list", "--json"]));
    let agents = listed.as_array().expect("a list");
    assert_eq!(
        agents.len(),
        1,
        "only the agent pane, not the shell: {listed}"
    );
    let a = &agents[0];
    assert_eq!(a["pane"], "p1", "{a}");
    assert_eq!(a["agent"], "claude", "{a}");
    assert_eq!(a["state"], "blocked", "{a}");
    assert_eq!(a["session_id"], "sess-7", "{a}");
    assert_eq!(a["cwd"], work.display().to_string(), "{a}");
    assert_eq!(a["workspace"], "w1", "{a}");
    assert_eq!(a["tab"], "t1", "{a}");
    let since = a["since_ms"].as_u64().expect("since_ms");
    assert!(
        since + 1000 >= before,
        "blocked since the report: {since} < {before}"
    );
    assert!(a["for_secs"].as_u64().is_some(), "{a}");

    let text = ok(env.herdr(&["agent", "list", "--state", "blocked"]));
    for part in ["p1", "claude", "blocked", "for ", "w1/t1", "session sess-7"] {
        assert!(text.contains(part), "{part:?} missing from {text:?}");
    }
    assert_eq!(ok(env.herdr(&["agent", "list", "--state", "working"])), "");
    // A live handoff keeps the state and since when.
    ok(env.herdr(&["server", "handoff"]));
    let after = json(env.herdr(&["agent", "list", "--json"]));
    assert_eq!(after[0]["state"], "blocked", "{after}");
    assert_eq!(after[0]["since_ms"], since, "{after}");

    let bad = env.herdr(&["agent", "list", "--state", "asleep"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("asleep"));
}

#[test]
fn an_agent_that_is_the_panes_own_program_is_detected() {
    let env = Env::new("agent-leader");
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let codex = bin.join("codex");
    executable(
        &codex,
        "#!/bin/bash\necho fake-codex-ready\nwhile :; do sleep 1; done\n",
    );
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    let p2 = ok(env.herdr(&["pane", "split", "--", &codex.display().to_string()]));
    support::wait_output(&env, &p2, "fake-codex-ready");
    wait_until("the pane's own program detected as codex", || {
        json(env.herdr(&["pane", "get", "--pane", &p2, "--json"]))["agent"] == "codex"
    });
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert_eq!(p1["agent"], Value::Null, "the shell pane is no agent: {p1}");

    // A program that becomes the agent (`exec`, the same process): listed as no agent
    // first, found once the agent draws.
    let script = format!("echo waiting; read -r line; exec {}", codex.display());
    let p3 = ok(env.herdr(&["pane", "split", "--", "sh", "-c", &script]));
    support::wait_output(&env, &p3, "^waiting$");
    for _ in 0..3 {
        let p = json(env.herdr(&["pane", "get", "--pane", &p3, "--json"]));
        assert_eq!(p["agent"], Value::Null, "sh is no agent: {p}");
        support::pane_list(&env);
    }
    support::submit(&env, &p3, "go");
    // Watched through `pane list`, which does not read a known non-agent again: the
    // agent's own output makes herdr look.
    wait_until("the program that became codex detected", || {
        support::pane_list(&env)
            .iter()
            .any(|p| p["id"] == p3.as_str() && p["agent"] == "codex")
    });
}

#[test]
fn an_agent_whose_screen_rules_stop_seeing_it_busy_is_not_idle_while_it_still_streams() {
    let env = Env::new("agents-rules-and-samples");
    // Rules for kimi: working while its status line says so. Like Codex, it hides that
    // line while its answer streams.
    let rules = env.dir.path().join("config/herdr/agents");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("kimi.toml"),
        "[[rule]]\nstate = \"working\"\nlines = 5\npattern = 'esc to interrupt'\n",
    )
    .unwrap();
    let agent = agent_script(
        &env,
        "kimi",
        "echo agent-ready\nread -r line\n\
         for i in $(seq 1 10); do printf '\\r* Working (%ds, esc to interrupt)' $i; sleep 0.1; done\n\
         printf '\\r\\033[2K'\n\
         for i in $(seq 1 60); do echo \"streamed word $i\"; sleep 0.1; done\n\
         echo stream-done\nwhile read -r line; do :; done",
    );
    ok(env.herdr(&["server", "start"]));
    let _t = env.client(140, 30);
    prompt(&env, "p1");
    support::submit(&env, "p1", &agent.display().to_string());
    support::wait_output(&env, "p1", "agent-ready");
    support::submit(&env, "p1", "go");
    wait_agent_state(&env, "p1", "working");
    wait_agent_state(&env, "p1", "idle");
    // Idle only once the answer stopped: 3 s after the working line went, it was still
    // streaming for 3 s more.
    let screen =
        String::from_utf8_lossy(&env.herdr(&["pane", "read", "--pane", "p1"]).stdout).to_string();
    assert!(screen.contains("stream-done"), "idle too early:\n{screen}");
}

/// Agent panes the cost test keeps, over tabs of `PER_TAB`.
const IDLE_AGENTS: usize = 48;
const PER_TAB: usize = 16;

#[test]
fn many_idle_agents_without_hooks_or_rules_cost_the_server_next_to_nothing() {
    let env = Env::new("agents-idle-cost");
    let agent = agent_script(
        &env,
        "kimi",
        "echo agent-ready\nwhile read -r line; do :; done",
    );
    ok(env.herdr(&["server", "start"]));
    let mut api = support::api::Api::connect(&env);
    let mut panes = vec!["p1".to_string()];
    for i in 1..IDLE_AGENTS {
        if i % PER_TAB == 0 {
            api.call("tab.create", serde_json::json!({}));
            panes.push(
                pane_list(&env).last().unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .into(),
            );
            continue;
        }
        let direction = if i % 2 == 0 { "down" } else { "right" };
        let new = api.call("pane.split", serde_json::json!({ "direction": direction }));
        panes.push(new["id"].as_str().unwrap().to_string());
    }
    for p in &panes {
        let command = agent.display().to_string();
        api.call(
            "pane.submit",
            serde_json::json!({ "pane": p, "text": command }),
        );
    }
    let all_idle = || {
        let list = pane_list(&env);
        list.len() == IDLE_AGENTS
            && list
                .iter()
                .all(|p| p["agent"] == "kimi" && p["agent_state"] == "idle")
    };
    // Many shells and agents starting on a slow machine: a generous deadline.
    let deadline = Instant::now() + Duration::from_secs(90);
    while !all_idle() {
        assert!(
            Instant::now() < deadline,
            "not all idle: {:?}",
            pane_list(&env)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Sampled all the while: a second of them waiting is one pass over /proc for all.
    let server = env.server_pid().expect("the server's pid");
    let ticks = || cpu_ticks(server);
    let (before, at) = (ticks(), Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let used_ms = (ticks() - before) * 10;
    let share = used_ms as f64 / at.elapsed().as_millis() as f64;
    // A debug build on a shared machine (6 to 8 % of a core here): the bound catches idle
    // panes read at the working rate (4 times as often) or a spin; it is no figure to
    // hold the server to.
    assert!(
        share < 0.2,
        "the server used {used_ms} ms of CPU in {:?} with {IDLE_AGENTS} idle agents",
        at.elapsed()
    );
    assert!(all_idle(), "{:?}", pane_list(&env));
    let signals = api.call(
        "pane.signals",
        serde_json::json!({ "pane": panes[IDLE_AGENTS - 1] }),
    );
    assert_eq!(signals["sampled"], "waiting", "{signals}");
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The saved session's pane `p1` (its entry in session.json), as the file is now.
fn saved_pane(env: &Env) -> Option<Value> {
    let text = std::fs::read_to_string(env.session_file()).ok()?;
    let saved: Value = serde_json::from_str(&text).ok()?;
    fn find(v: &Value) -> Option<Value> {
        match v {
            Value::Object(m) if m.get("id") == Some(&Value::from(1)) && m.contains_key("argv") => {
                Some(v.clone())
            }
            Value::Object(m) => m.values().find_map(find),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(&saved)
}

/// An agent found in a pane by its output alone (no report, nothing else changing) is
/// saved by itself soon after, and so is its going: a server killed then would resume
/// what the pane runs now.
#[test]
fn an_agent_found_or_gone_is_saved_by_itself() {
    let env = Env::new("agents-saved");
    fake_claude_with(&env, "");
    start_in(&env, "work", "claude");
    support::wait_output(&env, "p1", "fake-claude-ready");
    wait_until("the agent is saved", || {
        saved_pane(&env).is_some_and(|p| p["agent"] == "claude")
    });
    ok(env.herdr(&["pane", "send", "--pane", "p1", "\u{3}"]));
    prompt(&env, "p1");
    wait_until("its going is saved", || {
        saved_pane(&env).is_some_and(|p| p["agent"].is_null())
    });
}
