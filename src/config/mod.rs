//! Loader for herdr's config file, `$XDG_CONFIG_HOME/herdr/config.toml`.
//!
//! Invariant: loading never fails: every problem becomes a [`Diagnostic`] and
//! the default is used for what was wrong. A typo in one key must never cost
//! the user their whole configuration (or their session), so everything that
//! is valid still applies.
//!
//! The accepted keys are described by a small schema (`schema::ROOT_FIELDS`); adding
//! a key, or a nested section such as `[persistence]`, is one entry there, with the
//! comment `herdr config default` writes for it (`default_text`).
//! The document is parsed with toml's span-preserving [`DeTable`] so that
//! every diagnostic can point at a line (`walk`); an unknown key is told the known one
//! it is closest to (`suggest`).

mod default_text;
mod schema;
mod walk;

use std::env::var_os;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

pub use default_text::{changes, default_text};
use schema::{Kind, ROOT};
pub use schema::{NOTIFY_TERMINALS, REMAIN_ON_EXIT, STATUS_ITEMS};
use walk::{line_of, Walker};

/// The effective configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Prefix key in tmux notation; the caller validates it.
    pub prefix: String,
    /// Default shell for new panes.
    pub shell: String,
    /// Scrollback lines kept per pane.
    pub scrollback_lines: usize,
    /// Whether the workspace sidebar is shown.
    pub sidebar: bool,
    /// Sidebar width in columns.
    pub sidebar_width: u16,
    /// Which panes stay open, showing their screen and exit status, when their program
    /// ends: `command` (those started with a command, not the shell), `always`, `never`.
    pub remain_on_exit: String,
    /// What the status line shows, in order: `session`, `host`, `title` (the focused
    /// tab's), `agents` (how many wait for you), `clock`.
    pub status: Vec<String>,
    /// `[keys]` bindings in file order; they override the built-in table.
    pub keys: Vec<KeySetting>,
    /// `[persistence]`: save the panes' screens and scrollback too (may hold secrets).
    pub history: bool,
    /// `[persistence]`: lines of history saved per pane.
    pub history_lines: usize,
    /// `[persistence]`: programs that are re-run in their pane on restore.
    pub restore_commands: Vec<String>,
    /// `[persistence]`: resume agents (their own resume command) on restore.
    pub resume_agents_on_restore: bool,
    /// `[update]`: where release manifests live (`<url>/<channel>.json`); the
    /// `HERDR_RELEASES_URL` environment variable overrides it.
    pub releases_url: String,
    /// `[update]`: seconds a download may go without progress before it is retried.
    pub download_timeout_secs: u64,
    /// `[remote]`: how `herdr --remote` installs herdr on a host that lacks it: `auto`
    /// (upload this binary where it runs, else the host downloads the release),
    /// `upload`, or `download`.
    pub remote_install: String,
    /// `[remote]`: the SSH client of `herdr --remote`: `system` (OpenSSH) or `builtin`.
    pub remote_ssh: String,
    /// `[remote]`: predictive local echo over a remote link: `auto` (when the round trip
    /// is over 30 ms), `always` or `never`.
    pub remote_predict: String,
    /// `[notify]`: how an agent that needs the user reaches the user's terminal: `auto`
    /// (what the client found its terminal supports), `osc9`, `osc777`, `bell` or `off`.
    pub notify_terminal: String,
    /// `[notify]`: the agent states that notify (`blocked`, `done`).
    pub notify_states: Vec<String>,
    /// `[notify]`: agents (by name) that never notify.
    pub notify_off_for: Vec<String>,
    /// `[notify]`: a program and its arguments, run by the server for each notification
    /// with the event as JSON on stdin; empty for none.
    pub notify_command: Vec<String>,
    /// `[notify]`: bells rung in panes: `any` passes them on to the clients' terminals,
    /// `off` drops them.
    pub notify_bells: String,
}

/// Where the official release manifests are published.
pub const DEFAULT_RELEASES_URL: &str = "https://releases.herdr.dev";

/// One `[keys]` entry. Names are not validated here because the key parser
/// and action table live elsewhere; `line` lets the caller report problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySetting {
    pub key: String,
    /// Action name, passed through verbatim (`"none"` means unbind).
    pub action: String,
    /// 1-based line of the entry.
    pub line: usize,
}

/// A problem found while loading; the config falls back to defaults for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: PathBuf,
    /// 1-based line, when the problem can be located.
    pub line: Option<usize>,
    /// Dotted key, e.g. `"keys.x"` or `"scrollback_lines"`.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// `<path>:<line>: <key>: <message>`, omitting the parts that are unknown,
    /// so editors and terminals can jump to the location.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl Diagnostic {
    pub(crate) fn new(
        path: &Path,
        line: Option<usize>,
        key: Option<&str>,
        message: String,
    ) -> Self {
        let (path, key) = (path.to_path_buf(), key.map(str::to_string));
        Diagnostic {
            path,
            line,
            key,
            message,
        }
    }
}

