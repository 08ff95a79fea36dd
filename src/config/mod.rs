//! Loader for herdr's config file, `$XDG_CONFIG_HOME/herdr/config.toml`.
//!
//! Invariant: loading never fails: every problem becomes a [`Diagnostic`] and
//! the default is used for what was wrong. A typo in one key must never cost
//! the user their whole configuration (or their session), so everything that
//! is valid still applies.
//!
//! The accepted keys are described by a small schema (`ROOT_FIELDS`); adding
//! a key, or a nested section such as `[persistence]`, is one entry there.
//! The document is parsed with toml's span-preserving [`DeTable`] so that
//! every diagnostic can point at a line.

use std::env::var_os;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

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
            keys: Vec::new(),
            history: false,
            history_lines: 1000,
            restore_commands: Vec::new(),
            resume_agents_on_restore: true,
            releases_url: DEFAULT_RELEASES_URL.to_string(),
            download_timeout_secs: 30,
            remote_install: "auto".to_string(),
            remote_ssh: "system".to_string(),
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

/// Reads and parses `path`. A missing file is the normal case (no config
/// written yet), so it yields the defaults silently.
pub fn load(path: &Path) -> (Config, Vec<Diagnostic>) {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path),
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
    parse_with(&ROOT, text, path)
}

/// [`parse`] against any schema, so tests can exercise nested sections
/// before the real schema has any.
fn parse_with(schema: &Kind, text: &str, path: &Path) -> (Config, Vec<Diagnostic>) {
    let mut walker = Walker {
        text,
        path,
        config: Config::default(),
        diags: Vec::new(),
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
    (walker.config, walker.diags)
}

/// What a key accepts and where its value goes. Accessors are plain fn
/// pointers so the schema can be a `const` table.
enum Kind {
    /// A section whose keys are described by a nested schema.
    Table(&'static [Field]),
    /// A non-empty string (an empty prefix or shell is never meaningful).
    Str(fn(&mut Config) -> &mut String),
    /// One of a few words.
    Choice(&'static [&'static str], fn(&mut Config) -> &mut String),
    Bool(fn(&mut Config) -> &mut bool),
    /// An integer in `min..=max`; `get`/`set` bridge the field's own type.
    UInt {
        min: u64,
        max: u64,
        get: fn(&Config) -> u64,
        set: fn(&mut Config, u64),
    },
    /// A table of free-form `key = "action"` pairs kept in file order.
    Bindings(fn(&mut Config) -> &mut Vec<KeySetting>),
    /// A list of non-empty strings.
    StrList(fn(&mut Config) -> &mut Vec<String>),
    /// A list of words, each one of those the function gives (a fn, so the list may come
    /// from a table elsewhere, such as the agents').
    Words(
        fn() -> Vec<&'static str>,
        fn(&mut Config) -> &mut Vec<String>,
    ),
    /// A command line: a list of strings kept exactly as written (arguments may hold
    /// spaces), the program first and not empty. An empty list is no command.
    Argv(fn(&mut Config) -> &mut Vec<String>),
}

/// A known key: its name within its section and what it accepts.
struct Field(&'static str, Kind);

/// The whole document is a section like any other.
const ROOT: Kind = Kind::Table(ROOT_FIELDS);

/// The top-level keys. Add a key here; add a section as
/// `Field("persistence", Kind::Table(PERSISTENCE_FIELDS))`.
const ROOT_FIELDS: &[Field] = &[
    Field("prefix", Kind::Str(|c| &mut c.prefix)),
    Field("shell", Kind::Str(|c| &mut c.shell)),
    Field(
        "scrollback_lines",
        Kind::UInt {
            min: 0,
            max: 1_000_000,
            get: |c| u64::try_from(c.scrollback_lines).unwrap_or(u64::MAX),
            // In range by construction; the fallback only keeps this panic-free.
            set: |c, v| c.scrollback_lines = usize::try_from(v).unwrap_or(c.scrollback_lines),
        },
    ),
    Field("sidebar", Kind::Bool(|c| &mut c.sidebar)),
    Field(
        "sidebar_width",
        Kind::UInt {
            min: 10,
            max: 80,
            get: |c| u64::from(c.sidebar_width),
            set: |c, v| c.sidebar_width = u16::try_from(v).unwrap_or(c.sidebar_width),
        },
    ),
    Field(
        "remain_on_exit",
        Kind::Choice(REMAIN_ON_EXIT, |c| &mut c.remain_on_exit),
    ),
    Field("keys", Kind::Bindings(|c| &mut c.keys)),
    Field("persistence", Kind::Table(PERSISTENCE_FIELDS)),
    Field("update", Kind::Table(UPDATE_FIELDS)),
    Field("remote", Kind::Table(REMOTE_FIELDS)),
    Field("notify", Kind::Table(NOTIFY_FIELDS)),
];

/// The words `remain_on_exit` accepts.
pub const REMAIN_ON_EXIT: &[&str] = &["command", "always", "never"];

/// The words `[notify] terminal` accepts.
pub const NOTIFY_TERMINALS: &[&str] = &["auto", "osc9", "osc777", "bell", "off"];

const NOTIFY_FIELDS: &[Field] = &[
    Field(
        "terminal",
        Kind::Choice(NOTIFY_TERMINALS, |c| &mut c.notify_terminal),
    ),
    Field(
        "states",
        Kind::Words(|| vec!["blocked", "done"], |c| &mut c.notify_states),
    ),
    Field(
        "off_for",
        Kind::Words(
            || crate::agent::AGENTS.iter().map(|a| a.name).collect(),
            |c| &mut c.notify_off_for,
        ),
    ),
    Field("command", Kind::Argv(|c| &mut c.notify_command)),
    Field(
        "bells",
        Kind::Choice(&["any", "off"], |c| &mut c.notify_bells),
    ),
];

const REMOTE_FIELDS: &[Field] = &[
    Field(
        "install",
        Kind::Choice(&["auto", "upload", "download"], |c| &mut c.remote_install),
    ),
    Field(
        "ssh",
        Kind::Choice(&["system", "builtin"], |c| &mut c.remote_ssh),
    ),
];

const PERSISTENCE_FIELDS: &[Field] = &[
    Field("history", Kind::Bool(|c| &mut c.history)),
    Field(
        "history_lines",
        Kind::UInt {
            min: 0,
            max: 100_000,
            get: |c| u64::try_from(c.history_lines).unwrap_or(u64::MAX),
            set: |c, v| c.history_lines = usize::try_from(v).unwrap_or(c.history_lines),
        },
    ),
    Field(
        "restore_commands",
        Kind::StrList(|c| &mut c.restore_commands),
    ),
    Field(
        "resume_agents_on_restore",
        Kind::Bool(|c| &mut c.resume_agents_on_restore),
    ),
];

const UPDATE_FIELDS: &[Field] = &[
    Field("releases_url", Kind::Str(|c| &mut c.releases_url)),
    Field(
        "download_timeout_secs",
        Kind::UInt {
            min: 1,
            max: 3600,
            get: |c| c.download_timeout_secs,
            set: |c, v| c.download_timeout_secs = v,
        },
    ),
];

/// Applies a parsed document to `config`, collecting diagnostics. Because each
/// key can appear only once in valid TOML, a field still holds its default
/// when we report a problem with it, so the message can quote that default.
struct Walker<'a> {
    text: &'a str,
    path: &'a Path,
    config: Config,
    diags: Vec<Diagnostic>,
}

impl Walker<'_> {
    fn table(&mut self, fields: &[Field], table: &DeTable<'_>, prefix: &str) {
        for (key, value) in in_file_order(table) {
            let dotted = join(prefix, key.get_ref());
            let line = line_of(self.text, key.span().start);
            match fields.iter().find(|f| f.0 == key.get_ref().as_ref()) {
                Some(field) => self.value(&field.1, &dotted, line, value.get_ref()),
                None => {
                    let known: Vec<&str> = fields.iter().map(|f| f.0).collect();
                    let message = format!("unknown key; known keys are {}", known.join(", "));
                    self.report(&dotted, line, message);
                }
            }
        }
    }

    fn value(&mut self, kind: &Kind, key: &str, line: usize, value: &DeValue<'_>) {
        match (kind, value) {
            (Kind::Table(fields), DeValue::Table(t)) => self.table(fields, t, key),
            (Kind::Table(_), v) => self.wrong(key, line, "a table", v, "using its defaults"),
            (Kind::Str(slot), DeValue::String(s)) if !s.is_empty() => {
                *slot(&mut self.config) = s.to_string();
            }
            (Kind::Choice(words, slot), DeValue::String(s)) if words.contains(&s.as_ref()) => {
                *slot(&mut self.config) = s.to_string();
            }
            (Kind::Choice(words, slot), v) => {
                let default = format!("using the default {:?}", slot(&mut self.config));
                let want = format!("one of {}", words.join(", "));
                self.wrong(key, line, &want, v, &default);
            }
            (Kind::Str(slot), v) => {
                let default = format!("using the default {:?}", slot(&mut self.config));
                self.wrong(key, line, "a non-empty string", v, &default);
            }
            (Kind::Bool(slot), DeValue::Boolean(b)) => *slot(&mut self.config) = *b,
            (Kind::Bool(slot), v) => {
                let default = format!("using the default {}", slot(&mut self.config));
                self.wrong(key, line, "true or false", v, &default);
            }
            (Kind::UInt { min, max, get, set }, v) => {
                // Parse as i128 so negative and huge literals are "out of
                // range" rather than a confusing type error.
                let parsed = match v {
                    DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix()).ok(),
                    _ => None,
                };
                match parsed.and_then(|n| u64::try_from(n).ok()) {
                    Some(n) if (*min..=*max).contains(&n) => set(&mut self.config, n),
                    _ => {
                        let expected = format!("an integer between {min} and {max}");
                        let default = format!("using the default {}", get(&self.config));
                        self.wrong(key, line, &expected, v, &default);
                    }
                }
            }
            (Kind::Bindings(slot), DeValue::Table(t)) => {
                for (k, v) in in_file_order(t) {
                    let line = line_of(self.text, k.span().start);
                    match v.get_ref() {
                        DeValue::String(action) => slot(&mut self.config).push(KeySetting {
                            key: k.get_ref().to_string(),
                            action: action.to_string(),
                            line,
                        }),
                        other => {
                            let (key, what) = (join(key, k.get_ref()), "an action name string");
                            self.wrong(&key, line, what, other, "ignoring this binding");
                        }
                    }
                }
            }
            (Kind::Bindings(_), v) => {
                let what = "a table of key = \"action\" bindings";
                self.wrong(key, line, what, v, "using the default bindings");
            }
            (Kind::StrList(slot), DeValue::Array(items)) => {
                let mut list = Vec::new();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(s) if !s.trim().is_empty() => {
                            list.push(s.trim().to_string())
                        }
                        other => {
                            self.wrong(
                                key,
                                line,
                                "non-empty strings",
                                other,
                                "ignoring this entry",
                            );
                        }
                    }
                }
                *slot(&mut self.config) = list;
            }
            (Kind::StrList(_), v) => {
                self.wrong(key, line, "a list of strings", v, "using an empty list")
            }
            (Kind::Words(allowed, slot), v) => self.words(key, line, &allowed(), *slot, v),
            (Kind::Argv(slot), v) => self.argv(key, line, *slot, v),
        }
    }

    /// A list of allowed words: each entry that is not one is reported (naming the
    /// allowed ones) and left out; what is not a list keeps the default.
    fn words(
        &mut self,
        key: &str,
        line: usize,
        allowed: &[&str],
        slot: fn(&mut Config) -> &mut Vec<String>,
        value: &DeValue<'_>,
    ) {
        let want = format!("a list of {}", allowed.join(", "));
        let DeValue::Array(items) = value else {
            let default = format!("using the default {:?}", slot(&mut self.config));
            return self.wrong(key, line, &want, value, &default);
        };
        let mut list = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) if allowed.contains(&s.as_ref()) => list.push(s.to_string()),
                other => {
                    let want = format!("one of {}", allowed.join(", "));
                    self.wrong(key, line, &want, other, "ignoring this entry");
                }
            }
        }
        *slot(&mut self.config) = list;
    }

    /// A command line, taken whole or not at all (a command missing an argument could do
    /// something else than meant).
    fn argv(
        &mut self,
        key: &str,
        line: usize,
        slot: fn(&mut Config) -> &mut Vec<String>,
        value: &DeValue<'_>,
    ) {
        let want = "a list of strings, the program first (e.g. [\"notify-send\", \"herdr\"])";
        let strings: Option<Vec<String>> = match value {
            DeValue::Array(items) => items
                .iter()
                .map(|i| match i.get_ref() {
                    DeValue::String(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        match strings {
            Some(argv) if argv.first().is_none_or(|p| !p.trim().is_empty()) => {
                *slot(&mut self.config) = argv;
            }
            _ => self.wrong(key, line, want, value, "running no command"),
        }
    }

    fn wrong(
        &mut self,
        key: &str,
        line: usize,
        expected: &str,
        found: &DeValue<'_>,
        fallback: &str,
    ) {
        let message = format!("expected {expected}, found {}; {fallback}", describe(found));
        self.report(key, line, message);
    }

    fn report(&mut self, key: &str, line: usize, message: String) {
        let diag = Diagnostic::new(self.path, Some(line), Some(key), message);
        self.diags.push(diag);
    }
}

type Entry<'t, 'i> = (&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>);

/// Without toml's `preserve_order` feature tables iterate alphabetically;
/// sorting by span restores file order for bindings and diagnostics.
fn in_file_order<'t, 'i>(table: &'t DeTable<'i>) -> Vec<Entry<'t, 'i>> {
    let mut entries: Vec<Entry<'t, 'i>> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// 1-based line containing byte `offset`; counts bytes so an offset that is
/// out of range or inside a character cannot panic.
fn line_of(text: &str, offset: usize) -> usize {
    let newlines = text.bytes().take(offset).filter(|&b| b == b'\n').count();
    newlines + 1
}

/// Shows the offending value the way the user wrote it, where that is short.
fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("{s:?}"),
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(f) => f.to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => d.to_string(),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

#[cfg(test)]
mod tests;
