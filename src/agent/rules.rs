//! Screen rules: per-agent data files that tell an agent's state from what its pane shows,
//! for agents whose hooks do not report it. The built-in files live next to this module
//! (`rules/<agent>.toml`); a file of the same name in the config folder's `agents/`
//! replaces one.
//!
//! Invariant: rules are data. Adding or fixing an agent's patterns never needs code; a
//! broken file is reported and the built-in rules (or none) stay in force.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The rule files herdr ships, by agent name.
const BUILTIN: &[(&str, &str)] = &[
    ("claude", include_str!("rules/claude.toml")),
    ("codex", include_str!("rules/codex.toml")),
];

/// Rows looked at when a rule names no `lines`: the whole screen of any usual terminal.
const ALL_LINES: usize = 1000;

#[derive(Debug, Clone)]
pub struct Rule {
    pub state: &'static str,
    pub pattern: regex_lite::Regex,
    /// Only the last this many non-blank rows of the screen are searched.
    pub lines: usize,
}

/// One agent's rules, in order: the first that matches decides.
#[derive(Debug, Clone, Default)]
pub struct Rules(pub Vec<Rule>);

impl Rules {
    /// The state the screen shows, if a rule matches; `None` means idle.
    pub fn classify(&self, rows: &[String]) -> Option<&'static str> {
        let filled: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.is_empty())
            .collect();
        self.0.iter().find_map(|rule| {
            let from = filled.len().saturating_sub(rule.lines);
            filled[from..]
                .iter()
                .any(|row| rule.pattern.is_match(row))
                .then_some(rule.state)
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    state: String,
    pattern: String,
    lines: Option<usize>,
}

/// What is wrong in a rule file, and where.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The TOML parser's own message (which ends in a newline, trimmed here).
    #[error("{}", .0.to_string().trim_end())]
    Toml(toml::de::Error),
    #[error("rule {rule}: state must be working, blocked or idle, got {got:?}")]
    State { rule: usize, got: String },
    #[error("rule {rule}: bad pattern {pattern:?}: {error}")]
    Pattern {
        rule: usize,
        pattern: String,
        error: regex_lite::Error,
    },
    #[error("rule {0}: lines must be at least 1")]
    NoLines(usize),
}

/// Parses one rule file; the error names what is wrong and where.
pub fn parse(text: &str) -> Result<Rules, RuleError> {
    let file: File = toml::from_str(text).map_err(RuleError::Toml)?;
    let mut rules = Vec::new();
    for (i, raw) in file.rule.into_iter().enumerate() {
        let state = match raw.state.as_str() {
            "working" => "working",
            "blocked" => "blocked",
            "idle" => "idle",
            other => {
                return Err(RuleError::State {
                    rule: i + 1,
                    got: other.into(),
                })
            }
        };
        let pattern = regex_lite::Regex::new(&raw.pattern).map_err(|error| RuleError::Pattern {
            rule: i + 1,
            pattern: raw.pattern.clone(),
            error,
        })?;
        let lines = match raw.lines {
            Some(0) => return Err(RuleError::NoLines(i + 1)),
            Some(n) => n,
            None => ALL_LINES,
        };
        rules.push(Rule {
            state,
            pattern,
            lines,
        });
    }
    Ok(Rules(rules))
}

