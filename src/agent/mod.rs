//! Agents: which coding agent runs in a pane (one table, here), the session references
//! their hooks report, and how each one is resumed.
//!
//! Invariant: only a report whose source is `herdr:<agent>` for that very agent can lead
//! to a command being run at restore; `plan` refuses everything else.

pub mod activity;
pub mod claude;
pub mod codex;
pub mod codex_hooks;
mod error;
pub mod integration;
mod json_text;
pub mod rules;
pub use error::IntegrationError;

/// What one run of an agent's hook tells herdr: the state it means (none for an event
/// that changes nothing), the agent's session, and the error that ended a turn.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HookReport {
    pub state: Option<&'static str>,
    pub session: Option<String>,
    pub error: Option<String>,
    /// Where the report comes from, for an agent whose hooks run in a process shared by
    /// its panes (Codex's background server): the turn's folder and the user's prompt, by
    /// which the server finds the pane whose agent showed that prompt.
    pub route: Option<Route>,
}

/// The turn a report from a shared process is about (see [`HookReport::route`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub cwd: String,
    /// The user's last prompt of the turn, its first line cut to [`Route::PROMPT_MAX`].
    pub prompt: String,
}

impl Route {
    /// Enough of a prompt to tell panes apart, and to find it on a screen.
    pub const PROMPT_MAX: usize = 200;
}

/// How an agent resumes a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// `agent FLAG <ref>`
    Flag(&'static str),
    /// `agent FLAG=<ref>`
    FlagEq(&'static str),
    /// `agent SUBCOMMAND <ref>`
    Sub(&'static str),
}

#[derive(Debug, PartialEq, Eq)]
pub struct Agent {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub resume: Option<Resume>,
    /// Launch flags carried into the resume command (model, permissions, …).
    pub keep: &'static [Keep],
}

/// A launch flag worth keeping across a resume: its spellings and how many values follow.
/// Flags whose values name commands to run (settings files, MCP servers, config
/// overrides) are never kept: a saved session must not be able to start programs.
#[derive(Debug, PartialEq, Eq)]
pub struct Keep {
    pub names: &'static [&'static str],
    pub values: Values,
    /// What the flag is kept as instead: the spelling the newest version tested takes for
    /// a flag it no longer has.
    pub becomes: Option<&'static [&'static str]>,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Values {
    None,
    One,
    /// One value, kept only if it is one of these (what the newest version tested takes;
    /// a value an older version took and it rejects would fail the resume).
    OneOf(&'static [&'static str]),
    /// Every word up to the next one starting with `-` (a variadic option).
    Many,
    /// One value, and the flag may be given again for more (each one counts).
    Each,
}

const fn keep(names: &'static [&'static str], values: Values) -> Keep {
    Keep {
        names,
        values,
        becomes: None,
    }
}

const fn flag(names: &'static [&'static str]) -> Keep {
    keep(names, Values::None)
}

const fn opt(names: &'static [&'static str]) -> Keep {
    keep(names, Values::One)
}

const fn list(names: &'static [&'static str]) -> Keep {
    keep(names, Values::Many)
}

/// A flag the newest version tested no longer has, kept as what it meant.
const fn renamed(names: &'static [&'static str], becomes: &'static [&'static str]) -> Keep {
    Keep {
        names,
        values: Values::None,
        becomes: Some(becomes),
    }
}

/// Most agents: the model is the flag users set at launch.
const MODEL: &[Keep] = &[opt(&["--model"])];

const CLAUDE_KEEP: &[Keep] = &[
    opt(&["--model"]),
    opt(&["--fallback-model"]),
    opt(&["--permission-mode"]),
    flag(&["--dangerously-skip-permissions"]),
    list(&["--add-dir"]),
    list(&["--allowedTools", "--allowed-tools"]),
    list(&["--disallowedTools", "--disallowed-tools"]),
    flag(&["--verbose"]),
];

