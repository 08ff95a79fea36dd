//! What herdr tells of itself besides `--help`: the shell completion script and the manual
//! page (`herdr man`). Both are made from the clap tree less its hidden commands, the
//! internal ones (which clap_complete would otherwise offer).

use clap::{Arg, Command, CommandFactory};
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};

use super::Cli;
use crate::protocol::exit;

/// The command tree a user sees: `Cli` without its hidden subcommands, at every depth.
pub fn public_command() -> Command {
    without_hidden(&Cli::command().version(crate::protocol::version()))
}

/// `cmd` and its visible subcommands, recursively. clap cannot remove a subcommand, so
/// each command that has some is made anew with what help and completion read of it.
fn without_hidden(cmd: &Command) -> Command {
    if !cmd.has_subcommands() {
        return cmd.clone();
    }
    let mut made = Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().cloned())
        .groups(cmd.get_groups().cloned())
        .visible_aliases(cmd.get_visible_aliases().map(str::to_string))
        .subcommand_required(cmd.is_subcommand_required_set())
        .arg_required_else_help(cmd.is_arg_required_else_help_set());
    if let Some(about) = cmd.get_about() {
        made = made.about(about.clone());
    }
    if let Some(about) = cmd.get_long_about() {
        made = made.long_about(about.clone());
    }
    if let Some(after) = cmd.get_after_help() {
        made = made.after_help(after.clone());
    }
    if let Some(version) = cmd.get_version() {
        made = made.version(version.to_string());
    }
    made.subcommands(
        cmd.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(without_hidden),
    )
}

/// The variable that makes herdr answer a completion request instead of running: the
/// registration `herdr completion SHELL` prints sets it when it calls herdr back.
pub const COMPLETE_VAR: &str = "HERDR_COMPLETE";

/// Answers the shell and exits, when this run is a completion request (see
/// [`COMPLETE_VAR`]); otherwise returns at once.
pub fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(public_command)
        .var(COMPLETE_VAR)
        .bin("herdr")
        .complete();
}

/// What the shell sources (`source <(herdr completion bash)`): a function that asks herdr
/// for the candidates each time, so session names are this user's sessions of the
/// moment. In memory: the caller decides what a failed write means.
pub fn completion(shell: clap_complete::Shell) -> Vec<u8> {
    use clap_complete::env::Shells;
    let mut script = Vec::new();
    let name = shell.to_string();
    if let Some(shell) = Shells::builtins().completer(&name) {
        // Writing to a Vec does not fail.
        let _ = shell.write_registration(COMPLETE_VAR, "herdr", "herdr", "herdr", &mut script);
    }
    script
}

/// Completes a session name: every session that runs or was saved.
pub fn session_names() -> clap_complete::ArgValueCompleter {
    clap_complete::ArgValueCompleter::new(|typed: &std::ffi::OsStr| {
        let typed = typed.to_string_lossy();
        crate::client::sessions::names()
            .into_iter()
            .filter(|n| n.as_str().starts_with(typed.as_ref()))
            .map(|n| clap_complete::CompletionCandidate::new(n.as_str()))
            .collect()
    })
}

/// herdr(1) in roff: clap_mangen's title, name and synopsis, then the options, every
/// command with its own options, the exit codes and the environment.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    use clap_mangen::Man;
    let mut cmd = public_command();
    cmd.build();
    let man = Man::new(cmd.clone());
    let mut page = mangen(&man, Man::render_title)?;
    append(&mut page, mangen(&man, Man::render_name_section)?);
    append(&mut page, mangen(&man, Man::render_synopsis_section)?);
    append(
        &mut page,
        section(|r| {
            description(r, &cmd);
            r.control("SH", ["OPTIONS"]);
            options(r, cmd.get_arguments());
            commands(r, &cmd);
            exit_status(r);
            environment(r);
        }),
    );
    Ok(ascii(&page))
}

