//! The config loader's tests: defaults, diagnostics with lines, every section.

use super::schema::{Field, Kind};
use super::*;

const PATH: &str = "/home/u/.config/herdr/config.toml";
const ALL_VALID: &str = "prefix = \"C-a\"\nshell = \"/bin/zsh\"\nscrollback_lines = 500\n\
                         sidebar = false\nsidebar_width = 30\n";

fn parse_str(text: &str) -> (Config, Vec<Diagnostic>) {
    parse(text, Path::new(PATH))
}

fn binding(key: &str, action: &str, line: usize) -> KeySetting {
    let (key, action) = (key.to_string(), action.to_string());
    KeySetting { key, action, line }
}

/// Asserts exactly one diagnostic at `line` for `key`, and returns its message.
fn one(diags: &[Diagnostic], line: usize, key: &str) -> String {
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].line, Some(line), "{diags:#?}");
    assert_eq!(diags[0].key.as_deref(), Some(key), "{diags:#?}");
    diags[0].message.clone()
}

#[test]
fn missing_file_gives_defaults_silently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, diags) = load(&dir.path().join("nope.toml"));
    assert!(diags.is_empty());
    assert_eq!(config, Config::default());
    assert_eq!((&*config.prefix, config.scrollback_lines), ("C-b", 10_000));
    assert_eq!((config.sidebar, config.sidebar_width), (true, 24));
}

#[test]
fn unreadable_file_gives_defaults_and_one_diagnostic() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Reading a directory fails even as root, unlike permission bits.
    let (config, diags) = load(dir.path());
    assert_eq!(config, Config::default());
    assert_eq!((diags.len(), diags[0].line), (1, None));
    assert!(diags[0].message.starts_with("cannot read"), "{}", diags[0]);
}

#[test]
fn loads_all_valid_keys_from_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    // (`load` checks the shell can run: one every system has.)
    let text = ALL_VALID.replace("/bin/zsh", "/bin/sh");
    std::fs::write(&path, format!("{text}[keys]\nx = \"close_pane\"\n")).expect("write");
    let (config, diags) = load(&path);
    assert!(diags.is_empty(), "{diags:#?}");
    let want = Config {
        prefix: "C-a".into(),
        shell: "/bin/sh".into(),
        scrollback_lines: 500,
        sidebar: false,
        sidebar_width: 30,
        keys: vec![binding("x", "close_pane", 7)],
        ..Config::default()
    };
    assert_eq!(config, want);
}

#[test]
fn bad_values_keep_their_default_and_others_apply() {
    let cases = [
        ("prefix = 3", "found 3; using the default \"C-b\""),
        ("prefix = \"\"", "expected a non-empty string"),
        ("shell = [\"zsh\"]", "found an array"),
        ("sidebar = \"yes\"", "true or false, found \"yes\""),
        ("scrollback_lines = \"x\"", "found \"x\""),
        ("scrollback_lines = -1", "found -1"),
        ("scrollback_lines = 1000001", "1000000, found 1000001"),
        ("scrollback_lines = 1.5", "found 1.5"),
        ("sidebar_width = 9", "between 10 and 80, found 9"),
        ("sidebar_width = 81", "found 81; using the default 24"),
        ("keys = 5", "found 5; using the default bindings"),
    ];
    for (bad, fragment) in cases {
        let key = bad.split(' ').next().unwrap_or_default();
        // The file minus this key parses to exactly what we want: the
        // default for `key`, every other valid key applied.
        let rest: String = ALL_VALID
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} ")))
            .map(|l| format!("{l}\n"))
            .collect();
        let (want, none) = parse_str(&rest);
        assert!(none.is_empty(), "{none:#?}");
        let (config, diags) = parse_str(&format!("# herdr\n\n{bad}\n{rest}"));
        let message = one(&diags, 3, key);
        assert!(message.contains(fragment), "{bad}: {message}");
        assert_eq!(config, want, "{bad}");
    }
}

#[test]
fn integer_bounds_are_inclusive() {
    for (text, want) in [
        ("0\nsidebar_width = 80", (0, 80)),
        ("1_000_000\nsidebar_width = 10", (1_000_000, 10)),
    ] {
        let (c, diags) = parse_str(&format!("scrollback_lines = {text}"));
        assert!(diags.is_empty(), "{diags:#?}");
        assert_eq!((c.scrollback_lines, c.sidebar_width), want);
    }
}

