//! Codex's lifecycle hooks: `hooks.json` in Codex's home (`$CODEX_HOME`, else `~/.codex`),
//! laid out as Claude Code's settings are (`integration::HookSet`), and what each event
//! tells herdr. Codex runs a hook of its user's only once it is trusted: a record
//! `[hooks.state."<hooks.json>:<event>:<entry>:<handler>"] trusted_hash = "sha256:…"` in
//! its `config.toml`, the hash of the hook as Codex normalises it — what Codex writes when
//! its user picks "Trust all" on its "Hooks need review" screen. `herdr integration install
//! codex`, run by the user, writes those records for herdr's own hooks and no others,
//! between two marker lines at the end of `config.toml`; uninstall removes that block.
//!
//! The hooks run in Codex's shared background server (`codex app-server`), not in the
//! pane: their reports are routed by the session they name (`server::api::agent_route`).

use std::path::Path;

use sha2::{Digest, Sha256};

use super::codex::{bare, lines};
use super::error::IntegrationError;
use super::integration::HookSet;

/// Codex's events that herdr hooks, with the names Codex's trust records give them.
const EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "session_start"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("PreToolUse", "pre_tool_use"),
    ("PermissionRequest", "permission_request"),
    ("PostToolUse", "post_tool_use"),
    ("Stop", "stop"),
];

const NAMES: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
];

/// herdr's hooks in `hooks.json`: `herdr agent hook codex <Event>`, each given 10 s
/// (Codex waits for its hooks, by default for up to 600 s).
pub const SET: HookSet = HookSet {
    events: NAMES,
    prefix: "herdr agent hook codex ",
    timeout: Some(TIMEOUT_SECS),
};

const TIMEOUT_SECS: u64 = 10;

const BEGIN: &str =
    "# >>> herdr hooks trusted (`herdr integration uninstall codex` removes this block)";
/// The same, when herdr added the line break before it (the file did not end with one).
const BEGIN_NL: &str =
    "# >>> herdr hooks trusted, after a line break herdr added (`herdr integration uninstall codex` removes this block)";
const END: &str = "# <<< herdr hooks trusted";

/// `hooks.json` beside Codex's `config.toml`.
pub fn hooks_path(config: &Path) -> std::path::PathBuf {
    config.with_file_name("hooks.json")
}

/// What one of Codex's hooks tells herdr: the state its event means (none for
/// `SessionStart`, which only names the session) and the session; `UserPromptSubmit`
/// also the turn's folder and prompt, by which the pane showing it is found.
pub fn hook_report(event: &str, input: &str) -> Option<super::HookReport> {
    let state = match event {
        "SessionStart" => None,
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" => Some("working"),
        "PermissionRequest" => Some("blocked"),
        "Stop" => Some("idle"),
        _ => return None,
    };
    let v: serde_json::Value = serde_json::from_str(input).ok()?;
    let session = v.get("session_id")?.as_str()?.to_string();
    let route = match (event, v.get("cwd"), v.get("prompt")) {
        ("UserPromptSubmit", Some(cwd), Some(prompt)) => {
            super::codex::prompt_route(cwd.as_str()?, prompt.as_str()?)
        }
        _ => None,
    };
    Some(super::HookReport {
        state,
        session: Some(session),
        error: None,
        route,
    })
}

