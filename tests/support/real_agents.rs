//! The real Claude Code and Codex in test panes: where they are installed, a test HOME in
//! which they start straight at their prompt and talk to nobody but the mock API
//! (`mock_api`), and a recorder of the session's `pane.agent` events.
//!
//! The agents come from npm, installed by `.ci/run` (or `scripts/real-agents`) into
//! `${XDG_CACHE_HOME:-$HOME/.cache}/herdr-tests/agents`; `HERDR_TEST_AGENTS` names their
//! `node_modules/.bin` folder. A test that needs them and finds none fails, saying how to
//! install them.
#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::mock_api::MockApi;
use super::{Env, BIN};

/// The dummy key the agents send to the mock (Claude Code asks once whether to use a key
/// from the environment; the test HOME has answered yes for this one).
pub const API_KEY: &str = "sk-ant-api03-herdr-test-key-000000000000";

/// The folder holding `claude` and `codex`.
pub fn bin_dir() -> PathBuf {
    let dir = match std::env::var_os("HERDR_TEST_AGENTS").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from("/nonexistent"));
            cache.join("herdr-tests/agents/node_modules/.bin")
        }
    };
    for agent in ["claude", "codex"] {
        assert!(
            dir.join(agent).exists(),
            "the real agents are not installed: no {agent} in {}.\n\
             These tests run the real Claude Code and Codex against a local mock of their APIs. \
             Install the pinned versions with `scripts/real-agents install` (what .ci/run does; \
             it needs node and npm), or point HERDR_TEST_AGENTS at a node_modules/.bin folder \
             holding claude and codex.",
            dir.display()
        );
    }
    dir
}

/// Adds lines to the test HOME's `.bash_profile` (what the panes' login shells read).
pub fn profile(env: &Env, lines: &str) {
    let path = env.home().join(".bash_profile");
    let rc = std::fs::read_to_string(&path).expect("bash_profile");
    std::fs::write(&path, format!("{rc}{lines}")).expect("bash_profile");
}

/// `herdr` on the panes' PATH (agents' hooks call it by name), with the agents.
fn path_with_agents(env: &Env) {
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    if !bin.join("herdr").exists() {
        std::os::unix::fs::symlink(BIN, bin.join("herdr")).expect("link herdr");
    }
    profile(
        env,
        &format!("PATH=\"$HOME/bin:{}:$PATH\"\n", bin_dir().display()),
    );
}

