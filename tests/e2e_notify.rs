//! End-to-end: "needs you" notifications. An agent (a fake one that reports its states
//! through `herdr agent report` as its hooks would) becomes blocked, or finishes unseen:
//! each attached client's terminal gets a desktop notification in the style it speaks
//! (OSC 9, OSC 777, else a bell), the user's command gets the event as JSON; bells rung
//! in panes reach the clients' terminals, a flood of them bounded.
//!
//! Absence is checked behind a barrier: the bytes of a notification are sent before the
//! frame that shows the new state, so once the screen shows it, a notification that was
//! going to be sent has been.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{contains, ok, prompt, submit, wait_output, wait_until, Env, Outer, Term};

/// Installs a fake agent `name` on the panes' PATH: it reads states, one a line, and
/// reports each as its hooks would; `end` prints a marker.
fn fake_agent(env: &Env, name: &str) -> PathBuf {
    let profile = env.home().join(".bash_profile");
    let rc = std::fs::read_to_string(&profile).unwrap();
    if !rc.contains("$HOME/bin") {
        std::fs::write(&profile, format!("{rc}PATH=\"$HOME/bin:$PATH\"\n")).unwrap();
    }
    fake_agent_in(&env.home().join("bin"), name)
}

/// The fake agent's script, written in `bin`.
fn fake_agent_in(bin: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(bin).unwrap();
    let path = bin.join(name);
    let script = format!(
        "#!/bin/bash\necho fake-{name}-ready\nwhile read -r state; do\n\
         if [ \"$state\" = end ]; then echo reports-done; continue; fi\n\
         {bin} agent report --source herdr:{name} --agent {name} --state \"$state\" >/dev/null\n\
         done\n",
        bin = support::BIN
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs the fake agent `name` in `pane` (its shell's prompt shown) and waits for it.
fn run_agent(env: &Env, pane: &str, name: &str) {
    let path = fake_agent(env, name);
    prompt(env, pane);
    submit(env, pane, &path.display().to_string());
    wait_output(env, pane, &format!("fake-{name}-ready"));
}

/// The agent in `pane` reports `state`; returns once the server has it.
fn report(env: &Env, pane: &str, state: &str) {
    submit(env, pane, state);
    let want = if state == "idle" { "" } else { state };
    wait_until(&format!("{pane} {state}"), || {
        let p: Value = support::json(env.herdr(&["pane", "get", "--pane", pane, "--json"]));
        let got = p["agent_state"].as_str().unwrap_or_default().to_string();
        if want.is_empty() {
            got == "idle" || got == "done"
        } else {
            got == want
        }
    });
}

/// The agent in `pane` reports these states one after the other, as fast as it can; returns
/// once it has reported them all (once per pane: it waits for a marker).
fn reports(env: &Env, pane: &str, states: &[&str]) {
    let lines: String = states.iter().map(|s| format!("{s}\n")).collect();
    ok(env.herdr(&["pane", "send", "--pane", pane, &format!("{lines}end\n")]));
    wait_output(env, pane, "reports-done");
}

fn config(env: &Env, text: &str) {
    std::fs::write(env.config_file(), text).unwrap();
}

/// A client in `outer` with these variables in its environment, its first pane ready.
fn attach(env: &mut Env, outer: Outer, vars: &[(&str, &str)]) -> Term {
    for (k, v) in vars {
        env.extra_vars.push((k.to_string(), v.to_string()));
    }
    let t = env.client_in(outer, 120, 36, &[]);
    t.wait_text(support::PROMPT);
    t
}

/// kitty: it speaks the kitty keyboard protocol and says who it is to XTVERSION.
fn kitty() -> Outer {
    Outer::kitty().answer(b"\x1b[>q", b"\x1bP>|kitty(0.35.2)\x1b\\")
}

/// The OSC 9 notification for this text.
fn osc9(text: &str) -> Vec<u8> {
    format!("\x1b]9;{text}\x1b\\").into_bytes()
}

fn osc777(text: &str) -> Vec<u8> {
    format!("\x1b]777;notify;herdr;{text}\x1b\\").into_bytes()
}

fn wait_bytes(t: &Term, what: &str, bytes: &[u8]) {
    t.wait(what, |t| contains(&t.raw_output(), bytes));
}

/// Counts `needle` in `hay`.
fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// The fake agent in p1 goes to a hidden tab (a new tab takes the screen), works and
/// finishes there: "done".
fn finish_unseen(env: &Env) {
    ok(env.herdr(&["tab", "create"]));
    report(env, "p1", "working");
    report(env, "p1", "idle");
    wait_until("p1 done", || {
        support::json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]))["agent_state"]
            == "done"
    });
}