/// Codex, in the forms 0.171 takes. `--profile` is not kept: it now loads a file of
/// settings. `--full-auto` is gone (it meant the workspace-write sandbox, asking on
/// request), and `--ask-for-approval` takes only `on-request` and `never`.
const CODEX_KEEP: &[Keep] = &[
    opt(&["--model", "-m"]),
    keep(
        &["--sandbox", "-s"],
        Values::OneOf(&["read-only", "workspace-write", "danger-full-access"]),
    ),
    keep(
        &["--ask-for-approval", "-a"],
        Values::OneOf(&["on-request", "never"]),
    ),
    renamed(
        &["--full-auto"],
        &[
            "--sandbox",
            "workspace-write",
            "--ask-for-approval",
            "on-request",
        ],
    ),
    flag(&["--dangerously-bypass-approvals-and-sandbox"]),
    flag(&["--search"]),
    keep(&["--add-dir"], Values::Each),
];

/// Every agent herdr knows, with the program names it runs under.
pub const AGENTS: &[Agent] = &[
    Agent {
        name: "claude",
        aliases: &["claude-code"],
        resume: Some(Resume::Flag("--resume")),
        keep: CLAUDE_KEEP,
    },
    Agent {
        name: "codex",
        aliases: &[],
        resume: Some(Resume::Sub("resume")),
        keep: CODEX_KEEP,
    },
    Agent {
        name: "copilot",
        aliases: &[],
        resume: Some(Resume::FlagEq("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "cursor-agent",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "opencode",
        aliases: &[],
        resume: Some(Resume::Flag("--session")),
        keep: MODEL,
    },
    Agent {
        name: "pi",
        aliases: &[],
        resume: Some(Resume::Flag("--session")),
        keep: MODEL,
    },
    Agent {
        name: "omp",
        aliases: &[],
        resume: Some(Resume::FlagEq("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "gemini",
        aliases: &[],
        resume: None,
        keep: MODEL,
    },
    Agent {
        name: "amp",
        aliases: &[],
        resume: None,
        keep: MODEL,
    },
    Agent {
        name: "droid",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "devin",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "kimi",
        aliases: &[],
        resume: Some(Resume::Flag("--session")),
        keep: MODEL,
    },
    Agent {
        name: "qwen",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "grok",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "hermes",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
    Agent {
        name: "kilo",
        aliases: &[],
        resume: Some(Resume::Flag("--session")),
        keep: MODEL,
    },
    Agent {
        name: "qodercli",
        aliases: &[],
        resume: Some(Resume::Flag("--resume")),
        keep: MODEL,
    },
];

/// The agent's own command line: without the runner (`node`, `python`) in front of its
/// script, so that its first word is the agent and the rest its arguments.
pub fn own_argv(argv: &[String]) -> Vec<String> {
    match argv.first() {
        Some(first) if RUNNERS.contains(&base(first)) => argv[1..].to_vec(),
        _ => argv.to_vec(),
    }
}

/// Programs that run an agent's script (`node …/claude-code/cli.js`, a wrapper script).
const RUNNERS: &[&str] = &[
    "node", "nodejs", "bun", "deno", "python", "python3", "sh", "bash",
];

pub fn by_name(name: &str) -> Option<&'static Agent> {
    AGENTS
        .iter()
        .find(|a| a.name == name || a.aliases.contains(&name))
}

/// A program's name without its folder, and without `.exe`: npm's Claude Code runs as
/// `…/claude-code/bin/claude.exe` when started by that path.
fn base(s: &str) -> &str {
    let name = s.rsplit('/').next().unwrap_or(s);
    name.strip_suffix(".exe").unwrap_or(name)
}

/// The agent a command line runs, if any: by program name, or by the script a known
/// runner (node, bun, python) was given.
pub fn detect(argv: &[String]) -> Option<&'static Agent> {
    let first = argv.first()?;
    if let Some(a) = by_name(base(first)) {
        return Some(a);
    }
    if RUNNERS.contains(&base(first)) {
        let script = argv.get(1)?;
        if let Some(a) = by_name(base(script).split('.').next().unwrap_or("")) {
            return Some(a);
        }
        // …/node_modules/@anthropic-ai/claude-code/cli.js and the like.
        return script.split('/').find_map(by_name);
    }
    None
}

/// Why a reported session reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSessionRef {
    #[error(
        "a session id must be 1 to 512 bytes without control characters, not starting with '-'"
    )]
    Id,
    #[error("a session path must be absolute, at most 4096 bytes, without control characters")]
    Path,
}

