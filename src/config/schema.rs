//! The schema of config.toml: every key, what it accepts, where its value goes and what
//! it does. One table ([`ROOT_FIELDS`] and its sections) drives the loader, the default
//! text (`herdr config default`) and the list of what a reload changed, so none of them
//! can drift from another.

use super::Config;

/// What a key accepts and where its value goes. Accessors are plain fn
/// pointers so the schema can be a `const` table.
pub(super) enum Kind {
    /// A section whose keys are described by a nested schema.
    Table(&'static [Field]),
    /// A non-empty string (an empty prefix or shell is never meaningful).
    Str(fn(&mut Config) -> &mut String),
    /// A key in tmux notation (`C-a`, `M-x`, `F12`), checked by the key parser.
    KeyName(fn(&mut Config) -> &mut String),
    /// The path of an executable file; its default comes from the environment, so the
    /// default text shows it commented out. Whether it can run is checked by
    /// [`super::load`] (the file system is no business of [`super::parse`]).
    Program(fn(&mut Config) -> &mut String),
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
    Bindings(fn(&mut Config) -> &mut Vec<super::KeySetting>),
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

/// A known key: its name within its section, what it accepts, and what it does (the
/// comment `herdr config default` writes above it; ranges and choices are added from the
/// kind).
pub(super) struct Field(pub &'static str, pub Kind, pub &'static str);

/// The whole document is a section like any other.
pub(super) const ROOT: Kind = Kind::Table(ROOT_FIELDS);

/// The top-level keys. Add a key here; add a section as
/// `Field("persistence", Kind::Table(PERSISTENCE_FIELDS), "…")`.
pub(super) const ROOT_FIELDS: &[Field] = &[
    Field(
        "prefix",
        Kind::KeyName(|c| &mut c.prefix),
        "The prefix key, pressed before every binding, in tmux notation: C-a, M-x, F12, …",
    ),
    Field(
        "shell",
        Kind::Program(|c| &mut c.shell),
        "The shell new panes run (as a login shell), a path. Default: $SHELL, else /bin/sh; \
         one that cannot run falls back to those.",
    ),
    Field(
        "scrollback_lines",
        Kind::UInt {
            min: 0,
            max: 1_000_000,
            get: |c| u64::try_from(c.scrollback_lines).unwrap_or(u64::MAX),
            // In range by construction; the fallback only keeps this panic-free.
            set: |c, v| c.scrollback_lines = usize::try_from(v).unwrap_or(c.scrollback_lines),
        },
        "Lines of history kept per pane.",
    ),
    Field(
        "sidebar",
        Kind::Bool(|c| &mut c.sidebar),
        "Show the workspace sidebar.",
    ),
    Field(
        "sidebar_width",
        Kind::UInt {
            min: 10,
            max: 80,
            get: |c| u64::from(c.sidebar_width),
            set: |c, v| c.sidebar_width = u16::try_from(v).unwrap_or(c.sidebar_width),
        },
        "Width of the sidebar in columns.",
    ),
    Field(
        "remain_on_exit",
        Kind::Choice(REMAIN_ON_EXIT, |c| &mut c.remain_on_exit),
        "Which panes stay, showing their last screen and exit status, when their program \
         ends: those started with a command (not the shell), always, or never.",
    ),
    Field(
        "status",
        Kind::Words(|| STATUS_ITEMS.to_vec(), |c| &mut c.status),
        "What the status line shows, in this order: the session, this machine's name, the \
         focused tab's title, how many agents wait for you, the time.",
    ),
    Field(
        "keys",
        Kind::Bindings(|c| &mut c.keys),
        "Key after the prefix = action; \"none\" unbinds a key. Entries here are added to \
         (or replace) the defaults listed.",
    ),
    Field(
        "persistence",
        Kind::Table(PERSISTENCE_FIELDS),
        "What is saved of the session and how it is restored (docs/persistence.md).",
    ),
    Field(
        "update",
        Kind::Table(UPDATE_FIELDS),
        "How `herdr update` finds and fetches releases.",
    ),
    Field(
        "remote",
        Kind::Table(REMOTE_FIELDS),
        "How `herdr --remote HOST` reaches a host.",
    ),
    Field(
        "notify",
        Kind::Table(NOTIFY_FIELDS),
        "\"Needs you\" notifications of agents, and bells (docs/agents.md#notifications).",
    ),
];

/// What the status line can show, in the default order.
pub const STATUS_ITEMS: &[&str] = &["session", "host", "title", "agents", "clock"];

/// The words `remain_on_exit` accepts.
pub const REMAIN_ON_EXIT: &[&str] = &["command", "always", "never"];

/// The words `[notify] terminal` accepts.
pub const NOTIFY_TERMINALS: &[&str] = &["auto", "osc9", "osc777", "bell", "off"];

const NOTIFY_FIELDS: &[Field] = &[
    Field(
        "terminal",
        Kind::Choice(NOTIFY_TERMINALS, |c| &mut c.notify_terminal),
        "How your terminal is told: auto (what the client found it supports), or that \
         style whatever it is; off tells nothing.",
    ),
    Field(
        "states",
        Kind::Words(|| vec!["blocked", "done"], |c| &mut c.notify_states),
        "The agent states that notify.",
    ),
    Field(
        "off_for",
        Kind::Words(
            || crate::agent::AGENTS.iter().map(|a| a.name).collect(),
            |c| &mut c.notify_off_for,
        ),
        "Agents (by name) that never notify.",
    ),
    Field(
        "command",
        Kind::Argv(|c| &mut c.notify_command),
        "A program and its arguments run for each notification, the event as JSON on its \
         stdin, e.g. [\"sh\", \"-c\", \"curl -d @- ntfy.sh/mytopic\"]; [] runs none.",
    ),
    Field(
        "bells",
        Kind::Choice(&["any", "off"], |c| &mut c.notify_bells),
        "A bell rung in any pane rings your terminal (any), or is dropped (off).",
    ),
];

const REMOTE_FIELDS: &[Field] = &[
    Field(
        "install",
        Kind::Choice(&["auto", "upload", "download"], |c| &mut c.remote_install),
        "How herdr is installed on a host that lacks it: upload this binary, have the host \
         download the release, or auto (upload this binary where it runs, else download).",
    ),
    Field(
        "ssh",
        Kind::Choice(&["system", "builtin"], |c| &mut c.remote_ssh),
        "The SSH client: system (OpenSSH) or builtin (herdr's own).",
    ),
    Field(
        "predict",
        Kind::Choice(&["auto", "always", "never"], |c| &mut c.remote_predict),
        "Typed characters shown at once, underlined until the host echoes them: auto \
         (when a round trip takes over 30 ms), always or never (docs/remote.md).",
    ),
];

const PERSISTENCE_FIELDS: &[Field] = &[
    Field(
        "history",
        Kind::Bool(|c| &mut c.history),
        "Also save each pane's screen and scrollback (they may hold secrets).",
    ),
    Field(
        "history_lines",
        Kind::UInt {
            min: 0,
            max: 100_000,
            get: |c| u64::try_from(c.history_lines).unwrap_or(u64::MAX),
            set: |c, v| c.history_lines = usize::try_from(v).unwrap_or(c.history_lines),
        },
        "Lines of history saved per pane.",
    ),
    Field(
        "restore_commands",
        Kind::StrList(|c| &mut c.restore_commands),
        "Programs re-run in their pane on restore, e.g. [\"vim\", \"less\", \"npm run dev\"].",
    ),
    Field(
        "resume_agents_on_restore",
        Kind::Bool(|c| &mut c.resume_agents_on_restore),
        "Resume agents on restore with their own resume command (docs/agents.md).",
    ),
];

const UPDATE_FIELDS: &[Field] = &[
    Field(
        "releases_url",
        Kind::Str(|c| &mut c.releases_url),
        "Where release manifests live (<url>/<channel>.json); $HERDR_RELEASES_URL \
         overrides it.",
    ),
    Field(
        "download_timeout_secs",
        Kind::UInt {
            min: 1,
            max: 3600,
            get: |c| c.download_timeout_secs,
            set: |c, v| c.download_timeout_secs = v,
        },
        "Seconds a download may go without progress before it is retried.",
    ),
];