/// The page in ASCII, which any formatter reads without being told an encoding: `…` as
/// `...` (roff has no portable glyph for it), any other character as its escape.
fn ascii(page: &[u8]) -> Vec<u8> {
    let mut out = String::new();
    for c in String::from_utf8_lossy(page).chars() {
        match c {
            '…' => out.push_str("..."),
            c if c.is_ascii() => out.push(c),
            c => out.push_str(&format!("\\[u{:04X}]", u32::from(c))),
        }
    }
    out.into_bytes()
}

type MangenSection = fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>;

/// One of clap_mangen's sections, rendered.
fn mangen(man: &clap_mangen::Man, render: MangenSection) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    render(man, &mut out)?;
    Ok(out)
}

/// Sections of our own, rendered.
fn section(build: impl FnOnce(&mut Roff)) -> Vec<u8> {
    let mut roff = Roff::new();
    build(&mut roff);
    roff.render().into_bytes()
}

/// Adds a rendered part to the page without the preamble that every rendering starts
/// with (the page has it once, from its title).
fn append(page: &mut Vec<u8>, part: Vec<u8>) {
    let preamble = Roff::new().render();
    let body = part.strip_prefix(preamble.as_bytes()).unwrap_or(&part);
    page.extend_from_slice(body);
}

/// Help text with its `code` spans in bold.
fn styled(text: &str) -> Vec<Inline> {
    text.split('`')
        .enumerate()
        .filter(|(_, part)| !part.is_empty())
        .map(|(n, part)| match n % 2 {
            0 => roman(part),
            _ => bold(part),
        })
        .collect()
}

fn description(roff: &mut Roff, cmd: &Command) {
    // Long synopses wrap at spaces, not inside option names.
    roff.control("nh", []).control("ad", ["l"]);
    roff.control("SH", ["DESCRIPTION"]);
    for text in [cmd.get_about(), cmd.get_after_help()]
        .into_iter()
        .flatten()
    {
        roff.control("PP", []);
        paragraphs(roff, &text.to_string());
    }
    roff.control("PP", []).text(styled(
        "Every command below takes `--session NAME` and `--help`. Ids are typed as \
         `w1`, `t2`, `p3` or a bare number.",
    ));
}

/// One entry per command that does something, grouped under its top-level command.
fn commands(roff: &mut Roff, cmd: &Command) {
    roff.control("SH", ["COMMANDS"]);
    for group in visible_subcommands(cmd) {
        let name = group.get_bin_name().unwrap_or(group.get_name());
        roff.control("SS", [name]);
        if group.has_subcommands() {
            paragraphs(roff, &about(group));
            for leaf in visible_subcommands(group) {
                entry(roff, leaf);
            }
        } else {
            entry(roff, group);
        }
    }
}

/// The subcommands a user types, without clap's own `help`.
fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// What a command does, in full (as its `--help` says it).
fn about(cmd: &Command) -> String {
    cmd.get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default()
}

/// Help text as sentences, one paragraph a line.
fn paragraphs(roff: &mut Roff, text: &str) {
    for (n, paragraph) in text.split("\n\n").map(str::trim).enumerate() {
        if n > 0 {
            roff.control("br", []);
        }
        let end = if paragraph.ends_with('.') { "" } else { "." };
        roff.text(styled(&format!("{paragraph}{end}")));
    }
}

/// A command's synopsis and what it does, then its own options.
fn entry(roff: &mut Roff, cmd: &Command) {
    roff.control("TP", []).text(synopsis(cmd));
    paragraphs(roff, &about(cmd));
    if own_args(cmd).next().is_some() {
        roff.control("RS", []);
        options(roff, own_args(cmd));
        roff.control("RE", []);
    }
}

/// Each argument with what it does.
fn options<'a>(roff: &mut Roff, args: impl Iterator<Item = &'a Arg>) {
    for arg in args.filter(|a| !a.is_hide_set()) {
        let mut name = Vec::new();
        if let Some(short) = arg.get_short() {
            name.push(bold(format!("-{short}")));
            name.push(roman(", "));
        }
        name.extend(arg_name(arg));
        roff.control("TP", []).text(name);
        paragraphs(roff, &arg_help(arg));
    }
}