/// Claude Code in the panes of `env`, talking to `mock`, at home in `work`: its first-run
/// screens (theme, the key from the environment, trusting the folder) answered in
/// `~/.claude.json` as a user's answers would be, and everything it would send elsewhere
/// (telemetry, error reports, updates, the plugin marketplace) turned off.
pub fn claude(env: &Env, mock: &MockApi, work: &Path) {
    path_with_agents(env);
    let state = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
        "projects": {work.display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(
        env.home().join(".claude.json"),
        serde_json::to_string_pretty(&state).unwrap(),
    )
    .expect("write .claude.json");
    profile(
        env,
        &format!(
            "export ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={API_KEY}\n\
             export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
             DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 \
             CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1\n\
             # An API error ends the turn at once instead of after ten retries.\n\
             export CLAUDE_CODE_MAX_RETRIES=0\n",
            url = mock.url()
        ),
    );
}

/// Codex in the panes of `env`, talking to `mock` through a provider of its own, trusting
/// `work`, with what it would fetch from elsewhere off (update checks, analytics, the
/// plugin marketplace, apps).
pub fn codex(env: &Env, mock: &MockApi, work: &Path) {
    path_with_agents(env);
    let dir = env.home().join(".codex");
    std::fs::create_dir_all(&dir).expect("mkdir .codex");
    seed_codex_daemon(&dir);
    let config = format!(
        "model = \"gpt-5.1-codex\"\n\
         model_provider = \"mock\"\n\
         check_for_update_on_startup = false\n\
         \n\
         [analytics]\n\
         enabled = false\n\
         \n\
         [features]\n\
         plugins = false\n\
         remote_plugin = false\n\
         apps = false\n\
         in_app_updates = false\n\
         \n\
         [model_providers.mock]\n\
         name = \"Mock\"\n\
         base_url = \"{url}/v1\"\n\
         wire_api = \"responses\"\n\
         requires_openai_auth = false\n\
         env_key = \"MOCK_API_KEY\"\n\
         \n\
         [projects.\"{work}\"]\n\
         trust_level = \"trusted\"\n",
        url = mock.url(),
        work = work.display()
    );
    std::fs::write(dir.join("config.toml"), config).expect("write config.toml");
    profile(env, &format!("export MOCK_API_KEY={API_KEY}\n"));
}

/// Codex installs a copy of itself (about 400 MB) under `~/.codex/packages` for its
/// background server, once per HOME. Each test has a HOME of its own: the copy is made
/// here beforehand, of hard links to the installed package, laid out as Codex lays it
/// out (a release folder named `<version>-<target>` and `current` pointing at it). Where
/// links cannot be made (another file system), Codex makes its copy itself.
fn seed_codex_daemon(codex_home: &Path) {
    let modules = bin_dir().join("..");
    let Ok(packages) = std::fs::read_dir(modules.join("@openai")) else {
        return;
    };
    for vendor in packages
        .flatten()
        .filter(|p| p.file_name().to_string_lossy().starts_with("codex-"))
        .filter_map(|p| std::fs::read_dir(p.path().join("vendor")).ok())
        .flatten()
        .flatten()
    {
        let Ok(meta) = std::fs::read_to_string(vendor.path().join("codex-package.json")) else {
            continue;
        };
        let meta: Value = serde_json::from_str(&meta).unwrap_or(Value::Null);
        let (Some(version), Some(target)) = (meta["version"].as_str(), meta["target"].as_str())
        else {
            continue;
        };
        let daemon = codex_home.join("packages/app-server-daemon");
        let release = daemon.join("releases").join(format!("{version}-{target}"));
        std::fs::create_dir_all(release.parent().unwrap()).expect("mkdir releases");
        let linked = Command::new("cp")
            .arg("-al")
            .arg(vendor.path())
            .arg(&release)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !linked {
            let _ = std::fs::remove_dir_all(&release);
            return;
        }
        let entry = meta["entrypoint"].as_str().unwrap_or("bin/codex");
        let _ = std::os::unix::fs::symlink(entry, release.join("codex"));
        let _ = std::os::unix::fs::symlink(&release, daemon.join("current"));
        return;
    }
}

/// Codex's shared background server outlives the pane that started it: stops the ones
/// this test's HOME started (their pid files are there; the pid must still be one of
/// them, as pids are reused).
pub fn stop_codex_daemons(env: &Env) {
    let dir = env.home().join(".codex/app-server-daemon");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.ends_with(".pid") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let pid = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["pid"].as_i64())
            .or_else(|| text.trim().parse().ok());
        let Some(pid) = pid else { continue };
        // The daemon runs a copy of Codex it keeps under the HOME that started it.
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        if exe.is_some_and(|exe| exe.starts_with(env.home())) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The process in front in the terminal of `shell` (its terminal's foreground process
/// group, led by the program bash started there).
pub fn foreground_pid(shell: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{shell}/stat")).ok()?;
    // After the command name in parentheses: state, ppid, pgrp, session, tty_nr, tpgid.
    let tpgid: i32 = stat
        .rsplit(')')
        .next()?
        .split_whitespace()
        .nth(5)?
        .parse()
        .ok()?;
    (tpgid > 0 && tpgid != shell).then_some(tpgid)
}

/// Waits until `pid` has exited (an agent writes its state into HOME as it quits; the
/// test's folder must outlive that).
pub fn wait_gone(pid: i32, deadline: Duration) {
    let end = Instant::now() + deadline;
    while super::pid_alive(pid) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The session's events as they arrive (`herdr events --json`), each with when it came.
pub struct Events {
    child: Child,
    seen: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Events {
    /// Subscribes; returns once the subscription is in place (a first event is not
    /// needed: `events` subscribes before it prints anything, and the caller's next
    /// request is handled after it).
    pub fn start(env: &Env) -> Events {
        let mut child = Command::new(BIN)
            .env_clear()
            .envs(env.vars())
            .args(["--session", &env.session, "events", "--json"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("herdr events");
        let out = child.stdout.take().expect("stdout");
        let seen: Arc<Mutex<Vec<(Instant, Value)>>> = Arc::default();
        let s = seen.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    s.lock().unwrap().push((Instant::now(), v));
                }
            }
        });
        Events { child, seen }
    }

    /// The agent states announced for `pane`, in order, each with when it came.
    pub fn states(&self, pane: &str) -> Vec<(Instant, String)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, e)| e["event"] == "pane.agent" && e["id"] == pane)
            .map(|(at, e)| (*at, e["state"].as_str().unwrap_or("none").to_string()))
            .collect()
    }

    /// The states announced for `pane` since the `from`-th.
    pub fn states_since(&self, pane: &str, from: usize) -> Vec<String> {
        self.states(pane)
            .into_iter()
            .skip(from)
            .map(|(_, s)| s)
            .collect()
    }

    /// Waits until the states announced for `pane` since the `from`-th include `want` in
    /// that order (other states may come between); panics with what came after
    /// `deadline`.
    pub fn wait_sequence(&self, pane: &str, from: usize, want: &[&str], deadline: Duration) {
        let end = Instant::now() + deadline;
        loop {
            let got = self.states_since(pane, from);
            let mut rest = got.iter();
            if want.iter().all(|w| rest.any(|g| g == w)) {
                return;
            }
            if Instant::now() > end {
                panic!("{pane}: expected the states {want:?} in order, got {got:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
