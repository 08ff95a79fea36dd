//! End-to-end: the config file checked (`herdr config check`), written out
//! (`herdr config default`) and reloaded into a running server (`herdr server
//! reload-config`, the prefix then R), with the screen showing what applied.

mod support;

use support::{Env, Term, PROMPT};

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// The status line of a 120×30 client.
fn status(t: &Term) -> String {
    t.row(29)
}

#[test]
fn check_lists_every_problem_with_its_line_and_the_key_meant() {
    let env = Env::new("check");
    std::fs::write(
        env.config_file(),
        "prefx = \"C-a\"\nprefix = \"C-nope\"\nsidebar_widht = 30\n\n[keys]\n\
         v = \"splt_right\"\n[notfy]\n",
    )
    .unwrap();
    // Without a server, on the config file in force.
    let out = env.herdr(&["config", "check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let want = [
        (
            "config.toml:1: prefx: unknown key (did you mean `prefix`?)",
            "",
        ),
        (
            "config.toml:2: prefix: invalid key \"C-nope\"",
            "using the default \"C-b\"",
        ),
        (
            "config.toml:3: sidebar_widht: unknown key (did you mean `sidebar_width`?)",
            "",
        ),
        (
            "config.toml:6: keys.v: unknown action \"splt_right\" (did you mean `split_right`?)",
            "",
        ),
        (
            "config.toml:7: notfy: unknown key (did you mean `notify`?)",
            "",
        ),
    ];
    assert_eq!(lines.len(), want.len(), "{stdout}");
    for (line, (start, end)) in lines.iter().zip(want) {
        assert!(
            line.contains(start) && line.ends_with(end),
            "{line}\n{stdout}"
        );
    }
    assert!(text(&out.stderr).contains("5 problems in"), "{out:?}");
    // A good file (given by name) is ok.
    let good = env.dir.path().join("good.toml");
    std::fs::write(&good, "prefix = \"C-a\"\n[keys]\nv = \"split_right\"\n").unwrap();
    let out = env.herdr(&["config", "check", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(text(&out.stdout).trim(), format!("ok: {}", good.display()));
    // A file that is not there is an error when named.
    let out = env.herdr(&["config", "check", "/nonexistent/config.toml"]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(!env.socket().exists(), "checking needs no server");
}

#[test]
fn the_default_config_checks_clean_and_names_every_section() {
    let env = Env::new("default");
    let out = env.herdr(&["config", "default"]);
    assert!(out.status.success(), "{out:?}");
    let default = text(&out.stdout);
    for section in [
        "[keys]",
        "[persistence]",
        "[update]",
        "[remote]",
        "[notify]",
    ] {
        assert!(
            default.contains(&format!("\n{section}\n")),
            "{section}\n{default}"
        );
    }
    assert!(default.contains("# \"R\" = \"reload_config\""), "{default}");
    std::fs::write(env.config_file(), &default).unwrap();
    let out = env.herdr(&["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).starts_with("ok: "), "{out:?}");
}

/// A client on the default config, at its prompt.
fn attached(env: &Env) -> Term {
    let t = env.client(120, 30);
    t.wait_text(PROMPT);
    t
}

/// The new prefix and binding split the pane; the old prefix is the program's again.
fn new_keys_apply(env: &Env, t: &mut Term) {
    t.send(b"\x01v");
    t.wait("C-a v to split", |t| t.count(PROMPT) == 2);
    // C-b % now reaches the shell (which takes C-u to clear what it got) and splits
    // nothing.
    t.send(b"\x02%\x15");
    t.line("echo old-prefix-$((6*7))");
    t.wait_text("old-prefix-42");
    assert_eq!(support::pane_list(env).len(), 2);
}

const NEW_KEYS: &str = "prefix = \"C-a\"\n[keys]\n\"v\" = \"split_right\"\n";

#[test]
fn reload_config_applies_a_new_prefix_and_binding_while_attached() {
    let env = Env::new("reload");
    let mut t = attached(&env);
    std::fs::write(env.config_file(), NEW_KEYS).unwrap();
    let out = env.herdr(&["server", "reload-config"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("applied: prefix = \"C-a\""), "{stdout}");
    assert!(
        stdout.contains("applied: keys = { \"v\" = \"split_right\" }"),
        "{stdout}"
    );
    t.wait("the status line to say so", |t| {
        let s = status(t);
        s.contains("config reloaded") && s.contains("C-a ? help")
    });
    new_keys_apply(&env, &mut t);
}

#[test]
fn prefix_r_reloads_and_a_bad_value_is_reported_while_the_rest_applies() {
    let env = Env::new("reload-r");
    let mut t = attached(&env);
    std::fs::write(
        env.config_file(),
        format!("scrollback_lines = \"lots\"\n{NEW_KEYS}"),
    )
    .unwrap();
    t.prefix(b"R");
    t.wait("the problem counted on the status line", |t| {
        status(t).contains("config: 1 problem (herdr config check): line 1: scrollback_lines")
    });
    new_keys_apply(&env, &mut t);
    // The CLI says it too, and fails; the server log has the problem.
    let out = env.herdr(&["server", "reload-config"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("config.toml:1: scrollback_lines: expected an integer")
            && stdout.contains("using the default 10000")
            && stdout.contains("applied: nothing changed"),
        "{stdout}"
    );
    let log = std::fs::read_to_string(env.server_log()).unwrap();
    assert!(
        log.contains("config.toml:1: scrollback_lines: expected"),
        "{log}"
    );
}

#[test]
fn reload_config_without_a_server_says_so() {
    let env = Env::new("reload-none");
    let out = env.herdr(&["server", "reload-config"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        text(&out.stderr).contains("no herdr server is running"),
        "{out:?}"
    );
}