/// The arguments a command has of its own: not the global ones (described once, at the
/// top) nor clap's --help.
fn own_args(cmd: &Command) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(|a| {
        !a.is_hide_set()
            && !a.is_global_set()
            && !["help", "version"].contains(&a.get_id().as_str())
    })
}

/// `herdr pane wait [--pane ID] (--output REGEX | --exit | --agent-state STATE) …`
fn synopsis(cmd: &Command) -> Vec<Inline> {
    let mut line = vec![bold(cmd.get_bin_name().unwrap_or(cmd.get_name()))];
    let grouped: Vec<&Arg> = cmd
        .get_groups()
        .filter(|g| g.is_required_set())
        .flat_map(|g| g.get_args())
        .filter_map(|id| cmd.get_arguments().find(|a| a.get_id() == id))
        .collect();
    for arg in own_args(cmd).filter(|a| !grouped.contains(a)) {
        line.push(roman(" "));
        let (open, close) = match arg.is_required_set() {
            true => ("", ""),
            false => ("[", "]"),
        };
        line.push(roman(open));
        if arg.is_last_set() {
            line.push(roman("-- "));
        }
        line.extend(arg_name(arg));
        line.push(roman(close));
    }
    if !grouped.is_empty() {
        line.push(roman(" ("));
        for (n, arg) in grouped.into_iter().enumerate() {
            if n > 0 {
                line.push(roman(" | "));
            }
            line.extend(arg_name(arg));
        }
        line.push(roman(")"));
    }
    line
}

/// `--pane ID`, `-s, --session NAME`, `KEY…`.
fn arg_name(arg: &Arg) -> Vec<Inline> {
    let value = arg
        .get_value_names()
        .map(|names| names.join(" "))
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let value = if many { format!("{value}...") } else { value };
    let mut name = Vec::new();
    if let Some(long) = arg.get_long() {
        name.push(bold(format!("--{long}")));
    } else if arg.is_positional() {
        return vec![italic(value)];
    }
    if arg.get_num_args().is_some_and(|n| n.takes_values()) {
        name.push(roman(" "));
        name.push(italic(value));
    }
    name
}

/// The argument's help with its choices and default, as `--help` shows them.
fn arg_help(arg: &Arg) -> String {
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    if !arg.get_num_args().is_some_and(|n| n.takes_values()) {
        return help;
    }
    let mut parts = vec![help];
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(help) => format!("`{}`: {}", v.get_name(), lowercase_first(&help.to_string())),
            None => format!("`{}`", v.get_name()),
        })
        .collect();
    if !choices.is_empty() {
        parts.push(format!("One of: {}", choices.join("; ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() {
        parts.push(format!("Default: {}", defaults.join(" ")));
    }
    parts.join("\n\n")
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in [
        (0, "Success."),
        (
            1,
            "An error; one line on stderr says what was wrong and how to fix it.",
        ),
        (2, "A usage error (bad arguments)."),
        (
            exit::NO_SERVER,
            "No server runs for the session (`server status`, and every command that talks \
             to the server).",
        ),
        (exit::TIMEOUT, "`pane wait` timed out."),
        (
            exit::SERVERS_LEFT,
            "`update` installed the new binary, and a running server still needs a decision \
             (its message says what to run).",
        ),
    ] {
        roff.control("TP", []).text([roman(code.to_string())]);
        roff.text(styled(meaning));
    }
}

fn environment(roff: &mut Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in [
        (
            "HERDR_SESSION",
            "The session of a command that has no `--session` (set in every pane).",
        ),
        (
            "HERDR_PANE",
            "The pane a command acts on when it has no `--pane` (set in every pane).",
        ),
        (
            "HERDR_RELEASES_URL",
            "Where `update` and the installer find releases.",
        ),
    ] {
        roff.control("TP", []).text([bold(name)]);
        roff.text(styled(meaning));
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text(styled(
        "`herdr COMMAND --help`; in herdr's source, docs/cli.md (commands), docs/api.md \
         (the JSON API) and docs/agents.md (coding agents).",
    ));
}