/// The agent in p1 becomes blocked, then finishes unseen: the client in `t` is told
/// both times in `style` (and never in `other`).
fn notified_when_blocked_and_done(env: &Env, t: &Term, style: fn(&str) -> Vec<u8>, other: &[u8]) {
    run_agent(env, "p1", "claude");
    report(env, "p1", "blocked");
    wait_bytes(t, "blocked", &style("claude needs you — p1 (tab 1)"));
    finish_unseen(env);
    wait_bytes(t, "done", &style("claude done — p1 (tab 1)"));
    assert!(!contains(&t.raw_output(), other), "one style only");
}

#[test]
fn a_kitty_like_terminal_gets_osc_9_when_blocked_and_when_done_unseen() {
    let mut env = Env::new("notify-kitty");
    let t = attach(&mut env, kitty(), &[]);
    notified_when_blocked_and_done(&env, &t, osc9, b"\x1b]777;");
}

#[test]
fn a_ghostty_like_terminal_is_known_by_its_environment() {
    let mut env = Env::new("notify-ghostty");
    let t = attach(&mut env, Outer::legacy(), &[("TERM_PROGRAM", "ghostty")]);
    run_agent(&env, "p1", "claude");
    report(&env, "p1", "blocked");
    wait_bytes(&t, "OSC 9 blocked", &osc9("claude needs you — p1 (tab 1)"));
}

#[test]
fn a_vte_like_terminal_gets_osc_777_when_blocked_and_when_done_unseen() {
    let mut env = Env::new("notify-vte");
    let t = attach(&mut env, Outer::legacy(), &[("VTE_VERSION", "7600")]);
    notified_when_blocked_and_done(&env, &t, osc777, b"\x1b]9;");
}

#[test]
fn a_terminal_known_for_neither_gets_a_bell() {
    let mut env = Env::new("notify-bell");
    // XTerm shows neither OSC.
    let outer = Outer::xterm().answer(b"\x1b[>q", b"\x1bP>|XTerm(390)\x1b\\");
    let t = attach(&mut env, outer, &[]);
    run_agent(&env, "p1", "claude");
    let before = count(&t.raw_output(), b"\x07");
    report(&env, "p1", "blocked");
    t.wait("a bell", |t| count(&t.raw_output(), b"\x07") > before);
    let out = t.raw_output();
    assert!(!contains(&out, b"\x1b]9;") && !contains(&out, b"\x1b]777;"));
}

#[test]
fn terminal_off_and_an_agent_turned_off_notify_nothing() {
    let mut env = Env::new("notify-off");
    config(&env, "[notify]\noff_for = [\"codex\"]\n");
    let outer = kitty();
    let t = attach(&mut env, outer, &[]);
    run_agent(&env, "p1", "codex");
    report(&env, "p1", "blocked");
    // The frame that shows the state comes after a notification would have.
    t.wait_text("[blocked]");
    assert!(
        !contains(&t.raw_output(), b"\x1b]9;"),
        "codex is turned off"
    );
    // The same terminal with notifications turned off altogether.
    let mut env = Env::new("notify-off-all");
    config(&env, "[notify]\nterminal = \"off\"\n");
    let outer = kitty();
    let t = attach(&mut env, outer, &[]);
    run_agent(&env, "p1", "claude");
    let bells = count(&t.raw_output(), b"\x07");
    report(&env, "p1", "blocked");
    t.wait_text("[blocked]");
    let out = t.raw_output();
    assert!(!contains(&out, b"\x1b]9;") && !contains(&out, b"\x1b]777;"));
    assert_eq!(count(&out, b"\x07"), bells, "no bell either");
}

#[test]
fn a_client_that_fell_behind_gets_the_notification_when_it_reads_again() {
    let mut env = Env::new("notify-behind");
    let outer = kitty();
    let t = attach(&mut env, outer, &[]);
    run_agent(&env, "p1", "claude");
    let p2 = ok(env.herdr(&["pane", "split"]));
    prompt(&env, &p2);
    // Its terminal stops reading while a pane on screen floods it: its writer fills up.
    t.pause_reading(true);
    submit(&env, &p2, "seq 1 300000; echo flood-$((6*7))-over");
    wait_output(&env, &p2, "flood-42-over");
    report(&env, "p1", "blocked");
    t.pause_reading(false);
    wait_bytes(&t, "OSC 9 blocked", &osc9("claude needs you — p1 (tab 1)"));
}

