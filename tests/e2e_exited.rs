//! End-to-end: a pane started with a command keeps its screen and exit status when the
//! command ends (tmux's remain-on-exit): the status is on screen, in `pane get`, in
//! `pane wait --exit` and its exit code; Enter reruns it, `x` closes it; a shell that
//! exits still closes its pane; it all survives a live handoff.

mod support;

use support::{json, ok, pane_list, started, wait_until, Env, PROMPT};

/// A command that counts its runs in `~/runs`, prints the count, and exits 3.
const COUNTED: &str = "n=$(($(cat ~/runs 2>/dev/null || echo 0) + 1)); echo $n > ~/runs; \
                       echo run-$n; exit 3";

fn split_running(env: &Env, script: &str) -> String {
    ok(env.herdr(&["pane", "split", "--", "sh", "-c", script]))
}

#[test]
fn a_fast_commands_result_is_kept_and_waited_for() {
    let env = started("exit-status");
    // The race of the docs' own example: the command is over before the wait starts.
    let pane = split_running(&env, "true");
    let out = env.herdr(&["pane", "wait", "--pane", &pane, "--exit", "--timeout", "30"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let pane = split_running(&env, "echo the-result; exit 3");
    let out = env.herdr(&["pane", "wait", "--pane", &pane, "--exit", "--timeout", "30"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the CLI exits with the status: {out:?}"
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.trim(), "exited with status 3");
    let got = json(env.herdr(&["pane", "get", "--pane", &pane, "--json"]));
    assert_eq!(got["exited"], 3, "{got}");
    let listed = pane_list(&env);
    let row = listed.iter().find(|p| p["id"] == pane.as_str()).unwrap();
    assert_eq!(row["exited"], 3, "{row}");
    let running = listed.iter().find(|p| p["id"] == "p1").unwrap();
    assert!(running["exited"].is_null(), "{running}");
    // Its screen is still there to read.
    let screen = ok(env.herdr(&["pane", "read", "--pane", &pane]));
    assert!(screen.contains("the-result"), "{screen}");
}

#[test]
fn a_finished_pane_shows_its_status_reruns_on_enter_and_closes_on_x() {
    let env = Env::new("exit-keys");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    let pane = split_running(&env, COUNTED);
    t.wait_text("run-1");
    t.wait_text("exited 3 · Enter reruns · x closes");
    // Keys other than Enter and x do nothing to it.
    t.send(b"q");
    t.send(b"\r");
    t.wait_text("run-2");
    wait_until("the rerun to end", || {
        json(env.herdr(&["pane", "get", "--pane", &pane, "--json"]))["exited"] == 3
    });
    t.wait_text("exited 3 · Enter reruns");
    assert!(
        !t.contents().contains("run-1"),
        "a fresh screen:\n{}",
        t.contents()
    );
    t.send(b"x");
    wait_until("the pane to close", || pane_list(&env).len() == 1);
    t.wait("the bar to go", |t| !t.contents().contains("Enter reruns"));
}

#[test]
fn a_shell_that_exits_closes_its_pane_and_never_closes_command_panes_too() {
    let env = Env::new("exit-shell");
    std::fs::write(env.config_file(), "remain_on_exit = \"never\"\n").unwrap();
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.line("exit");
    wait_until("the shell's pane to close", || pane_list(&env).len() == 1);
    split_running(&env, "exit 3");
    wait_until("the command's pane to close", || pane_list(&env).len() == 1);
    let with_default = started("exit-default");
    with_default.herdr(&["pane", "submit", "--pane", "p1", "exit"]);
    wait_until("the session to end with its shell", || {
        with_default.herdr(&["server", "status"]).status.code() == Some(3)
    });
}

#[test]
fn a_finished_pane_moves_across_a_live_handoff() {
    let env = started("exit-handoff");
    let pane = split_running(&env, COUNTED);
    let out = env.herdr(&["pane", "wait", "--pane", &pane, "--exit", "--timeout", "30"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let before = env.server_pid();
    ok(env.herdr(&["server", "handoff"]));
    wait_until("the new server", || {
        env.server_pid().is_some_and(|p| Some(p) != before)
    });
    let got = json(env.herdr(&["pane", "get", "--pane", &pane, "--json"]));
    assert_eq!(got["exited"], 3, "{got}");
    let screen = ok(env.herdr(&["pane", "read", "--pane", &pane]));
    assert!(screen.contains("run-1"), "{screen}");
    // It still reruns there.
    let mut t = env.client(100, 30);
    ok(env.herdr(&["pane", "focus", "--pane", &pane]));
    t.wait_text("exited 3 · Enter reruns");
    t.send(b"\r");
    t.wait_text("run-2");
}
