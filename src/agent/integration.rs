//! `herdr integration install|uninstall|status claude`: adds herdr's hooks to Claude Code's
//! settings (`~/.claude/settings.json`) so that it reports its session id and state, and
//! takes exactly those hooks out again.
//!
//! Invariants: the file is edited as text (`json_text`), so every byte herdr does not need
//! to change — other settings, numbers as written, key order, duplicate keys, layout —
//! stays as it was; installing or uninstalling twice changes nothing the second time;
//! uninstall removes only the hook commands that are herdr's, and an entry only when that
//! leaves it without hooks; before every change the file as it was is copied to
//! `<name>.herdr-backup`; the file keeps its mode and stays a symlink if it is one; a file
//! that is not valid JSON, or not shaped as Claude Code's settings, is never touched.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::claude::EVENTS as CLAUDE_EVENTS;
use super::error::IntegrationError;
use super::json_text::{self, Items, Node};

/// herdr's hooks in one agent's settings of Claude Code's shape (`{"hooks": {"Event":
/// [{"hooks": [{"type": "command", "command": …}]}]}}`; Codex's `hooks.json` has it too):
/// the events hooked and the command for each, `<prefix><Event>`.
pub struct HookSet {
    pub events: &'static [&'static str],
    /// What every one of herdr's commands starts with (recognised again by it).
    pub prefix: &'static str,
    /// The seconds the agent gives each of them, if herdr names it.
    pub timeout: Option<u64>,
}

/// Claude Code's: `herdr agent hook claude <Event>`.
pub const CLAUDE: HookSet = HookSet {
    events: CLAUDE_EVENTS,
    prefix: "herdr agent hook claude ",
    timeout: None,
};

impl HookSet {
    /// The command herdr installs for an event.
    pub fn command(&self, event: &str) -> String {
        format!("{}{event}", self.prefix)
    }
}

/// The command herdr installs for one of Claude Code's events.
pub fn hook_command(event: &str) -> String {
    CLAUDE.command(event)
}

pub fn claude_settings_path() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    home.join(".claude").join("settings.json")
}

impl HookSet {
    /// A hook command object (`{"type": "command", "command": …}`) that is herdr's.
    fn is_ours(&self, hook: &Node) -> bool {
        hook.get("command")
            .and_then(Node::as_str)
            .is_some_and(|c| c.starts_with(self.prefix))
    }

    /// An entry (`{"matcher": …, "hooks": [ … ]}`) holding one of herdr's commands.
    fn holds_ours(&self, entry: &Node) -> bool {
        entry
            .get("hooks")
            .and_then(Node::elements)
            .is_some_and(|hooks| hooks.iter().any(|h| self.is_ours(h)))
    }