#[test]
fn unknown_keys_are_reported_with_line_and_known_keys() {
    let (config, diags) = parse_str("sidebar = false\nsidbar_width = 30\n");
    let message = one(&diags, 2, "sidbar_width");
    assert!(message.contains("known keys are prefix, shell, scrollback_lines"));
    assert!(!config.sidebar, "valid keys still apply");
    let (_, diags) = parse_str("prefix = \"C-a\"\n\n[persist]\nhistory = true\n");
    one(&diags, 3, "persist");
}

#[test]
fn persistence_section() {
    let text = "[persistence]\nhistory = true\nhistory_lines = 50\nrestore_commands = [\"vim\", \"npm run dev\", \"\", 3]\n";
    let (c, diags) = parse_str(text);
    assert!(c.history);
    assert_eq!(c.history_lines, 50);
    assert_eq!(c.restore_commands, ["vim", "npm run dev"]);
    assert_eq!(
        diags.len(),
        2,
        "the empty and the non-string entry: {diags:#?}"
    );
    assert_eq!(
        diags[0].key.as_deref(),
        Some("persistence.restore_commands")
    );
    let (c, diags) = parse_str("[persistence]\nrestore_commands = \"vim\"\n");
    assert!(c.restore_commands.is_empty());
    assert!(diags[0].message.contains("a list of strings"), "{diags:#?}");
}

#[test]
fn syntax_error_gives_defaults_and_one_diagnostic_with_line() {
    let (config, diags) = parse_str("prefix = \"C-a\"\nsidebar = \nshell = \"/bin/zsh\"\n");
    assert_eq!(config, Config::default());
    assert_eq!(
        (diags.len(), diags[0].line, &diags[0].key),
        (1, Some(2), &None)
    );
    assert!(diags[0].message.starts_with("invalid TOML: "), "{diags:?}");
}

#[test]
fn keys_keep_file_order_lines_and_none() {
    let text = "[keys]\n\"%\" = \"split_right\"\nx = \"close_pane\"\n# c\nb = \"none\"\na = 7\n";
    let (config, diags) = parse_str(text);
    let want = [
        binding("%", "split_right", 2),
        binding("x", "close_pane", 3),
        binding("b", "none", 5),
    ];
    assert_eq!(config.keys, want);
    assert!(one(&diags, 6, "keys.a").contains("found 7"));
}

#[test]
fn diagnostic_display_format() {
    let (_, diags) = parse_str("\n\nscrollback_lines = \"lots\"\n");
    assert_eq!(
        diags[0].to_string(),
        "/home/u/.config/herdr/config.toml:3: scrollback_lines: expected an integer \
         between 0 and 1000000, found \"lots\"; using the default 10000"
    );
    let bare = Diagnostic::new(Path::new(PATH), None, None, "m".into());
    assert_eq!(bare.to_string(), format!("{PATH}: m"));
}

#[test]
fn nested_sections_are_walked_with_dotted_keys() {
    // Stand-in for a future `[persistence] history = true` section.
    const HISTORY: &[Field] = &[Field("history", Kind::Bool(|c| &mut c.sidebar), "")];
    const SCHEMA: Kind = Kind::Table(&[Field("persistence", Kind::Table(HISTORY), "")]);
    let run = |text: &str| {
        let w = parse_with(&SCHEMA, text, Path::new(PATH));
        (w.config, w.diags)
    };
    let (c, diags) = run("[persistence]\nhistory = false\n");
    assert!(diags.is_empty() && !c.sidebar, "{diags:#?}");
    let (_, diags) = run("[persistence]\nhistroy = false\n");
    let message = one(&diags, 2, "persistence.histroy");
    assert!(message.ends_with("known keys are history"), "{message}");
    let (_, diags) = run("persistence.history = 1\n");
    one(&diags, 1, "persistence.history");
    one(&run("\npersistence = 1\n").1, 2, "persistence");
}

