//! End-to-end: where panes start. The session's first pane starts in the folder herdr was
//! run in; new panes, tabs and workspaces start in the folder of the pane they come from
//! (of the program in front in it, like tmux's `#{pane_current_path}`).

mod support;

use std::path::Path;

use support::{ok, started, wait_until, Env, Outer, Term, PROMPT};

/// Types `pwd` in the focused pane and waits for `dir` on screen, on a line of its own.
fn pwd_shows(t: &mut Term, dir: &Path) {
    let dir = dir.display().to_string();
    let before = t.rows().iter().filter(|r| r.contains(&dir)).count();
    t.line("pwd");
    t.wait(&format!("pwd printing {dir}"), |t| {
        t.rows().iter().filter(|r| r.contains(&dir)).count() > before
    });
}

/// Types a command and waits for the prompt after it.
fn run(t: &mut Term, line: &str) {
    let before = t.count(PROMPT);
    t.line(line);
    t.wait(&format!("the prompt after {line}"), |t| {
        t.count(PROMPT) > before
    });
}

#[test]
fn the_first_pane_starts_where_herdr_was_run() {
    let env = Env::new("first-cwd");
    let dir = env.home().join("code/sub project");
    std::fs::create_dir_all(&dir).unwrap();
    let mut t = env.client_from(&dir, Outer::legacy(), 120, 30, &[]);
    t.wait_text(PROMPT);
    // The workspace is named after that folder, and the shell is in it.
    t.wait_text("sub project");
    pwd_shows(&mut t, &dir);
    let listed = ok(env.herdr(&["pane", "list", "--json"]));
    assert!(listed.contains("p1"), "{listed}");
}

#[test]
fn new_panes_tabs_and_workspaces_start_in_the_folder_of_the_program_in_front() {
    let env = Env::new("new-cwd");
    let (outer, inner) = (env.home().join("outer"), env.home().join("inner"));
    std::fs::create_dir_all(&outer).unwrap();
    std::fs::create_dir_all(&inner).unwrap();
    let mut t = env.client(120, 30);
    t.wait_text(PROMPT);
    // The pane's own shell stays in `outer`; a shell started from it moves to `inner`.
    run(&mut t, "cd ~/outer && bash");
    run(&mut t, "cd ~/inner");
    // A split.
    t.prefix(b"%");
    t.wait("the split's prompt", |t| t.count(PROMPT) >= 4);
    pwd_shows(&mut t, &inner);
    // A tab, from that new pane (in `inner` too).
    run(&mut t, "cd ~/outer");
    t.prefix(b"c");
    wait_until("a second tab", || {
        count(env.herdr(&["tab", "list", "--json"])) == 2
    });
    t.wait_text(PROMPT);
    pwd_shows(&mut t, &outer);
    // A workspace, from the tab's pane.
    run(&mut t, "cd ~/inner");
    t.prefix(b"W");
    wait_until("a second workspace", || {
        count(env.herdr(&["workspace", "list", "--json"])) == 2
    });
    t.wait_text("inner");
    pwd_shows(&mut t, &inner);
}

#[test]
fn splits_and_tabs_from_the_cli_start_in_the_folder_of_their_pane() {
    let env = started("split-cwd");
    let dir = env.home().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    support::prompt(&env, "p1");
    support::submit(&env, "p1", "cd ~/project && echo moved-$((6*7))");
    support::wait_output(&env, "p1", "^moved-42$");
    // Another pane, in the home folder, takes the focus.
    let other = ok(env.herdr(&["pane", "split", "--pane", "p1", "--cwd", "/"]));
    support::prompt(&env, &other);
    ok(env.herdr(&["pane", "focus", "--pane", &other]));
    let split = ok(env.herdr(&[
        "pane",
        "split",
        "--pane",
        "p1",
        "--",
        "bash",
        "-c",
        "pwd; exec sleep 60",
    ]));
    let want = format!("^{}$", regex_escape(&dir.display().to_string()));
    support::wait_output(&env, &split, &want);
    // A tab made from the CLI starts where the focused pane is.
    ok(env.herdr(&["pane", "focus", "--pane", "p1"]));
    let tab = support::json(env.herdr(&["tab", "create", "--json"]));
    let pane = tab["pane"].as_str().unwrap().to_string();
    support::prompt(&env, &pane);
    support::submit(&env, &pane, "pwd");
    support::wait_output(&env, &pane, &want);
}

fn count(out: std::process::Output) -> usize {
    support::json(out).as_array().map_or(0, Vec::len)
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}