/// A reference to an agent's session, as its hooks report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRef {
    Id(String),
    Path(String),
}

impl SessionRef {
    /// Checks a reported reference: an id is non-empty, at most 512 bytes, without control
    /// characters; a path is absolute and at most 4096 bytes.
    pub fn validate(self) -> Result<SessionRef, BadSessionRef> {
        match &self {
            SessionRef::Id(id) => {
                // Typed after the agent's resume flag: never an option of its own.
                if id.is_empty()
                    || id.len() > 512
                    || id.chars().any(char::is_control)
                    || id.starts_with('-')
                {
                    return Err(BadSessionRef::Id);
                }
            }
            SessionRef::Path(p) => {
                if !p.starts_with('/') || p.len() > 4096 || p.chars().any(char::is_control) {
                    return Err(BadSessionRef::Path);
                }
            }
        }
        Ok(self)
    }

    pub fn value(&self) -> &str {
        match self {
            SessionRef::Id(s) | SessionRef::Path(s) => s,
        }
    }
}

impl From<&SessionRef> for crate::persist::snapshot::AgentSessionRef {
    fn from(r: &SessionRef) -> Self {
        match r {
            SessionRef::Id(s) => Self::Id(s.clone()),
            SessionRef::Path(s) => Self::Path(s.clone()),
        }
    }
}

impl From<&crate::persist::snapshot::AgentSessionRef> for SessionRef {
    fn from(r: &crate::persist::snapshot::AgentSessionRef) -> Self {
        use crate::persist::snapshot::AgentSessionRef as Saved;
        match r {
            Saved::Id(s) => SessionRef::Id(s.clone()),
            Saved::Path(s) => SessionRef::Path(s.clone()),
        }
    }
}

/// The launch flags of `agent` worth keeping, picked from the argv it was started with
/// (its program or script first): `--flag value`, `--flag=value` and `-f value` are
/// recognised; everything else (prompts, an earlier `--resume`, unknown flags) is left,
/// and so is any flag whose value holds a control character (it is typed into a shell).
pub fn kept_flags(agent: &str, argv: &[String]) -> Vec<String> {
    let Some(def) = by_name(agent) else {
        return Vec::new();
    };
    let mut kept = flags_named(def, argv);
    // A flag that takes one value (or none) counts once: the last one given wins, as the
    // agent's own parser would have it (and a renamed one must not clash with it).
    let mut seen = std::collections::HashSet::new();
    kept.reverse();
    let repeats = |k: usize| matches!(def.keep[k].values, Values::Many | Values::Each);
    kept.retain(|(k, _)| repeats(*k) || seen.insert(*k));
    kept.reverse();
    kept.into_iter().flat_map(|(_, words)| words).collect()
}

/// The flags of `argv` (its program first) on `def`'s keep list, each as the index of its
/// keep entry and its words, renamed ones in their new spelling.
fn flags_named(def: &Agent, argv: &[String]) -> Vec<(usize, Vec<String>)> {
    let clean = |w: &str| !w.chars().any(char::is_control);
    let mut out = Vec::new();
    let mut words = argv.iter().skip(1).peekable();
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        }
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (w.as_str(), None),
        };
        let Some(k) = def.keep.iter().position(|k| k.names.contains(&name)) else {
            continue;
        };
        let keep = &def.keep[k];
        let values: Vec<String> = match (keep.values, inline) {
            (Values::None, None) => Vec::new(),
            (Values::None, Some(_)) => continue,
            (_, Some(v)) => vec![v.to_string()],
            (Values::One | Values::OneOf(_) | Values::Each, None) => {
                words.next().cloned().into_iter().collect()
            }
            (Values::Many, None) => {
                let mut vs = Vec::new();
                while let Some(v) = words.next_if(|v| !v.starts_with('-')) {
                    vs.push(v.clone());
                }
                vs
            }
        };
        if keep.values != Values::None && values.is_empty() {
            continue;
        }
        if let Values::OneOf(allowed) = keep.values {
            if !values.iter().all(|v| allowed.contains(&v.as_str())) {
                continue;
            }
        }
        if !values.iter().all(|v| clean(v)) {
            continue;
        }
        match keep.becomes {
            // Its new spelling, read as such (each of its flags with its own entry).
            Some(new) => {
                let words: Vec<String> = std::iter::once("")
                    .chain(new.iter().copied())
                    .map(str::to_string)
                    .collect();
                out.extend(flags_named(def, &words));
            }
            None => out.push((k, [vec![name.to_string()], values].concat())),
        }
    }
    out
}