#[test]
fn default_path_and_shell_from_env_values() {
    let pf = |x: Option<&str>, h: Option<&str>| path_from(x.map(Into::into), h.map(Into::into));
    let want = |s: &str| Some(PathBuf::from(s));
    let home = want("/h/.config/herdr/config.toml");
    assert_eq!(pf(Some("/x"), Some("/h")), want("/x/herdr/config.toml"));
    assert_eq!(pf(Some("rel"), Some("/h")), home);
    assert_eq!(pf(None, Some("/h")), home);
    assert_eq!(pf(None, None), None);
    assert_eq!(shell_from(Some("/bin/fish".into())), "/bin/fish");
    assert_eq!(shell_from(Some("".into())), "/bin/sh");
    assert_eq!(shell_from(None), "/bin/sh");
}

#[test]
fn notify_section() {
    let (c, diags) = parse_str("");
    assert!(diags.is_empty());
    assert_eq!(c.notify_terminal, "auto");
    assert_eq!(c.notify_states, ["blocked", "done"]);
    assert_eq!(c.notify_bells, "any");
    assert!(c.notify_off_for.is_empty() && c.notify_command.is_empty());
    let text = "[notify]\nterminal = \"osc777\"\nstates = [\"blocked\"]\n\
                off_for = [\"codex\"]\ncommand = [\"sh\", \"-c\", \"cat > 'a file'\"]\n\
                bells = \"off\"\n";
    let (c, diags) = parse_str(text);
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(c.notify_terminal, "osc777");
    assert_eq!(c.notify_states, ["blocked"]);
    assert_eq!(c.notify_off_for, ["codex"]);
    assert_eq!(
        c.notify_command,
        ["sh", "-c", "cat > 'a file'"],
        "kept verbatim"
    );
    assert_eq!(c.notify_bells, "off");
}

#[test]
fn notify_bad_values_name_the_key_and_the_allowed_values() {
    let (c, diags) = parse_str("[notify]\nterminal = \"osc99\"\n");
    let message = one(&diags, 2, "notify.terminal");
    assert!(
        message.contains("one of auto, osc9, osc777, bell, off, found \"osc99\""),
        "{message}"
    );
    assert_eq!(c.notify_terminal, "auto");
    let (c, diags) = parse_str("[notify]\nstates = [\"blocked\", \"working\"]\n");
    let message = one(&diags, 2, "notify.states");
    assert!(
        message.contains("one of blocked, done, found \"working\""),
        "{message}"
    );
    assert_eq!(c.notify_states, ["blocked"], "the valid entries apply");
    let (_, diags) = parse_str("[notify]\noff_for = [\"klaude\"]\n");
    let message = one(&diags, 2, "notify.off_for");
    assert!(message.contains("one of claude, codex"), "{message}");
    let (_, diags) = parse_str("[notify]\nstates = \"blocked\"\n");
    assert!(one(&diags, 2, "notify.states").contains("a list of blocked, done"));
    for bad in ["\"ntfy\"", "[\"\", \"x\"]", "[\"ntfy\", 3]"] {
        let (c, diags) = parse_str(&format!("[notify]\ncommand = {bad}\n"));
        let message = one(&diags, 2, "notify.command");
        assert!(message.contains("running no command"), "{bad}: {message}");
        assert!(c.notify_command.is_empty());
    }
    let (c, diags) = parse_str("[notify]\ncommand = []\n");
    assert!(diags.is_empty() && c.notify_command.is_empty());
}

#[test]
fn remain_on_exit_takes_one_of_three_words() {
    assert_eq!(parse_str("").0.remain_on_exit, "command");
    let (c, diags) = parse_str("remain_on_exit = \"always\"\n");
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(c.remain_on_exit, "always");
    let (c, diags) = parse_str("remain_on_exit = \"sometimes\"\n");
    assert_eq!(c.remain_on_exit, "command", "the default stays");
    let text = diags[0].to_string();
    assert!(
        text.contains(":1: remain_on_exit") && text.contains("never"),
        "{text}"
    );
}