/// The JSON lines the notify command wrote, one per event.
fn events(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A config whose notify command appends each event to `events.jsonl` at home.
fn command_config(env: &Env) -> PathBuf {
    let file = env.home().join("events.jsonl");
    let cmd = format!("cat >> '{}'", file.display());
    config(
        env,
        &format!(
            "[notify]\ncommand = [\"sh\", \"-c\", {}]\n",
            Value::from(cmd)
        ),
    );
    file
}

/// A server (nobody attached) whose notify command appends to the file returned, the
/// fake claude running in p1.
fn started_with_command(name: &str) -> (Env, PathBuf) {
    let env = Env::new(name);
    let file = command_config(&env);
    ok(env.herdr(&["server", "start"]));
    run_agent(&env, "p1", "claude");
    (env, file)
}

#[test]
fn the_command_gets_the_event_as_json_on_stdin_even_with_nobody_attached() {
    let (env, file) = started_with_command("notify-cmd");
    report(&env, "p1", "blocked");
    wait_until("the blocked event", || !events(&file).is_empty());
    let e = &events(&file)[0];
    assert_eq!(e["event"], "agent.notify", "{e}");
    assert_eq!(e["pane"], "p1", "{e}");
    assert_eq!(e["tab"], "t1", "{e}");
    assert_eq!(e["workspace"], "w1", "{e}");
    assert_eq!(e["agent"], "claude", "{e}");
    assert_eq!(e["state"], "blocked", "{e}");
    assert_eq!(e["text"], "claude needs you — p1 (tab 1)", "{e}");
    assert_eq!(e["cwd"], env.home().display().to_string(), "{e}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let time = e["time"].as_u64().expect("a time");
    assert!(time <= now && time + 600 > now, "{e}");
    // Finished with nobody attached: done.
    report(&env, "p1", "working");
    report(&env, "p1", "idle");
    wait_until("the done event", || events(&file).len() >= 2);
    assert_eq!(events(&file)[1]["state"], "done");
}

#[test]
fn a_flapping_agent_runs_the_command_a_few_times_only() {
    let (env, file) = started_with_command("notify-flap");
    let start = std::time::Instant::now();
    reports(&env, "p1", &["blocked", "working"].repeat(15));
    // Three at once, then one every 20 s (however slow the machine made the flapping).
    let most = 3 + start.elapsed().as_secs() as usize / 20;
    let of = |pane: &str| events(&file).iter().filter(|e| e["pane"] == pane).count();
    wait_until("the first events", || of("p1") >= 3);
    // Another pane is not held back by p1's limit; once its event is in, p1's have long
    // been (they were started before it).
    let p2 = ok(env.herdr(&["pane", "split"]));
    run_agent(&env, &p2, "codex");
    report(&env, &p2, "blocked");
    wait_until("p2's event", || of(&p2) == 1);
    let n = of("p1");
    assert!(n <= most, "15 blocked reports ran the command {n} times");
    let log = std::fs::read_to_string(env.server_log()).unwrap_or_default();
    assert!(log.contains("notifications of p1 come too fast"), "{log}");
}

/// The notify commands (`sleep`) a test's server started, found as its children; those
/// seen are killed by pid at the end, should a test fail before the server killed them.
struct Sleepers {
    server: i32,
    seen: std::cell::RefCell<Vec<i32>>,
}

/// Whether `pid` is a `sleep` process whose parent is `parent` (any parent for `None`).
fn is_sleep(pid: i32, parent: Option<i32>) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((comm, rest)) = stat.split_once(") ") else {
        return false;
    };
    let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<i32>().ok());
    comm.ends_with("(sleep") && parent.is_none_or(|p| ppid == Some(p)) && support::pid_alive(pid)
}

impl Sleepers {
    fn of(server: i32) -> Sleepers {
        Sleepers {
            server,
            seen: Default::default(),
        }
    }