/// The hash Codex records when its user trusts a command hook without a matcher: SHA-256
/// of `{"event_name", "hooks": [{type, command, timeout, async}]}` as canonical JSON
/// (keys sorted, no spaces).
fn trusted_hash(event_key: &str, command: &str, timeout: u64) -> String {
    let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    let identity = format!(
        r#"{{"event_name":{},"hooks":[{{"async":false,"command":{},"timeout":{timeout},"type":"command"}}]}}"#,
        s(event_key),
        s(command)
    );
    let digest = Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust records for herdr's hooks in `hooks_text` (the `hooks.json` at `hooks_path`),
/// as Codex keys them: by the file, the event, and the places of the entry and the
/// command in it.
fn records(hooks_text: &str, hooks_path: &Path) -> Vec<(String, String)> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(hooks_text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, key) in EVENTS {
        let command = SET.command(event);
        let entries = v["hooks"][event].as_array().cloned().unwrap_or_default();
        for (i, entry) in entries.iter().enumerate() {
            let hooks = entry["hooks"].as_array().cloned().unwrap_or_default();
            for (j, hook) in hooks.iter().enumerate() {
                if hook["type"] == "command"
                    && hook["command"] == command.as_str()
                    && hook["timeout"] == TIMEOUT_SECS
                    && entry.get("matcher").is_none()
                {
                    let id = format!("{}:{key}:{i}:{j}", hooks_path.display());
                    out.push((id, trusted_hash(key, &command, TIMEOUT_SECS)));
                }
            }
        }
    }
    out
}

/// herdr's trust block: its first byte (with the line break herdr added before it, if it
/// did), and the byte after its end marker's line.
fn block(text: &str) -> Option<(usize, usize)> {
    let (at, line) = lines(text).find(|(_, l)| matches!(bare(l), BEGIN | BEGIN_NL))?;
    let mut start = at;
    if bare(line) == BEGIN_NL {
        start -= if text[..at].ends_with("\r\n") { 2 } else { 1 };
    }
    let (end_at, end_line) = lines(text).find(|(a, l)| *a > at && bare(l) == END)?;
    Some((start, end_at + end_line.len()))
}

pub fn trust_installed(config_text: &str) -> bool {
    block(config_text).is_some()
}

/// `config_text` without herdr's trust block, byte for byte as it was before.
pub fn remove_trust(config_text: &str) -> String {
    match block(config_text) {
        Some((start, end)) => format!("{}{}", &config_text[..start], &config_text[end..]),
        None => config_text.to_string(),
    }
}