/// The command that resumes `session` of `agent`, if the report came from that agent's
/// official hook (`herdr:<agent>`) and the agent can resume. `flags` are the agent's
/// launch flags to keep; only those on the agent's keep list are used.
pub fn plan(
    source: &str,
    agent: &str,
    session: &SessionRef,
    flags: &[String],
) -> Option<Vec<String>> {
    let def = by_name(agent)?;
    if source != format!("herdr:{}", def.name) {
        return None;
    }
    let r = session.value().to_string();
    let resume = def.resume?;
    let mut argv = vec![def.name.to_string()];
    let launch: Vec<String> = std::iter::once(def.name.to_string())
        .chain(flags.iter().cloned())
        .collect();
    argv.extend(kept_flags(def.name, &launch));
    match resume {
        Resume::Flag(f) => argv.extend([f.to_string(), r]),
        Resume::FlagEq(f) => argv.push(format!("{f}={r}")),
        Resume::Sub(s) => argv.extend([s.to_string(), r]),
    }
    Some(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn detection_by_program_alias_and_runner_script() {
        assert_eq!(
            detect(&v(&["/usr/local/bin/claude"])).map(|a| a.name),
            Some("claude")
        );
        assert_eq!(
            detect(&v(&["claude-code", "--x"])).map(|a| a.name),
            Some("claude")
        );
        assert_eq!(
            detect(&v(&[
                "/home/u/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
                "--model",
                "opus"
            ]))
            .map(|a| a.name),
            Some("claude"),
            "npm's native binary run by its real path"
        );
        assert_eq!(
            detect(&v(&[
                "node",
                "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
            ]))
            .map(|a| a.name),
            Some("claude")
        );
        assert_eq!(
            detect(&v(&["node", "/opt/bin/codex.js"])).map(|a| a.name),
            Some("codex")
        );
        assert_eq!(detect(&v(&["bash"])), None);
        assert_eq!(detect(&v(&["node", "server.js"])), None);
        assert_eq!(detect(&v(&[])), None);
    }

    fn plan_(source: &str, agent: &str, session: &SessionRef) -> Option<Vec<String>> {
        plan(source, agent, session, &[])
    }

    #[test]
    fn launch_flags_that_still_apply_are_kept() {
        let argv = v(&[
            "claude",
            "--model",
            "opus",
            "--resume",
            "old",
            "--permission-mode=plan",
            "--dangerously-skip-permissions",
            "--add-dir",
            "../a",
            "../b",
            "--settings",
            "/tmp/evil.json",
            "--allowedTools",
            "Bash(x)\u{15}; rm -rf ~",
            "fix the bug",
            "--verbose=x",
        ]);
        let flags = kept_flags("claude", &argv);
        assert_eq!(
            flags,
            v(&[
                "--model",
                "opus",
                "--permission-mode",
                "plan",
                "--dangerously-skip-permissions",
                "--add-dir",
                "../a",
                "../b"
            ]),
            "command-bearing flags and control characters are dropped"
        );
        let id = SessionRef::Id("abc".into());
        assert_eq!(
            plan("herdr:claude", "claude", &id, &flags),
            Some([v(&["claude"]), flags.clone(), v(&["--resume", "abc"])].concat())
        );
        // A script agent's own argv starts at its script.
        let node = v(&["node", "/x/claude-code/cli.js", "--model", "opus"]);
        assert_eq!(
            kept_flags("claude", &own_argv(&node)),
            v(&["--model", "opus"])
        );
        // Codex takes its flags before the subcommand; short spellings count.
        let codex = v(&[
            "codex",
            "-m",
            "o3",
            "-s",
            "read-only",
            "write tests",
            "--",
            "-m",
        ]);
        let flags = kept_flags("codex", &codex);
        assert_eq!(flags, v(&["-m", "o3", "-s", "read-only"]));
        assert_eq!(
            plan("herdr:codex", "codex", &id, &flags),
            Some(v(&[
                "codex",
                "-m",
                "o3",
                "-s",
                "read-only",
                "resume",
                "abc"
            ]))
        );
        // What an older Codex took and 0.171 rejects: `--full-auto` becomes what it
        // meant, approval values it lost and `--profile` (a file of settings) are dropped,
        // and a flag given twice counts once, the last one winning.
        let old = v(&[
            "codex",
            "--full-auto",
            "-a",
            "on-failure",
            "-p",
            "work",
            "--profile=x",
            "-s",
            "read-only",
            "-s",
            "sideways",
        ]);
        assert_eq!(
            kept_flags("codex", &old),
            v(&["--ask-for-approval", "on-request", "-s", "read-only"])
        );
        assert_eq!(
            kept_flags(
                "codex",
                &v(&["codex", "--add-dir", "../a", "--add-dir", "../b"])
            ),
            v(&["--add-dir", "../a", "--add-dir", "../b"]),
            "a flag given once per value keeps them all"
        );
        let flags = kept_flags("codex", &v(&["codex", "--full-auto", "-a", "never"]));
        assert_eq!(flags, v(&["--sandbox", "workspace-write", "-a", "never"]));
        let again = [v(&["codex"]), flags.clone()].concat();
        assert_eq!(
            kept_flags("codex", &again),
            flags,
            "filtering twice changes nothing"
        );
        // Flags saved for one agent are filtered again by the plan: nothing else passes.
        assert_eq!(
            plan(
                "herdr:opencode",
                "opencode",
                &id,
                &v(&["--evil", "--model", "m"])
            ),
            Some(v(&["opencode", "--model", "m", "--session", "abc"]))
        );
    }

    #[test]
    fn plans_need_the_official_source_of_that_very_agent() {
        let id = SessionRef::Id("abc".into());
        assert_eq!(
            plan_("herdr:claude", "claude", &id),
            Some(v(&["claude", "--resume", "abc"]))
        );
        assert_eq!(
            plan_("herdr:codex", "codex", &id),
            Some(v(&["codex", "resume", "abc"]))
        );
        assert_eq!(
            plan_("herdr:copilot", "copilot", &id),
            Some(v(&["copilot", "--resume=abc"]))
        );
        assert_eq!(
            plan_("herdr:claude", "claude-code", &id),
            Some(v(&["claude", "--resume", "abc"]))
        );
        assert_eq!(plan_("plugin:x", "claude", &id), None);
        assert_eq!(plan_("herdr:codex", "claude", &id), None);
        assert_eq!(
            plan_("herdr:gemini", "gemini", &id),
            None,
            "no known resume syntax"
        );
    }

    #[test]
    fn session_refs_are_validated() {
        assert!(SessionRef::Id("ok-1".into()).validate().is_ok());
        assert!(SessionRef::Id(String::new()).validate().is_err());
        assert!(SessionRef::Id("a\nb".into()).validate().is_err());
        assert!(SessionRef::Id("x".repeat(513)).validate().is_err());
        assert!(
            SessionRef::Id("--dangerously-bypass-approvals-and-sandbox".into())
                .validate()
                .is_err(),
            "an id is never an option"
        );
        assert!(SessionRef::Path("/home/u/s.jsonl".into())
            .validate()
            .is_ok());
        assert!(SessionRef::Path("rel/s.jsonl".into()).validate().is_err());
        assert!(SessionRef::Path(format!("/{}", "x".repeat(4096)))
            .validate()
            .is_err());
    }
}
