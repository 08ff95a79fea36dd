//! End-to-end: agents detected in panes, hook reports, resume after a restart.

mod support;

use serde_json::Value;
use support::{json, ok, prompt, wait_until, Env};

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

#[test]
fn detected_reported_and_resumed_once_after_a_restart() {
    let env = Env::new("agents");
    let claude = fake_claude(&env, "sess-42");
    let work = env.home().join("work");
    std::fs::create_dir_all(&work).unwrap();
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    support::submit(
        &env,
        "p1",
        &format!("cd {} && {} --model opus", work.display(), claude.display()),
    );
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
        format!("argv=--resume sess-42|cwd={}", work.display())
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
    drop(t);
    ok(env.herdr(&["server", "stop"]));
    let saved = std::fs::read_to_string(
        env.dir
            .path()
            .join("state/herdr/sessions")
            .join(&env.session)
            .join("session.json"),
    )
    .unwrap();
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

#[test]
fn an_agent_without_hooks_is_working_while_it_prints_and_idle_when_quiet() {
    let env = Env::new("agents-fallback");
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let codex = bin.join("codex");
    // Prints for a while, then waits quietly like an agent at its prompt.
    executable(&codex, "#!/bin/bash\nfor i in $(seq 1 30); do echo thinking $i; sleep 0.1; done\necho codex-waiting\nwhile :; do sleep 1; done\n");
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    support::submit(&env, "p1", &codex.display().to_string());
    wait_agent_state(&env, "p1", "working");
    assert_eq!(
        json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]))["agent"],
        "codex"
    );
    support::wait_output(&env, "p1", "codex-waiting");
    wait_agent_state(&env, "p1", "idle");
}
