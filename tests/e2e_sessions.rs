//! End-to-end: sessions as tmux users handle them — `herdr ls`, `session list`, `attach`,
//! `session stop|rename|delete`, and a "did you mean" for a mistyped name.

mod support;

use std::process::Output;

use serde_json::Value;
use support::{ok, started, wait_until, Env, PROMPT};

/// `herdr ARGS` without a `--session` of its own.
fn herdr(env: &Env, args: &[&str]) -> Output {
    env.command(support::BIN, args).output().expect("run herdr")
}

fn listed(env: &Env) -> Vec<Value> {
    let out = ok(herdr(env, &["session", "list", "--json"]));
    serde_json::from_str::<Value>(&out)
        .expect("JSON")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn row<'a>(rows: &'a [Value], name: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["name"] == name)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn sessions_are_listed_attached_stopped_renamed_and_deleted() {
    let env = started("sessions");
    let main = env.session.clone();
    ok(herdr(&env, &["--session", "other", "server", "start"]));
    let rows = listed(&env);
    for name in [main.as_str(), "other"] {
        let r = row(&rows, name).unwrap_or_else(|| panic!("{name} in {rows:?}"));
        assert_eq!(r["running"], true, "{r}");
        assert_eq!(r["panes"], 1, "{r}");
        assert_eq!(r["clients"], 0, "{r}");
    }
    let text = ok(herdr(&env, &["ls"]));
    let line = text.lines().find(|l| l.starts_with("other")).unwrap();
    assert!(
        line.contains("running") && line.contains("1 pane"),
        "{text}"
    );

    // `attach NAME` attaches there; the list then knows it was attached.
    let t = env.client_with_args(100, 30, &["attach", "other"]);
    t.wait_text(PROMPT);
    t.wait_text("[other]");
    wait_until("other to have a client", || {
        row(&listed(&env), "other")
            .is_some_and(|r| r["clients"] == 1 && r["last_attached"].is_u64())
    });
    drop(t);

    // A typo gets the closest name.
    let out = herdr(&env, &["session", "attach", "othre"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did you mean `other`?"),
        "{}",
        stderr(&out)
    );

    // Stopped: still listed, as saved, with its panes.
    ok(herdr(&env, &["session", "stop", "other"]));
    let rows = listed(&env);
    let r = row(&rows, "other").expect("other is saved");
    assert_eq!(r["running"], false, "{r}");
    assert_eq!(r["panes"], 1, "{r}");
    assert!(ok(herdr(&env, &["ls"])).contains("saved"));

    // A stopped one is renamed with its state (a running one: below).
    ok(herdr(&env, &["session", "rename", "other", "renamed"]));
    let rows = listed(&env);
    assert!(
        row(&rows, "other").is_none() && row(&rows, "renamed").is_some(),
        "{rows:?}"
    );

    // Deleting asks; without a terminal it needs --yes.
    let out = herdr(&env, &["session", "delete", "renamed"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    ok(herdr(&env, &["session", "delete", "renamed", "--yes"]));
    assert!(row(&listed(&env), "renamed").is_none());
    // A running one is stopped first.
    ok(herdr(&env, &["session", "delete", &main, "--yes"]));
    wait_until("nothing left", || listed(&env).is_empty());
    assert!(ok(herdr(&env, &["ls"])).contains("no sessions"));
}

#[test]
fn attach_without_a_name_takes_the_session_attached_to_last() {
    let env = Env::new("attach-last");
    ok(herdr(&env, &["--session", "first", "server", "start"]));
    ok(herdr(&env, &["--session", "second", "server", "start"]));
    let t = env.client_with_args(100, 30, &["attach", "second"]);
    t.wait_text("[second]");
    drop(t);
    wait_until("second attached once", || {
        row(&listed(&env), "second").is_some_and(|r| r["last_attached"].is_u64())
    });
    let t = env.client_with_args(100, 30, &["attach"]);
    t.wait_text("[second]");
    drop(t);
    for s in ["first", "second"] {
        ok(herdr(&env, &["--session", s, "server", "stop"]));
    }
}

#[test]
fn a_mistyped_command_gets_the_one_it_meant() {
    let env = Env::new("typo");
    for (typed, meant) in [
        ("sesion", "'session'"),
        ("attch", "'attach'"),
        ("sl", "'ls'"),
    ] {
        let out = herdr(&env, &[typed, "list"]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let said = stderr(&out);
        assert!(
            said.contains(&format!("a similar command exists: {meant}")),
            "{typed}: {said}"
        );
    }
    let out = herdr(&env, &["zzzzzz"]);
    assert!(!stderr(&out).contains("similar"), "{}", stderr(&out));
}

#[test]
fn the_picker_lists_every_session_and_enter_moves_the_client_there() {
    let env = Env::new("picker");
    for s in ["alpha", "beta", "gamma"] {
        ok(herdr(&env, &["--session", s, "server", "start"]));
    }
    // gamma is only saved: its server stopped.
    ok(herdr(&env, &["session", "stop", "gamma"]));
    wait_until("gamma to be saved, not running", || {
        row(&listed(&env), "gamma").is_some_and(|r| r["running"] == false)
    });
    let mut t = env.client_with_args(120, 30, &["attach", "alpha"]);
    t.wait_text("[alpha]");
    t.wait_text(PROMPT);

    // prefix s: every session with its facts, this one marked and chosen.
    t.prefix(b"s");
    t.wait("the sessions in the picker", |t| {
        let c = t.contents();
        c.contains("* alpha  running  1 pane  1 client")
            && c.contains("beta   running  1 pane  0 clients")
            && c.contains("gamma  saved  1 pane")
    });
    let (row_no, col) = t.find("* alpha").expect("alpha's row");
    t.with_screen(|s| {
        let cell = s.cell(row_no, col + 2).expect("a cell of alpha's row");
        assert!(cell.inverse(), "the current session is the one chosen");
    });

    // j, Enter: the client is in beta now, and alpha has none.
    t.send(b"j");
    t.send(b"\r");
    t.wait_text("[beta]");
    wait_until("the client to move from alpha to beta", || {
        let rows = listed(&env);
        row(&rows, "beta").is_some_and(|r| r["clients"] == 1)
            && row(&rows, "alpha").is_some_and(|r| r["clients"] == 0)
    });
    t.line("echo in-beta");
    t.wait_text("in-beta");

    // The saved one (G: the last row) is started and restored.
    t.prefix(b"s");
    t.wait("gamma in the picker", |t| {
        t.contents().contains("gamma  saved")
    });
    t.send(b"G");
    t.send(b"\r");
    t.wait_text("[gamma]");
    t.wait_text(PROMPT);
    wait_until("gamma to run with the client", || {
        row(&listed(&env), "gamma").is_some_and(|r| r["running"] == true && r["clients"] == 1)
    });

    // q closes the picker and stays.
    t.prefix(b"s");
    t.wait("the picker", |t| t.contents().contains("Enter switch"));
    t.send(b"q");
    t.wait("the picker to close", |t| {
        !t.contents().contains("Enter switch")
    });
    assert!(t.contents().contains("[gamma]"));
    drop(t);
    for s in ["alpha", "beta", "gamma"] {
        ok(herdr(&env, &["--session", s, "server", "stop"]));
    }
}

#[test]
fn a_running_session_is_renamed_and_its_programs_still_reach_it() {
    let env = Env::new("rename-live");
    let old = env.session.clone();
    let mut t = env.client(100, 30);
    t.wait_text(&format!("[{old}]"));
    t.wait_text(PROMPT);
    let state = env.dir.path().join("state/herdr/sessions");
    wait_until("the session saved under its name", || {
        state.join(&old).join("session.json").exists()
    });

    // Renamed while attached: the client stays and shows the new name.
    let said = ok(herdr(&env, &["session", "rename", &old, "fresh"]));
    assert!(said.contains("keep running"), "{said}");
    t.wait_text("[fresh]");
    let rows = listed(&env);
    assert!(row(&rows, &old).is_none(), "{rows:?}");
    let r = row(&rows, "fresh").expect("listed by its new name");
    assert_eq!(
        (r["running"].clone(), r["clients"].clone()),
        (true.into(), 1.into())
    );
    // Its saved state moved with it, and is saved there from now on.
    wait_until("the state under the new name", || {
        state.join("fresh/session.json").exists() && !state.join(&old).exists()
    });
    // The log moved too, and goes on there.
    let log = std::fs::read_to_string(state.join("fresh/server.log")).unwrap_or_default();
    assert!(
        log.contains(&format!("INFO session: renamed from {old} to fresh")),
        "{log}"
    );

    // The shell started before the rename was told the old name; herdr run there still
    // reaches this server by it.
    t.line(&format!(
        "echo name=$HERDR_SESSION; {} pane split --direction right",
        support::BIN
    ));
    t.wait_text(&format!("name={old}"));
    wait_until("the split made from inside", || {
        let panes = support::json(herdr(
            &env,
            &["--session", "fresh", "pane", "list", "--json"],
        ));
        panes.as_array().is_some_and(|p| p.len() == 2)
    });
    // Outside those programs the old name is refused, saying the new one.
    let out = herdr(&env, &["--session", &old, "pane", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("use `--session fresh`"),
        "{}",
        stderr(&out)
    );

    // Nobody else gets the old name while it runs: no client attaches by it, no server
    // starts under it.
    let mut by_old = env.client(100, 30);
    by_old.wait_text("was renamed to fresh");
    by_old.wait_exit();
    let out = herdr(&env, &["--session", &old, "server", "start"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("fresh"), "{}", stderr(&out));
    let out = herdr(&env, &["session", "rename", "fresh", &old]);
    assert!(
        stderr(&out).contains("old name of session fresh"),
        "{}",
        stderr(&out)
    );

    // Once it stops, the old name is free again.
    drop(t);
    ok(herdr(&env, &["--session", "fresh", "server", "stop"]));
    ok(herdr(&env, &["--session", &old, "server", "start"]));
    assert!(row(&listed(&env), &old).is_some_and(|r| r["running"] == true));
    ok(herdr(&env, &["--session", &old, "server", "stop"]));
}