/// `config_text` with a trust block for herdr's hooks in `hooks_text` at its end (the one
/// there before replaced). A hook Codex has a record of already (the user trusted or
/// turned it off in Codex) is left to that record.
pub fn add_trust(
    config_text: &str,
    hooks_text: &str,
    hooks_path: &Path,
    config_path: &Path,
) -> Result<String, IntegrationError> {
    let base = remove_trust(config_text);
    let doc: toml::Table = toml::from_str(&base).map_err(|source| IntegrationError::NotToml {
        path: config_path.into(),
        source,
    })?;
    let known = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let records: Vec<(String, String)> = records(hooks_text, hooks_path)
        .into_iter()
        .filter(|(id, _)| !known.is_some_and(|k| k.contains_key(id)))
        .collect();
    if records.is_empty() {
        return Ok(base);
    }
    let eol = if base.contains("\r\n") { "\r\n" } else { "\n" };
    let toml_str = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = base.clone();
    if out.is_empty() || out.ends_with('\n') {
        out.push_str(&format!("{BEGIN}{eol}"));
    } else {
        out.push_str(&format!("{eol}{BEGIN_NL}{eol}"));
    }
    for (id, hash) in &records {
        out.push_str(&format!(
            "[hooks.state.{}]{eol}trusted_hash = {}{eol}",
            toml_str(id),
            toml_str(hash)
        ));
    }
    out.push_str(&format!("{END}{eol}"));
    toml::from_str::<toml::Table>(&out).map_err(|source| IntegrationError::WouldBreak {
        path: config_path.into(),
        source,
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_hash_is_the_one_codex_records_when_its_user_trusts_the_hook() {
        // For this command without a timeout (Codex's default, 600 s): Codex 0.171.0 took
        // this record, running the hook without asking; the same way of hashing gave,
        // for another command, the very record Codex wrote when told "Trust all".
        assert_eq!(
            trusted_hash("stop", "herdr agent hook codex Stop", 600),
            "sha256:2f11b2c2e462ad2692e6f849bc03296cd140a5cc85ad27e879f75d92c2d2f9a6"
        );
    }

    #[test]
    fn each_event_means_a_state_and_names_its_session() {
        let r = hook_report(
            "PermissionRequest",
            r#"{"session_id":"01a2","turn_id":"t","cwd":"/w","tool_name":"Bash"}"#,
        )
        .unwrap();
        assert_eq!(
            (r.state, r.session.as_deref()),
            (Some("blocked"), Some("01a2"))
        );
        assert_eq!(r.route, None);
        let r = hook_report(
            "UserPromptSubmit",
            r#"{"session_id":"s","cwd":"/w","prompt":"\n  fix it\nplease"}"#,
        )
        .unwrap();
        assert_eq!(r.state, Some("working"));
        let route = r.route.unwrap();
        assert_eq!(
            (route.cwd.as_str(), route.prompt.as_str()),
            ("/w", "fix it")
        );
        let start = hook_report("SessionStart", r#"{"session_id":"s","cwd":"/w"}"#).unwrap();
        assert_eq!((start.state, start.session.as_deref()), (None, Some("s")));
        assert_eq!(
            hook_report("Stop", r#"{"session_id":"s"}"#).unwrap().state,
            Some("idle")
        );
        assert_eq!(hook_report("Stop", r#"{"cwd":"/w"}"#), None, "no session");
        assert_eq!(hook_report("SubagentStop", r#"{"session_id":"s"}"#), None);
        assert_eq!(hook_report("Stop", "not json"), None);
    }

    /// hooks.json with a hook of the user's for Stop and herdr's, and the files' paths.
    fn fixture() -> (String, PathBuf, PathBuf) {
        let path = PathBuf::from("/h/.codex/hooks.json");
        (hooks_json(), path, PathBuf::from("/h/.codex/config.toml"))
    }

    fn hooks_json() -> String {
        let user =
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}"#;
        super::super::integration::add_set(&SET, user, Path::new("/h/.codex/hooks.json")).unwrap()
    }

    #[test]
    fn herdrs_hooks_are_trusted_where_they_are_and_the_block_comes_out_byte_for_byte() {
        let (hooks, path, config) = fixture();
        let text = "model = \"o3\"\n\n[tui]\nx = 1\n";
        let once = add_trust(text, &hooks, &path, &config).unwrap();
        assert!(once.starts_with(text), "{once}");
        let doc: toml::Table = toml::from_str(&once).unwrap();
        let state = doc["hooks"]["state"].as_table().unwrap();
        assert_eq!(state.len(), EVENTS.len(), "{once}");
        // Stop's list held the user's hook first: herdr's is the second entry.
        let stop = &state["/h/.codex/hooks.json:stop:1:0"]["trusted_hash"];
        assert_eq!(
            stop.as_str(),
            Some(trusted_hash("stop", "herdr agent hook codex Stop", 10).as_str())
        );
        assert!(state.contains_key("/h/.codex/hooks.json:session_start:0:0"));
        assert_eq!(add_trust(&once, &hooks, &path, &config).unwrap(), once);
        assert_eq!(remove_trust(&once), text);
        // A file without a final line break, and CRLF.
        for text in ["model = \"o3\"", "model = \"o3\"\r\n", ""] {
            let once = add_trust(text, &hooks, &path, &config).unwrap();
            assert!(toml::from_str::<toml::Table>(&once).is_ok(), "{once:?}");
            assert_eq!(remove_trust(&once), text);
        }
    }

    #[test]
    fn a_record_codex_already_has_is_left_to_it() {
        let (hooks, path, config) = fixture();
        let text = "[hooks.state.\"/h/.codex/hooks.json:stop:1:0\"]\nenabled = false\n";
        let once = add_trust(text, &hooks, &path, &config).unwrap();
        let doc: toml::Table = toml::from_str(&once).unwrap();
        let stop = &doc["hooks"]["state"]["/h/.codex/hooks.json:stop:1:0"];
        assert_eq!(
            stop.get("trusted_hash"),
            None,
            "turned off by its user: {once}"
        );
        assert_eq!(remove_trust(&once), text);
        assert!(add_trust("x = [", &hooks, &path, &config).is_err());
    }
}