    /// The entry herdr adds to an event's list.
    fn entry(&self, event: &str) -> Value {
        let mut hook = json!({ "type": "command", "command": self.command(event) });
        if let Some(secs) = self.timeout {
            hook["timeout"] = json!(secs);
        }
        json!({ "hooks": [hook] })
    }
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Node, IntegrationError> {
    let root = json_text::parse(text).map_err(|source| IntegrationError::NotJson {
        path: path.into(),
        source,
    })?;
    if root.members().is_none() {
        return Err(IntegrationError::NotAnObject(path.into()));
    }
    Ok(root)
}

/// The text with herdr's Claude Code hooks added (unchanged if they are there already).
pub fn add_hooks(text: &str, path: &Path) -> Result<String, IntegrationError> {
    add_set(&CLAUDE, text, path)
}

/// The text with the hooks of `set` added (unchanged if they are there already).
pub fn add_set(set: &HookSet, text: &str, path: &Path) -> Result<String, IntegrationError> {
    let root = parse(text, path)?;
    let Some(hooks) = root.get("hooks") else {
        let all: serde_json::Map<String, Value> = set
            .events
            .iter()
            .map(|event| (event.to_string(), json!([set.entry(event)])))
            .collect();
        let member = [("hooks", Value::Object(all))];
        let edit = json_text::append(text, &root, &root, Items::Members(&member));
        return Ok(json_text::apply(text, vec![edit]));
    };
    if hooks.members().is_none() {
        return Err(IntegrationError::HooksNotAnObject(path.into()));
    }
    let mut edits = Vec::new();
    let mut missing = Vec::new();
    for event in set.events {
        let Some(list) = hooks.get(event) else {
            missing.push((*event, json!([set.entry(event)])));
            continue;
        };
        let entries = list
            .elements()
            .ok_or_else(|| IntegrationError::EventNotAList {
                event,
                path: path.into(),
            })?;
        if !entries.iter().any(|e| set.holds_ours(e)) {
            let entry = [set.entry(event)];
            edits.push(json_text::append(
                text,
                &root,
                list,
                Items::Elements(&entry),
            ));
        }
    }
    if !missing.is_empty() {
        edits.push(json_text::append(
            text,
            &root,
            hooks,
            Items::Members(&missing),
        ));
    }
    Ok(json_text::apply(text, edits))
}

/// The text without herdr's Claude Code hook commands (see `remove_set`).
pub fn remove_hooks(text: &str, path: &Path) -> Result<String, IntegrationError> {
    remove_set(&CLAUDE, text, path)
}

/// The text without the hook commands of `set`. An entry, an event's list and the "hooks"
/// object that this leaves empty are removed too (they only held herdr's); whatever was
/// empty before stays.
pub fn remove_set(set: &HookSet, text: &str, path: &Path) -> Result<String, IntegrationError> {
    let root = parse(text, path)?;
    let (Some(at), Some(hooks)) = (root.position("hooks"), root.get("hooks")) else {
        return Ok(text.to_string());
    };
    let Some(events) = hooks.members() else {
        return Ok(text.to_string());
    };
    let mut edits = Vec::new();
    let mut keep_events = vec![true; events.len()];
    for event in set.events {
        let Some(i) = hooks.position(event) else {
            continue;
        };
        let list = &events[i].value;
        let Some(entries) = list.elements() else {
            continue;
        };
        let mut list_edits = Vec::new();
        let mut keep_entries = vec![true; entries.len()];
        for (j, entry) in entries.iter().enumerate() {
            let Some(commands) = entry.get("hooks").filter(|_| set.holds_ours(entry)) else {
                continue;
            };
            let keep: Vec<bool> = commands
                .elements()
                .unwrap_or_default()
                .iter()
                .map(|h| !set.is_ours(h))
                .collect();
            if emptied(&keep) {
                keep_entries[j] = false;
            } else {
                list_edits.extend(json_text::remove(commands, &keep));
            }
        }
        if emptied(&keep_entries) {
            keep_events[i] = false;
        } else {
            edits.extend(list_edits);
            edits.extend(json_text::remove(list, &keep_entries));
        }
    }
    if emptied(&keep_events) {
        let keep: Vec<bool> = (0..root.members().map_or(0, <[_]>::len))
            .map(|i| i != at)
            .collect();
        edits = json_text::remove(&root, &keep);
    } else {
        edits.extend(json_text::remove(hooks, &keep_events));
    }
    Ok(json_text::apply(text, edits))
}

/// Whether removing the items not kept empties their container (one that was empty
/// already is not emptied by herdr, and stays).
fn emptied(keep: &[bool]) -> bool {
    !keep.is_empty() && !keep.contains(&true)
}

/// The events that lack herdr's Claude Code hook.
pub fn missing(root: &Node) -> Vec<&'static str> {
    missing_of(&CLAUDE, root)
}

/// The events of `set` that lack herdr's hook.
pub fn missing_of(set: &HookSet, root: &Node) -> Vec<&'static str> {
    set.events
        .iter()
        .copied()
        .filter(|event| {
            !root
                .get("hooks")
                .and_then(|h| h.get(event))
                .and_then(Node::elements)
                .is_some_and(|l| l.iter().any(|e| set.holds_ours(e)))
        })
        .collect()
}

/// An agent's config file as it is; `None` if it does not exist yet.
pub(super) fn read_file(path: &Path) -> Result<Option<Vec<u8>>, IntegrationError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(IntegrationError::Read {
            path: path.into(),
            source,
        }),
    }
}

/// Replaces an agent's config file in one step (its folder made if missing), keeping the
/// file's mode, and the file a link stays pointing at if it is one.
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IntegrationError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| IntegrationError::CreateDir {
            dir: dir.into(),
            source,
        })?;
    }
    crate::persist::files::write_atomic_keeping_mode(path, bytes).map_err(IntegrationError::Write)
}

