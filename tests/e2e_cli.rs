//! End-to-end: the CLI, bad input and the wire's error paths.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use support::{pid_alive, Env, PROMPT};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn invalid_session_names_get_a_clear_error() {
    let env = Env::new("names");
    for (name, expect) in [
        ("../x", "not allowed"),
        ("", "empty"),
        ("a/b", "not allowed"),
    ] {
        let out = std::process::Command::new(support::BIN)
            .env_clear()
            .envs(env.vars())
            .args(["--session", name, "server", "status"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains(expect), "{name:?}: {err}");
    }
}

#[test]
fn version_and_status() {
    let env = Env::new("status");
    let out = env.herdr(&["--version"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.herdr(&["completion", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && script.contains("HERDR_COMPLETE") && script.contains("herdr"),
            "{shell}: {script}"
        );
    }
    assert_eq!(
        completions(&env, &["herdr", "wor"]),
        ["workspace", "worktree"]
    );
    let out = env.herdr(&["server", "status"]);
    assert_eq!(out.status.code(), Some(3), "not running yet");
    let out = env.herdr(&["pane", "list"]);
    assert_eq!(out.status.code(), Some(3), "API commands too");
    let out = env.herdr(&["pane", "split", "--direction", "sideways"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    assert!(env.herdr(&["server", "start"]).status.success());
    let out = env.herdr(&["server", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session"], env.session.as_str());
    assert_eq!(v["protocol"], 1);
    assert_eq!(v["panes"], 1);
    assert_eq!(v["clients"], 0);
    assert!(v["pid"].as_i64().unwrap() > 1);
    assert!(v["uptime_secs"].is_number());
    let human = String::from_utf8_lossy(&env.herdr(&["server", "status"]).stdout).into_owned();
    assert!(human.contains("panes:    1"), "{human}");
    // The socket is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(env.socket().parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

fn raw_hello(env: &Env, hello: &str) -> (UnixStream, String) {
    let mut s = UnixStream::connect(env.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(hello.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(s.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    (s, line)
}

#[test]
fn another_protocol_version_gets_one_clear_line() {
    let env = Env::new("proto");
    assert!(env.herdr(&["server", "start"]).status.success());
    let (_, line) = raw_hello(
        &env,
        "{\"herdr\":\"herdr\",\"protocol\":99,\"version\":\"9.9.9\",\"role\":\"client\"}\n",
    );
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["ok"], false);
    let err = v["error"].as_str().unwrap();
    assert!(
        err.contains("protocol mismatch") && err.contains("9.9.9"),
        "{err}"
    );
    // Not a herdr peer at all: also one line, then closed.
    let (mut s, line) = raw_hello(&env, "GET / HTTP/1.0\n");
    assert!(line.contains("\"ok\":false"), "{line}");
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
}

#[test]
fn a_malformed_frame_closes_only_that_connection() {
    let env = Env::new("malformed");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    let (mut s, line) = raw_hello(&env, "{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"x\",\"role\":\"client\",\"size\":[80,24]}\n");
    assert!(line.contains("\"ok\":true"), "{line}");
    s.write_all(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap();
    // The server closes this connection (after perhaps a first frame).
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    // Everything else carries on.
    t.line("echo survived-$((2+2))");
    t.wait_text("survived-4");
    let v: serde_json::Value =
        serde_json::from_slice(&env.herdr(&["server", "status", "--json"]).stdout).unwrap();
    assert_eq!(v["clients"], 1);
    // A malformed API request gets an error reply on that connection only.
    let (mut api, _) = raw_hello(
        &env,
        "{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"x\",\"role\":\"api\"}\n",
    );
    api.write_all(
        b"this is not json\n{\"id\":7,\"method\":\"nope\"}\n{\"id\":8,\"method\":\"ping\"}\n",
    )
    .unwrap();
    let mut r = BufReader::new(api);
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    assert!(l.contains("parse_error"), "{l}");
    l.clear();
    r.read_line(&mut l).unwrap();
    assert!(
        l.contains("\"id\":7") && l.contains("unknown_method"),
        "{l}"
    );
    l.clear();
    r.read_line(&mut l).unwrap();
    assert!(l.contains("\"id\":8") && l.contains("pong"), "{l}");
}

#[test]
fn config_problems_are_counted_and_herdr_still_starts() {
    let env = Env::new("config");
    std::fs::write(
        env.config_file(),
        "prefix = \"C-a\"\nscrollback_lines = \"lots\"\nbogus = 1\n",
    )
    .unwrap();
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    // How many, where to see them, the first one cut with an ellipsis before the hint.
    t.wait("the problems on the status line", |t| {
        let status = t.row(29);
        status.contains("config: 2 problems (herdr config check): line 2")
            && status.contains("… ")
            && status.trim_end().ends_with("C-a ? help")
    });
    // The valid setting applied: the prefix is now C-a.
    t.send(b"\x01%");
    t.wait("split with the configured prefix", |t| t.count(PROMPT) == 2);
    let log = std::fs::read_to_string(env.server_log()).unwrap();
    assert!(
        log.contains("config.toml:2: scrollback_lines: expected"),
        "{log}"
    );
    assert!(log.contains("config.toml:3: bogus: unknown key"), "{log}");
}

#[test]
fn a_shell_that_cannot_run_falls_back_to_the_users_shell_and_says_so() {
    let env = Env::new("badshell");
    std::fs::write(env.config_file(), "shell = \"/nonexistent/shell\"\n").unwrap();
    let mut t = env.client(200, 30);
    t.wait_text(PROMPT);
    t.wait("the fallback on the status line", |t| {
        t.row(29).contains(
            "line 1: shell: \"/nonexistent/shell\" is not the path of an executable file; \
             using \"/bin/bash\" ($SHELL)",
        )
    });
    t.line("echo \"shell is $SHELL\"");
    t.wait("the pane to run $SHELL", |t| {
        t.has_line("shell is /bin/bash")
    });
}

#[test]
fn the_server_survives_its_terminal_closing() {
    let env = Env::new("survive");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    t.line("echo before-close");
    t.wait_text("before-close");
    let pid = env.server_pid().unwrap();
    drop(t); // kills the client, closes its terminal
    support::wait_until("the client to be gone", || {
        let v: serde_json::Value =
            serde_json::from_slice(&env.herdr(&["server", "status", "--json"]).stdout).unwrap();
        v["clients"] == 0
    });
    assert!(pid_alive(pid));
    let t = env.client(100, 30);
    t.wait_text("before-close");
}

/// The first word of each line under `Commands:` in a `--help`.
fn listed_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn help_and_completion_leave_the_internal_commands_out() {
    let env = Env::new("help");
    let help = |args: &[&str]| support::ok(env.herdr(args));
    let top = listed_commands(&help(&["--help"]));
    assert!(top.contains(&"pane".to_string()), "{top:?}");
    assert!(
        !top.iter().any(|c| c == "remote-bridge" || c == "man"),
        "{top:?}"
    );
    let server = listed_commands(&help(&["server", "--help"]));
    assert_eq!(
        server,
        [
            "start",
            "stop",
            "status",
            "handoff",
            "reload-config",
            "help"
        ]
    );
    let agent = listed_commands(&help(&["agent", "--help"]));
    assert_eq!(agent, ["list", "report", "help"]);
    // Out of sight, still there.
    help(&["server", "run", "--help"]);
    let top = completions(&env, &["herdr", ""]);
    assert!(top.iter().any(|w| w == "pane"), "{top:?}");
    assert!(
        !top.iter().any(|w| w == "remote-bridge" || w == "man"),
        "{top:?}"
    );
    let server = completions(&env, &["herdr", "server", ""]);
    assert!(server.iter().any(|w| w == "handoff"), "{server:?}");
    assert!(
        !server.iter().any(|w| w == "run" || w == "import"),
        "{server:?}"
    );
    let agent = completions(&env, &["herdr", "agent", ""]);
    assert!(!agent.iter().any(|w| w == "hook"), "{agent:?}");
    let run = completions(&env, &["herdr", "server", "start", "--"]);
    assert!(!run.iter().any(|w| w == "--ready-fd"), "{run:?}");
}

/// What bash offers after `words` (the last one being typed), with the script
/// `herdr completion bash` prints sourced as a user's .bashrc would: the real bash
/// completion function asking the real herdr.
fn completions(env: &Env, words: &[&str]) -> Vec<String> {
    let script = env.home().join("herdr-completion.bash");
    std::fs::write(&script, support::ok(env.herdr(&["completion", "bash"]))).unwrap();
    let bin_dir = std::path::Path::new(support::BIN).parent().unwrap();
    let out = env
        .command(
            "bash",
            &[
                "-c",
                r#"source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_TYPE=9
_clap_complete_herdr herdr "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#,
                "bash",
                &script.display().to_string(),
            ],
        )
        .args(words)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .output()
        .expect("run bash");
    support::ok(out)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn session_names_complete_in_the_shell() {
    let env = Env::new("complete-sessions");
    let run = |args: &[&str]| support::ok(env.command(support::BIN, args).output().unwrap());
    run(&["--session", "work", "server", "start"]);
    run(&["--session", "play", "server", "start"]);
    run(&["--session", "play", "server", "stop"]);
    // Running or only saved, after --session, -s and the session commands.
    assert_eq!(
        completions(&env, &["herdr", "--session", ""]),
        ["play", "work"]
    );
    assert_eq!(completions(&env, &["herdr", "-s", "w"]), ["work"]);
    assert_eq!(completions(&env, &["herdr", "attach", "p"]), ["play"]);
    for cmd in ["attach", "stop", "delete", "rename"] {
        assert_eq!(
            completions(&env, &["herdr", "session", cmd, "wo"]),
            ["work"],
            "session {cmd}"
        );
    }
    assert_eq!(
        completions(&env, &["herdr", "pane", "list", "--session", "pl"]),
        ["play"],
        "a global flag, under a command"
    );
    run(&["--session", "work", "server", "stop"]);
}

#[test]
fn a_bare_pane_wait_names_the_conditions_it_needs_one_of() {
    let env = Env::new("wait-usage");
    let out = env.herdr(&["pane", "wait"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("<--output <REGEX>|--exit|--agent-state <STATE>>"),
        "{err}"
    );
}

/// The control requests herdr's man page may use (all of them from the man macros).
const MAN_REQUESTS: [&str; 13] = [
    "ie", "el", "TH", "SH", "SS", "TP", "PP", "RS", "RE", "IP", "br", "nh", "ad",
];

#[test]
fn herdr_man_is_a_manual_page_of_every_command() {
    let env = Env::new("man");
    let page = support::ok(env.herdr(&["man"]));
    assert!(page.is_ascii());
    assert!(
        page.lines().any(|l| l.starts_with(".TH herdr 1 ")),
        "{page}"
    );
    for line in page.lines().filter(|l| l.starts_with(['.', '\''])) {
        let request = line[1..].split_whitespace().next().unwrap_or("");
        assert!(MAN_REQUESTS.contains(&request), "unexpected {line:?}");
    }
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "COMMANDS", "\"EXIT STATUS\""] {
        let heading = format!(".SH {section}");
        assert!(page.lines().any(|l| l == heading), "no {heading}");
    }
    let top = listed_commands(&support::ok(env.herdr(&["--help"])));
    assert!(top.len() > 5, "{top:?}");
    for name in top.iter().filter(|n| *n != "help") {
        let heading = format!(".SS \"herdr {name}\"");
        assert!(page.contains(&heading), "{name} is not in the man page");
    }
    assert!(
        !page.contains("remote\\-bridge"),
        "an internal command is in it"
    );
    let file = env.dir.path().join("herdr.1");
    std::fs::write(&file, &page).unwrap();
    // Checked by the formatters where they are installed (not required).
    if let Ok(out) = std::process::Command::new("groff")
        .args(["-ww", "-z", "-man", "-Tutf8"])
        .arg(&file)
        .output()
    {
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}",
            stderr(&out)
        );
    }
    if let Ok(out) = std::process::Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            text.contains("herdr pane wait") && text.contains("EXIT STATUS"),
            "{text}"
        );
    }
}
