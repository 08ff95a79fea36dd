//! The help that `--help`, completion and `herdr man` show: every command and argument a
//! user can see says what it does, and the internal commands stay out of sight.

use clap::{Command, CommandFactory};

use super::Cli;

/// The commands only herdr itself runs: hidden from help, completion and the man page.
const INTERNAL: [&str; 7] = [
    "herdr remote-bridge",
    "herdr machine link",
    "herdr machine view",
    "herdr server run",
    "herdr server import",
    "herdr agent hook",
    "herdr man",
];

/// The tree as clap shows it, with its `help` subcommands and global arguments in place.
fn built() -> Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// Every command below `cmd` (itself included) with its path, hidden ones only if asked.
fn walk<'a>(cmd: &'a Command, path: String, hidden: bool, out: &mut Vec<(String, &'a Command)>) {
    for sub in cmd.get_subcommands().filter(|s| hidden || !s.is_hide_set()) {
        walk(sub, format!("{path} {}", sub.get_name()), hidden, out);
    }
    out.push((path, cmd));
}

fn commands(cmd: &Command, hidden: bool) -> Vec<(String, &Command)> {
    let mut out = Vec::new();
    walk(cmd, cmd.get_name().to_string(), hidden, &mut out);
    out
}

fn paths(cmd: &Command, hidden: bool) -> Vec<String> {
    let mut paths: Vec<String> = commands(cmd, hidden).into_iter().map(|(p, _)| p).collect();
    paths.sort();
    paths
}

fn blank(text: Option<&clap::builder::StyledStr>) -> bool {
    text.is_none_or(|t| t.to_string().trim().is_empty())
}

/// What a user can see that says nothing: `herdr pane get` (no about) or
/// `herdr pane get --pane` (no help).
fn unexplained(commands: &[(String, &Command)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (path, cmd) in commands {
        if blank(cmd.get_about()) {
            missing.push(path.clone());
        }
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = arg.get_id().as_str();
            if ["help", "version"].contains(&id) || !blank(arg.get_help()) {
                continue;
            }
            let name = arg
                .get_long()
                .map_or(id.to_uppercase(), |l| format!("--{l}"));
            missing.push(format!("{path} {name}"));
        }
    }
    missing
}

#[test]
fn every_visible_command_and_argument_says_what_it_does() {
    let cmd = built();
    let visible = commands(&cmd, false);
    assert!(
        visible.len() > 40,
        "the walk found only {} commands",
        visible.len()
    );
    let missing = unexplained(&visible);
    assert!(
        missing.is_empty(),
        "these have no help line; give each a doc comment saying what it does:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_walk_names_what_has_no_help() {
    let cmd = Command::new("x")
        .about("X.")
        .subcommand(Command::new("quiet").arg(clap::Arg::new("flag").long("flag")))
        .subcommand(Command::new("secret").hide(true));
    let mut missing = unexplained(&commands(&cmd, false));
    missing.sort();
    assert_eq!(missing, ["x quiet", "x quiet --flag"]);
}

#[test]
fn exactly_the_internal_commands_are_hidden() {
    // Before clap adds its `help` subcommands, which mirror the tree.
    let cmd = Cli::command();
    let visible = paths(&cmd, false);
    let hidden: Vec<String> = paths(&cmd, true)
        .into_iter()
        .filter(|p| !visible.contains(p))
        .collect();
    let mut want = INTERNAL.map(String::from).to_vec();
    want.sort();
    assert_eq!(hidden, want);
}

#[test]
fn completion_and_the_man_page_leave_the_internal_commands_out() {
    let public = paths(&super::manual::public_command(), true);
    assert_eq!(public, paths(&Cli::command(), false));
    assert!(
        public.contains(&"herdr pane wait".to_string()),
        "{public:?}"
    );
}