/// Where `backup` keeps a config file's previous content: `<name>.herdr-backup` beside it.
pub(super) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".herdr-backup");
    path.with_file_name(name)
}

/// Keeps `old`, the file's content right before herdr changes it, as its backup (replacing
/// the one before: the backup is always of the last change).
pub(super) fn backup(path: &Path, old: &[u8]) -> Result<(), IntegrationError> {
    let backup = backup_path(path);
    crate::persist::files::write_atomic(&backup, old).map_err(|error| IntegrationError::Backup {
        path: path.into(),
        backup,
        error,
    })
}

/// An agent's config file as text; `None` if it does not exist yet.
pub(super) fn read_text(path: &Path) -> Result<Option<String>, IntegrationError> {
    read_file(path)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|source| IntegrationError::NotUtf8 {
                path: path.into(),
                source,
            })
        })
        .transpose()
}

pub fn install(path: &Path) -> Result<String, IntegrationError> {
    let old = read_text(path)?;
    // Claude Code writes its settings pretty-printed with two spaces and a final newline.
    let text = old.clone().unwrap_or_else(|| "{}\n".to_string());
    let new = add_hooks(&text, path)?;
    if old.as_deref() == Some(new.as_str()) {
        return Ok(format!("herdr's hooks are already in {}", path.display()));
    }
    if let Some(old) = &old {
        backup(path, old.as_bytes())?;
    }
    write_file(path, new.as_bytes())?;
    Ok(format!("installed herdr's hooks in {}", path.display()))
}

pub fn uninstall(path: &Path) -> Result<String, IntegrationError> {
    let Some(text) = read_text(path)? else {
        return Ok(format!(
            "{} does not exist; nothing to remove",
            path.display()
        ));
    };
    let new = remove_hooks(&text, path)?;
    if new == text {
        return Ok(format!("no herdr hooks in {}", path.display()));
    }
    backup(path, text.as_bytes())?;
    write_file(path, new.as_bytes())?;
    Ok(format!("removed herdr's hooks from {}", path.display()))
}

pub fn status(path: &Path) -> Result<String, IntegrationError> {
    let Some(text) = read_text(path)? else {
        return Ok(format!(
            "claude: not installed ({} does not exist)",
            path.display()
        ));
    };
    let missing = missing(&parse(&text, path)?);
    Ok(if missing.is_empty() {
        format!("claude: installed ({})", path.display())
    } else if missing.len() == CLAUDE_EVENTS.len() {
        format!("claude: not installed ({})", path.display())
    } else {
        // An install by an earlier herdr, which hooked fewer events.
        format!(
            "claude: partly installed, no hook for {} ({}); `herdr integration install claude` adds them",
            missing.join(", "),
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(npm test:*)"
    ]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          }
        ]
      }
    ]
  },
  "someFutureKey": {
    "nested": [
      1,
      2
    ]
  }
}
"#;

    #[test]
    fn install_then_uninstall_round_trips_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, FIXTURE).unwrap();
        install(&path).unwrap();
        let once = std::fs::read_to_string(&path).unwrap();
        assert!(
            once.contains("herdr agent hook claude UserPromptSubmit") && once.contains("say done")
        );
        assert!(
            once.find("\"model\"") < once.find("\"someFutureKey\""),
            "order kept"
        );
        install(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), once, "idempotent");
        assert_eq!(
            std::fs::read_to_string(path.with_extension("json.herdr-backup")).unwrap(),
            FIXTURE
        );
        assert!(status(&path).unwrap().contains("claude: installed"));
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
    }

    #[test]
    fn a_missing_file_is_created_and_uninstall_leaves_an_empty_object() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        assert!(status(&path).unwrap().contains("does not exist"));
        install(&path).unwrap();
        assert!(status(&path).unwrap().contains("claude: installed"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("{\n  \"hooks\": {\n    \"SessionStart\": ["),
            "{text}"
        );
        assert!(!backup_path(&path).exists(), "nothing to back up");
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
    }

    /// `.claude/settings.json` in a fresh folder, holding `text`.
    fn settings(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn text(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn uninstall_keeps_the_users_hooks_that_share_an_entry_with_herdrs() {
        let shared = r#"{
  "hooks": {
    "Stop": [
      {
        "matcher": "",
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          },
          {
            "type": "command",
            "command": "herdr agent hook claude Stop"
          },
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ],
    "PreCompact": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "herdr agent hook claude UserPromptSubmit"
          },
          {
            "type": "command",
            "command": "audit-bash"
          }
        ]
      }
    ]
  }
}
"#;
        let (_dir, path) = settings(shared);
        install(&path).unwrap();
        assert!(status(&path).unwrap().contains("claude: installed"));
        uninstall(&path).unwrap();
        // Only herdr's command object goes, from an event herdr hooks; the entry keeps the
        // user's own; whatever herdr does not hook is not looked at.
        let want = shared.replace(
            r#"          {
            "type": "command",
            "command": "herdr agent hook claude Stop"
          },