impl Default for Config {
    /// The defaults; ranges live in the schema (`ROOT_FIELDS`).
    fn default() -> Self {
        Config {
            prefix: "C-b".to_string(),
            shell: shell_from(var_os("SHELL")),
            scrollback_lines: 10_000,
            sidebar: true,
            sidebar_width: 24,
            remain_on_exit: "command".to_string(),
            status: STATUS_ITEMS.iter().map(|s| s.to_string()).collect(),
            keys: Vec::new(),
            history: false,
            history_lines: 1000,
            restore_commands: Vec::new(),
            resume_agents_on_restore: true,
            releases_url: DEFAULT_RELEASES_URL.to_string(),
            download_timeout_secs: 30,
            remote_install: "auto".to_string(),
            remote_ssh: "system".to_string(),
            remote_predict: "auto".to_string(),
            notify_terminal: "auto".to_string(),
            notify_states: vec!["blocked".to_string(), "done".to_string()],
            notify_off_for: Vec::new(),
            notify_command: Vec::new(),
            notify_bells: "any".to_string(),
        }
    }
}

/// `$SHELL` if usable, else `/bin/sh`. Split out so tests need not mutate the
/// process environment (racy with parallel tests).
fn shell_from(shell: Option<OsString>) -> String {
    shell
        .and_then(|s| s.into_string().ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".to_string())
}

/// `$XDG_CONFIG_HOME/herdr/config.toml`, else `$HOME/.config/herdr/config.toml`;
/// `None` when neither variable gives a usable directory.
pub fn default_path() -> Option<PathBuf> {
    path_from(var_os("XDG_CONFIG_HOME"), var_os("HOME"))
}

fn path_from(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    // The XDG spec says relative values are invalid and must be ignored.
    let base = match xdg.map(PathBuf::from).filter(|p| p.is_absolute()) {
        Some(dir) => dir,
        None => PathBuf::from(home.filter(|h| !h.is_empty())?).join(".config"),
    };
    Some(base.join("herdr").join("config.toml"))
}

/// The configuration in force now (problems in the file fall back to defaults; the
/// server reports them, commands that only read a setting stay quiet).
pub fn current() -> Config {
    load(&default_path().unwrap_or_default()).0
}

/// Reads and parses `path`, and checks that the shell can run. A missing file is the
/// normal case (no config written yet), so it yields the defaults silently.
pub fn load(path: &Path) -> (Config, Vec<Diagnostic>) {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let mut walker = parse_with(&ROOT, &text, path);
            let line = walker.lines.get("shell").copied();
            let fallback = || shell_from(var_os("SHELL"));
            if let Some(d) = check_shell(&mut walker.config, path, line, runnable, fallback) {
                walker.diags.push(d);
            }
            (walker.config, walker.diags)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Config::default(), Vec::new()),
        Err(e) => {
            let message = format!("cannot read the config file: {e}; using the defaults");
            let diag = Diagnostic::new(path, None, None, message);
            (Config::default(), vec![diag])
        }
    }
}

/// Parses config text; `path` is only used to label diagnostics.
pub fn parse(text: &str, path: &Path) -> (Config, Vec<Diagnostic>) {
    let walker = parse_with(&ROOT, text, path);
    (walker.config, walker.diags)
}

/// [`parse`] against any schema, so tests can exercise nested sections
/// before the real schema has any; the walker keeps where each key was.
fn parse_with<'a>(schema: &Kind, text: &'a str, path: &'a Path) -> Walker<'a> {
    let mut walker = Walker {
        text,
        path,
        config: Config::default(),
        diags: Vec::new(),
        lines: Default::default(),
    };
    match DeTable::parse(text) {
        Ok(root) => walker.value(schema, "", 1, &DeValue::Table(root.into_inner())),
        // A syntax error leaves no trustworthy structure, so nothing applies.
        Err(e) => {
            let line = e.span().map(|s| line_of(text, s.start));
            let message = format!("invalid TOML: {}; using the defaults", e.message());
            let diag = Diagnostic::new(path, line, None, message);
            walker.diags.push(diag);
        }
    }
    walker
}

/// A configured shell that cannot run is replaced by `fallback` ($SHELL, else /bin/sh)
/// or, if that cannot run either, by /bin/sh; the diagnostic names the value and what is
/// used instead. A shell left to its default is not looked at (it is the fallback).
fn check_shell(
    config: &mut Config,
    path: &Path,
    line: Option<usize>,
    runnable: impl Fn(&str) -> bool,
    fallback: impl Fn() -> String,
) -> Option<Diagnostic> {
    let configured = line.map(|_| config.shell.clone())?;
    if runnable(&configured) {
        return None;
    }
    let from_env = fallback();
    let shell = match from_env != configured && runnable(&from_env) {
        true => from_env,
        false => "/bin/sh".to_string(),
    };
    let whence = if shell == "/bin/sh" { "" } else { " ($SHELL)" };
    let message =
        format!("{configured:?} is not the path of an executable file; using {shell:?}{whence}");
    config.shell = shell;
    Some(Diagnostic::new(path, line, Some("shell"), message))
}

/// Whether `program` is a file this process may execute (what starting a pane needs).
fn runnable(program: &str) -> bool {
    let path = Path::new(program);
    path.is_absolute()
        && path.is_file()
        && nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok()
}

#[cfg(test)]
mod tests;