/// Every agent's rules: the built-in ones, replaced or added to by `<dir>/<agent>.toml`.
/// Problems come back as messages naming the file; the rules they concern stay built-in.
pub fn load(dir: Option<&Path>) -> (BTreeMap<String, Rules>, Vec<(PathBuf, String)>) {
    let mut set = BTreeMap::new();
    let mut problems = Vec::new();
    for (agent, text) in BUILTIN {
        match parse(text) {
            Ok(r) => {
                set.insert(agent.to_string(), r);
            }
            Err(e) => problems.push((
                PathBuf::from(format!("(built-in) {agent}.toml")),
                e.to_string(),
            )),
        }
    }
    let Some(entries) = dir.and_then(|d| std::fs::read_dir(d).ok()) else {
        return (set, problems);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let Some(agent) = super::by_name(stem) else {
            problems.push((
                path.clone(),
                format!("{stem:?} is not an agent herdr knows (see docs/agents.md); ignored"),
            ));
            continue;
        };
        match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| parse(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => {
                set.insert(agent.name.to_string(), r);
            }
            Err(e) => problems.push((path.clone(), format!("{e}; the built-in rules stay"))),
        }
    }
    (set, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn builtin_rules_parse_and_tell_states_apart() {
        let (set, problems) = load(None);
        assert!(problems.is_empty(), "{problems:?}");
        let claude = &set["claude"];
        assert_eq!(
            claude.classify(&rows("> fix it\n✻ Thinking… (3s · esc to interrupt)\n")),
            Some("working")
        );
        assert_eq!(
            claude.classify(&rows(
                "Bash command\n  rm -rf build\nDo you want to proceed?\n❯ 1. Yes\n  2. Yes, and don't ask again for rm commands\n  3. No, and tell Claude what to do differently\n"
            )),
            Some("blocked")
        );
        // Claude Code 2.1.197's Bash prompt, as its pane shows it.
        assert_eq!(
            claude.classify(&rows(
                "● Bash(touch tool-ran)\n  ⎿  Waiting…\n\n───\n Bash command\n\n   touch tool-ran\n   Create a file\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to work/ from this project\n   3. No\n\n Esc to cancel · Tab to amend · ctrl+e to explain\n"
            )),
            Some("blocked")
        );
        assert_eq!(
            claude.classify(&rows("● Do you want to proceed with the refactor?\n> \n")),
            None,
            "an answer that asks is not a prompt"
        );
        assert_eq!(claude.classify(&rows("> \n? for shortcuts\n\n\n")), None);
        let codex = &set["codex"];
        assert_eq!(
            codex.classify(&rows("• Working (5s • esc to interrupt)")),
            Some("working")
        );
        assert_eq!(
            codex.classify(&rows("• Working (0s • esc to int…\n› Ask Codex")),
            Some("working"),
            "its status line cut short in a narrow pane"
        );
        for retrying in [
            "• Reconnecting… 2/5",
            "• Reconnecting... 1/5 (stream closed)",
        ] {
            assert_eq!(
                codex.classify(&rows(&format!("{retrying}\n› Ask Codex"))),
                Some("working"),
                "{retrying}: a dropped stream retried is still the turn"
            );
        }
        assert_eq!(
            codex.classify(&rows(
                "Reconnecting to the office VPN fixed it.\n› Ask Codex"
            )),
            None,
            "an answer's words are not its status line"
        );
        assert_eq!(
            codex.classify(&rows("• I kept Working (5s budget) in mind\n")),
            None,
            "words of an answer are not its status line"
        );
        assert_eq!(
            codex.classify(&rows(
                "Would you like to run the following command?\n  $ make\n› 1. Yes, proceed\n  2. No, and tell Codex what to do differently\n"
            )),
            Some("blocked")
        );
        assert_eq!(
            codex.classify(&rows("Would you like me to make the tests pass as well?\n")),
            None,
            "its closing question is not an approval"
        );
    }

    #[test]
    fn lines_limit_a_rule_to_the_bottom_of_the_screen() {
        let r = parse("[[rule]]\nstate = \"working\"\nlines = 2\npattern = 'busy'\n").unwrap();
        assert_eq!(r.classify(&rows("busy\nA\nB\n\n\n")), None);
        assert_eq!(r.classify(&rows("A\nbusy\nB\n\n\n")), Some("working"));
    }

    #[test]
    fn broken_files_are_explained() {
        let e = parse("[[rule]]\nstate = \"sleepy\"\npattern = 'x'\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sleepy"), "{e}");
        let e = parse("[[rule]]\nstate = \"idle\"\npattern = '('\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad pattern"), "{e}");
        let e = parse("[[rule]]\nstate = \"idle\"\npatern = 'x'\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("patern"), "{e}");
    }

    #[test]
    fn a_user_file_replaces_the_builtin_one_and_bad_ones_are_reported() {
        let dir = std::env::temp_dir().join(format!("herdr-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("claude.toml"),
            "[[rule]]\nstate = \"blocked\"\npattern = 'WAITING'\n",
        )
        .unwrap();
        std::fs::write(dir.join("codex.toml"), "not toml [").unwrap();
        std::fs::write(dir.join("nobody.toml"), "").unwrap();
        let (set, problems) = load(Some(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(set["claude"].classify(&rows("WAITING")), Some("blocked"));
        assert_eq!(set["claude"].classify(&rows("esc to interrupt")), None);
        assert_eq!(
            set["codex"].classify(&rows("esc to interrupt")),
            Some("working"),
            "a broken file leaves the built-in rules"
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
