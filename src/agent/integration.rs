//! `herdr integration install|uninstall|status claude`: adds herdr's hooks to Claude Code's
//! settings (`~/.claude/settings.json`) so that it reports its session id and state, and
//! takes exactly those hooks out again.
//!
//! Invariants: every other setting and unknown key is kept, in its order; installing twice
//! changes nothing; the first install keeps a backup of the file as it was; uninstall
//! removes only entries whose command is herdr's.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Map, Value};

/// Claude Code events and the state each one means.
pub const CLAUDE_EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "idle"),
    ("UserPromptSubmit", "working"),
    ("Notification", "blocked"),
    ("Stop", "idle"),
];

/// The command herdr installs for an event (recognised again by its prefix).
pub fn hook_command(event: &str) -> String {
    format!("herdr agent hook claude {event}")
}

const MARK: &str = "herdr agent hook claude ";

pub fn claude_settings_path() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    home.join(".claude").join("settings.json")
}

fn is_ours(entry: &Value) -> bool {
    entry
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| {
            hs.iter().any(|h| {
                h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.starts_with(MARK))
            })
        })
}

/// The settings with herdr's hooks added (unchanged if they are there already).
pub fn add_hooks(mut settings: Value) -> anyhow::Result<Value> {
    let obj = settings
        .as_object_mut()
        .context("the settings file is not a JSON object")?;
    let hooks = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks
        .as_object_mut()
        .context("\"hooks\" in the settings is not an object")?;
    for (event, _) in CLAUDE_EVENTS {
        let list = hooks.entry(*event).or_insert_with(|| Value::Array(vec![]));
        let list = list
            .as_array_mut()
            .with_context(|| format!("\"hooks.{event}\" is not a list"))?;
        if !list.iter().any(is_ours) {
            list.push(
                json!({ "hooks": [ { "type": "command", "command": hook_command(event) } ] }),
            );
        }
    }
    Ok(settings)
}

/// The settings without herdr's hooks; lists and the "hooks" object left empty by that
/// are removed too (they were ours).
pub fn remove_hooks(mut settings: Value) -> Value {
    if let Some(obj) = settings.as_object_mut() {
        if let Some(Value::Object(hooks)) = obj.get_mut("hooks") {
            for (event, _) in CLAUDE_EVENTS {
                if let Some(Value::Array(list)) = hooks.get_mut(*event) {
                    list.retain(|e| !is_ours(e));
                    if list.is_empty() {
                        hooks.shift_remove(*event);
                    }
                }
            }
            if hooks.is_empty() {
                obj.shift_remove("hooks");
            }
        }
    }
    settings
}

pub fn installed(settings: &Value) -> bool {
    CLAUDE_EVENTS.iter().all(|(event, _)| {
        settings
            .get("hooks")
            .and_then(|h| h.get(*event))
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(is_ours))
    })
}

/// An agent's config file as it is; `None` if it does not exist yet.
pub(super) fn read_file(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Replaces an agent's config file in one step (its folder made if missing).
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::persist::files::write_atomic(path, bytes).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Keeps the file as it was before herdr first changed it (`<name>.herdr-backup`).
pub(super) fn backup_once(path: &Path) -> anyhow::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".herdr-backup");
    let backup = path.with_file_name(name);
    if path.exists() && !backup.exists() {
        std::fs::copy(path, &backup)
            .with_context(|| format!("cannot back up {}", path.display()))?;
    }
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<Option<Value>> {
    read_file(path)?
        .map(|bytes| {
            serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not valid JSON; fix it first", path.display()))
        })
        .transpose()
}

/// Claude Code writes its settings pretty-printed with two spaces and a final newline.
fn write(path: &Path, value: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_file(path, text.as_bytes())
}

pub fn install(path: &Path) -> anyhow::Result<String> {
    let value = read(path)?.unwrap_or_else(|| json!({}));
    if installed(&value) {
        return Ok(format!("herdr's hooks are already in {}", path.display()));
    }
    let new = add_hooks(value)?;
    backup_once(path)?;
    write(path, &new)?;
    Ok(format!("installed herdr's hooks in {}", path.display()))
}

pub fn uninstall(path: &Path) -> anyhow::Result<String> {
    let Some(value) = read(path)? else {
        return Ok(format!(
            "{} does not exist; nothing to remove",
            path.display()
        ));
    };
    if !value.get("hooks").is_some_and(|h| {
        CLAUDE_EVENTS.iter().any(|(e, _)| {
            h.get(*e)
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(is_ours))
        })
    }) {
        return Ok(format!("no herdr hooks in {}", path.display()));
    }
    write(path, &remove_hooks(value))?;
    Ok(format!("removed herdr's hooks from {}", path.display()))
}

pub fn status(path: &Path) -> anyhow::Result<String> {
    Ok(match read(path)? {
        Some(v) if installed(&v) => format!("claude: installed ({})", path.display()),
        Some(_) => format!("claude: not installed ({})", path.display()),
        None => format!("claude: not installed ({} does not exist)", path.display()),
    })
}

/// What a Claude Code hook tells herdr: reads the event's JSON from stdin.
pub fn hook_report(event: &str, input: &str) -> anyhow::Result<(String, Option<String>)> {
    let state = CLAUDE_EVENTS
        .iter()
        .find(|(e, _)| *e == event)
        .map(|(_, s)| s.to_string())
        .with_context(|| format!("unknown Claude Code hook event {event:?}"))?;
    let v: Value = serde_json::from_str(input).unwrap_or(Value::Null);
    // Claude Code also notifies when it has been waiting for a prompt a while: that is
    // not a question to the user, only a reminder that it is idle.
    let reminder = v
        .get("message")
        .and_then(Value::as_str)
        .is_some_and(|m| m.contains("waiting for your input"));
    let state = if event == "Notification" && reminder {
        "idle".to_string()
    } else {
        state
    };
    let session = v
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok((state, session))
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
        assert!(installed(
            &serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
        ));
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
    }

    #[test]
    fn broken_settings_are_not_touched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(install(&path).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
        std::fs::write(&path, r#"{"hooks": []}"#).unwrap();
        assert!(install(&path)
            .unwrap_err()
            .to_string()
            .contains("not an object"));
    }

    #[test]
    fn hook_input_maps_to_state_and_session() {
        let (state, session) = hook_report(
            "UserPromptSubmit",
            r#"{"session_id":"abc","hook_event_name":"UserPromptSubmit"}"#,
        )
        .unwrap();
        assert_eq!(
            (state.as_str(), session.as_deref()),
            ("working", Some("abc"))
        );
        assert_eq!(hook_report("Notification", "{}").unwrap().0, "blocked");
        assert_eq!(
            hook_report(
                "Notification",
                r#"{"message":"Claude needs your permission to use Bash"}"#
            )
            .unwrap()
            .0,
            "blocked"
        );
        assert_eq!(
            hook_report(
                "Notification",
                r#"{"message":"Claude is waiting for your input"}"#
            )
            .unwrap()
            .0,
            "idle"
        );
        assert!(hook_report("Nope", "{}").is_err());
    }
}