#[test]
fn the_default_text_loads_as_the_defaults_and_names_every_key() {
    let text = default_text("# \"%\" = \"split_right\"\n");
    let (config, diags) = parse_str(&text);
    assert!(diags.is_empty(), "{diags:#?}\n{text}");
    assert_eq!(config, Config::default());
    for key in default_text::all_keys() {
        let (section, name) = key.rsplit_once('.').unwrap_or(("", &key));
        let written = match section {
            "" => [
                format!("\n{name} = "),
                format!("\n# {name} = "),
                format!("\n[{name}]\n"),
            ]
            .iter()
            .any(|w| text.contains(w.as_str())),
            _ => {
                text.contains(&format!("\n[{section}]\n")) && text.contains(&format!("\n{name} = "))
            }
        };
        assert!(written, "{key} is not in the default text:\n{text}");
    }
    // Every key has a comment saying what it does, with its range where it has one.
    assert!(
        text.contains(
            "# Lines of history kept per pane. From 0 to 1000000.\nscrollback_lines = 10000\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("never.\nremain_on_exit = \"command\"\n"),
        "{text}"
    );
    assert!(
        text.contains("\n# shell = "),
        "the shell depends on $SHELL: {text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 88), "{text}");
}

#[test]
fn changes_name_the_keys_that_differ_with_their_new_value() {
    let (new, _) =
        parse_str("prefix = \"C-a\"\n[notify]\nbells = \"off\"\n[keys]\nv = \"split_right\"\n");
    let got = changes(&Config::default(), &new);
    let want = [
        ("prefix", "\"C-a\""),
        ("keys", "{ \"v\" = \"split_right\" }"),
        ("notify.bells", "\"off\""),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
    assert!(changes(&new, &new).is_empty());
}

#[test]
fn unknown_keys_are_told_the_closest_known_one() {
    let (_, diags) = parse_str("prefx = \"C-a\"\n[notify]\nbell = \"off\"\n");
    assert_eq!(diags.len(), 2, "{diags:#?}");
    assert_eq!(diags[0].line, Some(1));
    assert!(
        diags[0].message.contains("did you mean `prefix`?"),
        "{}",
        diags[0]
    );
    assert_eq!(
        (diags[1].line, diags[1].key.as_deref()),
        (Some(3), Some("notify.bell"))
    );
    assert!(
        diags[1].message.contains("did you mean `bells`?"),
        "{}",
        diags[1]
    );
}

#[test]
fn a_bad_prefix_is_reported_at_its_line() {
    let (config, diags) = parse_str("sidebar = true\nprefix = \"C-bogus\"\n");
    let message = one(&diags, 2, "prefix");
    assert!(
        message.contains("invalid key \"C-bogus\"")
            && message.ends_with("using the default \"C-b\""),
        "{message}"
    );
    assert_eq!(config.prefix, "C-b");
}

#[test]
fn a_shell_that_cannot_run_falls_back_to_shell_then_bin_sh() {
    let path = Path::new(PATH);
    let run = |configured: &str, env: &str, runs: &[&str]| {
        let mut c = Config {
            shell: configured.into(),
            ..Config::default()
        };
        let runs: Vec<String> = runs.iter().map(|s| s.to_string()).collect();
        let d = check_shell(
            &mut c,
            path,
            Some(4),
            |s| runs.iter().any(|r| r == s),
            || env.into(),
        );
        (c.shell, d)
    };
    assert_eq!(
        run("/bin/zsh", "/bin/bash", &["/bin/zsh"]),
        ("/bin/zsh".into(), None)
    );
    let (shell, d) = run("/no/zsh", "/bin/bash", &["/bin/bash", "/bin/sh"]);
    let d = d.unwrap();
    assert_eq!(
        (shell.as_str(), d.line, d.key.as_deref()),
        ("/bin/bash", Some(4), Some("shell"))
    );
    assert_eq!(
        d.message,
        "\"/no/zsh\" is not the path of an executable file; using \"/bin/bash\" ($SHELL)"
    );
    let (shell, d) = run("/no/zsh", "/no/fish", &["/bin/sh"]);
    assert_eq!(shell, "/bin/sh");
    assert!(d.unwrap().message.ends_with("using \"/bin/sh\""));
    // Not configured: the default is not second-guessed.
    let mut c = Config {
        shell: "/no/zsh".into(),
        ..Config::default()
    };
    assert!(check_shell(&mut c, path, None, |_| false, || "/bin/sh".into()).is_none());
    assert!(runnable("/bin/sh") && !runnable("sh") && !runnable("/") && !runnable("/no/such"));
}
