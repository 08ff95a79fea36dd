//! End-to-end: the tmux habits, typed into the real client: `x` and `&` ask first, `o`
//! and `;` move the focus, `{` and `}` swap panes, resize keys repeat without the prefix.

mod support;

use support::{pane_list, wait_until, Env, Term, PROMPT};

fn ready(env: &Env) -> Term {
    let t = env.client(120, 30);
    t.wait_text(PROMPT);
    t
}

fn focused(env: &Env) -> String {
    let panes = pane_list(env);
    let p = panes.iter().find(|p| p["focused"] == true);
    p.and_then(|p| p["id"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn x_and_ampersand_ask_before_closing_what_runs() {
    let env = Env::new("habit-ask");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"x");
    t.wait_text("close pane p2 (bash)? (y/n)");
    t.send(b"n");
    t.wait("the question to go", |t| !t.contents().contains("(y/n)"));
    assert_eq!(pane_list(&env).len(), 2, "n keeps the pane");
    // The answer did not reach the shell either.
    t.line("echo still-here");
    t.wait_text("still-here");
    t.prefix(b"x");
    t.wait_text("close pane p2");
    t.send(b"y");
    wait_until("the pane to close", || pane_list(&env).len() == 1);
    // A tab and its panes.
    t.prefix(b"c");
    wait_until("a second tab", || pane_list(&env).len() == 2);
    t.prefix(b"&");
    t.wait_text("close tab t2 and its panes? (y/n)");
    t.send(b"y");
    wait_until("the tab to close", || pane_list(&env).len() == 1);
}

#[test]
fn o_goes_round_the_panes_and_semicolon_goes_back() {
    let env = Env::new("habit-focus");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"\"");
    t.wait("three prompts", |t| t.count(PROMPT) == 3);
    wait_until("p3 focused", || focused(&env) == "p3");
    t.prefix(b"o");
    wait_until("o wraps to p1", || focused(&env) == "p1");
    t.prefix(b"o");
    wait_until("then p2", || focused(&env) == "p2");
    t.prefix(b";");
    wait_until("; back to p1", || focused(&env) == "p1");
    t.prefix(b";");
    wait_until("and to p2 again", || focused(&env) == "p2");
}

#[test]
fn braces_swap_the_pane_with_its_neighbour_and_keep_it_focused() {
    let env = Env::new("habit-swap");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.line("echo marker-of-p2");
    t.wait_text("marker-of-p2");
    let div = t.divider_col(10).expect("a divider");
    let col = |t: &Term| t.find("marker-of-p2").map(|(_, c)| c);
    assert!(col(&t).unwrap() > div, "p2 starts on the right");
    t.prefix(b"{");
    t.wait("p2 on the left", |t| col(t).is_some_and(|c| c < div));
    assert_eq!(focused(&env), "p2");
    t.prefix(b"}");
    t.wait("p2 back on the right", |t| col(t).is_some_and(|c| c > div));
}

#[test]
fn resize_keys_repeat_without_the_prefix_for_a_moment() {
    let env = Env::new("habit-repeat");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"h");
    wait_until("p1 focused", || focused(&env) == "p1");
    let start = t.divider_col(10).expect("a divider");
    // The prefix, then L three times: one resize after the prefix, two repeats.
    t.send(b"\x02LLL");
    t.wait("the divider three steps right", |t| {
        t.divider_col(10) == Some(start + 6)
    });
    // Once the moment has passed, L is typed again.
    std::thread::sleep(std::time::Duration::from_millis(700));
    t.line("echo LLL-typed");
    t.wait_text("LLL-typed");
    assert_eq!(t.divider_col(10), Some(start + 6));
}

#[test]
fn comma_and_dollar_rename_the_tab_and_the_workspace_on_the_status_line() {
    let env = Env::new("habit-rename");
    let mut t = ready(&env);
    t.prefix(b",");
    t.wait_text("rename tab t1: _");
    t.send(b"buildx");
    t.wait_text("rename tab t1: buildx_");
    t.send(b"\x7fs\r");
    t.wait("the tab's new name", |t| t.contents().contains("1:builds"));
    let tabs = support::json(env.herdr(&["tab", "list", "--json"]));
    assert_eq!(tabs[0]["name"], "builds", "{tabs}");
    // The workspace starts from its name; ctrl+u clears it; Esc would keep it.
    t.prefix(b"$");
    t.wait_text("rename workspace w1: ~_");
    t.send(b"\x15agents\r");
    t.wait("the workspace's new name", |t| {
        t.contents().contains("agents")
    });
    t.prefix(b"$");
    t.wait_text("rename workspace w1: agents_");
    t.send(b"zzz\x1b");
    t.wait("the prompt gone", |t| {
        !t.contents().contains("rename workspace")
    });
    let ws = support::json(env.herdr(&["workspace", "list", "--json"]));
    assert_eq!(ws[0]["name"], "agents", "Esc kept the name: {ws}");
    // None of it reached the shell.
    t.line("echo typed-$((1+1))");
    t.wait_text("typed-2");
    assert!(!t.contents().contains("buildsecho"), "{}", t.contents());
}

#[test]
fn the_help_fits_in_two_columns_or_scrolls_at_80_by_24() {
    let env = Env::new("habit-help");
    let mut wide = env.client(120, 36);
    wide.wait_text(PROMPT);
    wide.prefix(b"?");
    wide.wait_text("herdr keys");
    for shown in [
        "split the pane side by side",
        "detach",
        "1 … 9",
        "go to tab N",
    ] {
        assert!(
            wide.contents().contains(shown),
            "{shown}:\n{}",
            wide.contents()
        );
    }
    assert!(!wide.contents().contains("j/k scroll"), "it all fits");
    wide.send(b"q");
    wide.wait("closed", |t| !t.contents().contains("herdr keys"));
    drop(wide);
    let mut small = env.client(80, 24);
    small.wait_text(PROMPT);
    small.prefix(b"?");
    small.wait_text("j/k scroll (1-");
    assert!(small.contents().contains("split the pane side by side"));
    small.send(b"jj");
    small.wait_text("j/k scroll (3-");
    small.send(b"G");
    small.wait("closed", |t| !t.contents().contains("herdr keys"));
}