    fn pids(&self) -> Vec<i32> {
        let found: Vec<i32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
            .filter(|pid| is_sleep(*pid, Some(self.server)))
            .collect();
        self.seen.borrow_mut().extend(&found);
        found
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for pid in self.seen.borrow().iter().filter(|p| is_sleep(**p, None)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A server whose notify command hangs (`sleep 1000`), the fake claude running in p1.
fn hanging(name: &str) -> (Env, Sleepers) {
    let env = Env::new(name);
    config(&env, "[notify]\ncommand = [\"sleep\", \"1000\"]\n");
    ok(env.herdr(&["server", "start"]));
    let sleepers = Sleepers::of(env.server_pid().expect("the server's pid"));
    run_agent(&env, "p1", "claude");
    (env, sleepers)
}

#[test]
fn a_hanging_command_never_holds_the_server_and_is_killed_in_time() {
    let (env, sleepers) = hanging("notify-hang");
    let p2 = ok(env.herdr(&["pane", "split"]));
    run_agent(&env, &p2, "codex");
    // Five events: three of p1's, two of p2's; at most four commands run at once.
    reports(
        &env,
        "p1",
        &["blocked", "working", "blocked", "working", "blocked"],
    );
    reports(&env, &p2, &["blocked", "working", "blocked"]);
    wait_until("four commands running", || sleepers.pids().len() == 4);
    // The server answers all the while.
    let status = support::server_status(&env);
    assert!(status["pid"].is_i64(), "{status}");
    wait_until("the fifth dropped and logged", || {
        std::fs::read_to_string(env.server_log())
            .unwrap_or_default()
            .contains("notify commands are still running")
    });
    // Killed at their deadline (10 s), by the server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !sleepers.pids().is_empty() {
        assert!(std::time::Instant::now() < deadline, "still running");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(env.server_log()).unwrap_or_default();
    assert!(
        log.contains("notify: command [\"sleep\", \"1000\"]"),
        "{log}"
    );
    assert!(log.contains("killed"), "{log}");
}

#[test]
fn no_command_outlives_its_server() {
    let (env, sleepers) = hanging("notify-stop");
    report(&env, "p1", "blocked");
    wait_until("the command running", || sleepers.pids().len() == 1);
    let pids = sleepers.pids();
    ok(env.herdr(&["server", "stop"]));
    wait_until("the command gone with its server", || {
        !pids.iter().any(|p| support::pid_alive(*p))
    });
}

#[test]
fn a_pane_bell_rings_the_client_and_marks_a_hidden_tab() {
    let mut env = Env::new("notify-pane-bell");
    let mut t = attach(&mut env, Outer::legacy(), &[]);
    let before = count(&t.raw_output(), b"\x07");
    t.line("printf 'ding\\a\\n'");
    t.wait("the bell", |t| count(&t.raw_output(), b"\x07") > before);
    // Rung in a tab nobody looks at: the tab bar says so until it is shown.
    ok(env.herdr(&["tab", "create"]));
    prompt(&env, "p2");
    submit(&env, "p1", "printf '\\a'");
    t.wait_text("[bell]");
    ok(env.herdr(&["tab", "focus", "t1"]));
    t.wait("the mark cleared", |t| !t.contents().contains("[bell]"));
}

#[test]
fn bells_off_drops_pane_bells() {
    let mut env = Env::new("notify-bells-off");
    config(&env, "[notify]\nbells = \"off\"\n");
    let mut t = attach(&mut env, Outer::legacy(), &[]);
    let before = count(&t.raw_output(), b"\x07");
    // The text after the bell is drawn after the bell was handled.
    t.line("printf '\\a'; echo rang-$((6*7))");
    t.wait_text("rang-42");
    assert_eq!(count(&t.raw_output(), b"\x07"), before);
}

#[test]
fn a_flood_of_bells_is_bounded() {
    let mut env = Env::new("notify-bell-flood");
    let mut t = attach(&mut env, Outer::legacy(), &[]);
    let before = count(&t.raw_output(), b"\x07");
    // A megabyte of BEL, then a marker (its text differs from the command's).
    let start = std::time::Instant::now();
    t.line("head -c 1000000 /dev/zero | tr '\\0' '\\a'; echo flood-$((6*7))-over");
    t.wait_text("flood-42-over");
    let took = start.elapsed().as_secs();
    let rung = count(&t.raw_output(), b"\x07") - before;
    assert!(rung >= 1, "the bell was passed on");
    // Two at once, then one a second (and a second's slack).
    assert!(
        rung <= 3 + took as usize,
        "{rung} bells for one flood in {took} s"
    );
    let status = support::server_status(&env);
    assert!(status["pid"].is_i64(), "{status}");
}

#[test]
fn over_remote_the_terminal_where_the_client_runs_decides() {
    let Some(sshd) = support::sshd::Sshd::start() else {
        return;
    };
    let mut env = Env::new("notify-remote");
    // This side's terminal is a VTE one; the host knows nothing of it.
    env.extra_vars.push(("VTE_VERSION".into(), "7600".into()));
    let _mux = support::sshd::MuxGuard(&env);
    let claude = fake_agent_in(&sshd.remote_home().join("bin"), "claude");
    let config = sshd.config().display().to_string();
    let args = [
        "--remote",
        support::sshd::HOST,
        "--yes",
        "--",
        "-F",
        &config,
    ];
    let mut t = env.client_with_args(120, 36, &args);
    t.wait_text(support::PROMPT);
    t.line(&claude.display().to_string());
    t.wait_text("fake-claude-ready");
    t.line("blocked");
    wait_bytes(
        &t,
        "OSC 777 over the link",
        &osc777("claude needs you — p1 (tab 1)"),
    );
}