"#,
            "",
        );
        assert_eq!(text(&path), want);
        assert!(uninstall(&path).unwrap().contains("no herdr hooks"));
        assert_eq!(text(&path), want, "uninstalling twice changes nothing");
        // Empty places of the user's own are not herdr's to remove.
        for user in [
            r#"{"hooks": {}}"#,
            r#"{"hooks": {"Stop": []}}"#,
            r#"{"hooks": {"Stop": [{"hooks": []}]}}"#,
        ] {
            let (_dir, path) = settings(user);
            assert!(uninstall(&path).unwrap().contains("no herdr hooks"));
            assert_eq!(text(&path), user);
        }
        // herdr's command last in a shared entry: the comma before it goes with it.
        let (_dir, path) = settings(
            r#"{"hooks": {"Stop": [{"hooks": [{"command": "say"}, {"command": "herdr agent hook claude Stop"}]}]}}"#,
        );
        uninstall(&path).unwrap();
        assert_eq!(
            text(&path),
            r#"{"hooks": {"Stop": [{"hooks": [{"command": "say"}]}]}}"#
        );
    }

    #[test]
    fn numbers_duplicate_keys_and_layout_stay_as_written() {
        let user = "{\n    \"cleanupPeriodDays\": 1e2,\n    \"big\": 12345678901234567890,\n    \"bigger\": 98765432109876543210987654321,\n    \"ratio\": 1.50,\n    \"model\": \"sonnet\",\n    \"model\": \"opus\"\n}\n";
        let (_dir, path) = settings(user);
        install(&path).unwrap();
        let once = text(&path);
        assert!(
            once.starts_with(user.trim_end().trim_end_matches('}').trim_end()),
            "{once}"
        );
        assert!(
            once.contains(",\n    \"hooks\": {\n        \"SessionStart\": [\n            {\n"),
            "indented like the file: {once}"
        );
        install(&path).unwrap();
        assert_eq!(text(&path), once, "installing twice changes nothing");
        uninstall(&path).unwrap();
        assert_eq!(text(&path), user);
        // A file on one line stays on one line; CRLF, tabs and a byte-order mark are kept.
        let cases = [
            (
                "\u{feff}{\"model\": \"opus\"}",
                "\u{feff}{\"model\": \"opus\",\"hooks\":{\"SessionStart\":[",
            ),
            (
                r#"{"n":1e2,"big":12345678901234567890,"hooks":{"PreCompact":[]}}"#,
                r#","SessionStart":[{"hooks":[{"type":"command","command":"herdr agent hook claude SessionStart"}]}],"#,
            ),
            (
                "{\r\n\t\"n\": 1E+2,\r\n\t\"hooks\": {\r\n\t\t\"PreCompact\": []\r\n\t}\r\n}\r\n",
                "[],\r\n\t\t\"SessionStart\": [\r\n\t\t\t{\r\n\t\t\t\t\"hooks\": [\r\n\t\t\t\t\t{\r\n",
            ),
        ];
        for (user, added) in cases {
            let (_dir, path) = settings(user);
            install(&path).unwrap();
            let once = text(&path);
            assert!(once.contains(added), "{once:?}");
            assert_eq!(
                once.matches('\n').count(),
                once.matches("\r\n").count(),
                "{once:?}"
            );
            uninstall(&path).unwrap();
            assert_eq!(text(&path), user);
        }
    }

    #[test]
    fn the_mode_and_a_link_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, path) = settings("");
        let real = dir.path().join("dotfiles/claude.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, FIXTURE).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&real, &path).unwrap();
        let mode = || std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        install(&path).unwrap();
        assert!(text(&real).contains(CLAUDE.prefix));
        assert_eq!(mode(), 0o644);
        assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
        uninstall(&path).unwrap();
        assert_eq!((text(&real).as_str(), mode()), (FIXTURE, 0o644));
        assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
    }

    #[test]
    fn a_backup_is_made_before_every_change() {
        let (_dir, path) = settings(FIXTURE);
        let backup = || text(&backup_path(&path));
        install(&path).unwrap();
        assert_eq!(backup(), FIXTURE);
        // The user changes something; the next change herdr makes backs that up.
        let edited = text(&path).replace("\"opus\"", "\"sonnet\"");
        std::fs::write(&path, &edited).unwrap();
        install(&path).unwrap();
        assert_eq!(backup(), FIXTURE, "no change, no backup");
        uninstall(&path).unwrap();
        assert_eq!(backup(), edited);
        let uninstalled = text(&path);
        install(&path).unwrap();
        assert_eq!(backup(), uninstalled);
    }

    #[test]
    fn files_herdr_cannot_read_are_left_untouched() {
        let cases: [(&[u8], &str); 6] = [
            (b"{ not json", "is not valid JSON"),
            (b"[1, 2]", "does not hold a JSON object"),
            (b"{\"hooks\": []}", "\"hooks\" in"),
            (b"{\"hooks\": {\"Stop\": {}}}", "\"hooks.Stop\" in"),
            (b"{\"a\": 1,}", "is not valid JSON"),
            (b"{\"a\": \"\xff\"}", "is not UTF-8"),
        ];
        for (bytes, what) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("settings.json");
            std::fs::write(&path, bytes).unwrap();
            let e = crate::agent::error::chain(&install(&path).unwrap_err());
            assert!(
                e.contains(what) && e.contains(&path.display().to_string()),
                "{e}"
            );
            assert!(e.contains("fix it first"), "{e}");
            assert_eq!(
                e.matches(" at line ").count(),
                e.contains(" at line ") as usize,
                "{e}"
            );
            let _ = uninstall(&path);
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}");
            assert!(!backup_path(&path).exists(), "{what}");
        }
    }

    #[test]
    fn an_install_by_an_earlier_herdr_is_completed_without_touching_it() {
        // What herdr installed when it hooked four events, with a hook of the user's.
        let old: String = {
            let mut t = String::from("{\n  \"hooks\": {\n");
            let events = ["SessionStart", "UserPromptSubmit", "Notification", "Stop"];
            for (i, e) in events.iter().enumerate() {
                let user = if *e == "Stop" {
                    "{ \"type\": \"command\", \"command\": \"say done\" }, "
                } else {
                    ""
                };
                t.push_str(&format!(
                    "    \"{e}\": [ {{ \"hooks\": [ {user}{{ \"type\": \"command\", \"command\": \"herdr agent hook claude {e}\" }} ] }} ]{}\n",
                    if i + 1 < events.len() { "," } else { "" }
                ));
            }
            t.push_str("  }\n}\n");
            t
        };
        let (_dir, path) = settings(&old);
        let s = status(&path).unwrap();
        assert!(
            s.contains("partly installed") && s.contains("PermissionRequest"),
            "{s}"
        );
        install(&path).unwrap();
        let new = text(&path);
        let kept = old.trim_end().trim_end_matches('}').trim_end();
        assert!(
            new.starts_with(kept.trim_end_matches('}').trim_end()),
            "{new}"
        );
        for e in CLAUDE_EVENTS {
            assert!(new.contains(&hook_command(e)), "{e}: {new}");
        }
        assert!(status(&path).unwrap().contains("claude: installed"));
        uninstall(&path).unwrap();
        assert_eq!(
            text(&path),
            "{\n  \"hooks\": {\n    \"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"say done\" } ] } ]\n  }\n}\n",
            "only the user's own hook is left"
        );
    }
}
