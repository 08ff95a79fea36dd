//! `herdr integration install|uninstall|status codex`: Codex CLI runs the program named by
//! `notify` in its `config.toml` when a turn completes, with a JSON description of the
//! turn (its `thread-id` is the session `codex resume` takes). herdr sets `notify` to its
//! own hook; a `notify` the user already had is kept: herdr's hook runs it afterwards with
//! the same JSON, and uninstall puts it back. Install also adds Codex's lifecycle hooks
//! (`codex_hooks`): herdr's entries in `hooks.json`, and their trust records in a second
//! block at the end of `config.toml`.
//!
//! Invariants: the file is edited as text, so comments, order and unknown keys stay as they
//! were; everything herdr adds sits between marker lines; uninstall after install gives
//! back the file byte for byte; before every change the file as it was is kept in
//! `config.toml.herdr-backup`; the file keeps its mode (and stays a link if it is one); a
//! file that is not valid TOML is never touched.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::codex_hooks::{add_trust, hooks_path, remove_trust, trust_installed, SET};
use super::error::IntegrationError;
use super::integration::{self, backup, read_text, write_file};

/// The marker lines around everything herdr adds (matched without their line ending, so
/// a file an editor turned to CRLF is still recognised).
const BEGIN: &str =
    "# >>> herdr integration (`herdr integration uninstall codex` removes this block)";
const END: &str = "# <<< herdr integration";
/// A line of the user's own `notify`, kept in the block while herdr's hook chains to it.
const KEPT: &str = "# herdr kept: ";
/// The same, for a last line that had no newline.
const KEPT_EOF: &str = "# herdr kept (no newline): ";
const BOM: &str = "\u{feff}";

/// The words before Codex's JSON argument: `herdr agent hook codex notify [CHAIN…] JSON`.
pub const HOOK: &[&str] = &["herdr", "agent", "hook", "codex", "notify"];

/// `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`. Codex resolves `$CODEX_HOME`
/// to its real path (and names files in its trust records by it), so does herdr.
pub fn config_path() -> PathBuf {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        let home = std::fs::canonicalize(&home).unwrap_or_else(|_| PathBuf::from(home));
        return home.join("config.toml");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    home.join(".codex").join("config.toml")
}

#[derive(Deserialize)]
struct Doc {
    notify: Option<toml::Spanned<Vec<String>>>,
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn check(text: &str, path: &Path) -> Result<Doc, IntegrationError> {
    toml::from_str::<toml::Table>(text).map_err(|source| IntegrationError::NotToml {
        path: path.into(),
        source,
    })?;
    toml::from_str::<Doc>(text).map_err(|source| IntegrationError::NotifyNotStrings {
        path: path.into(),
        source,
    })
}

/// The lines of `text`, each with its line ending and where it starts.
pub(super) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, line))
    })
}

/// A line without its line ending (and a byte-order mark before it).
pub(super) fn bare(line: &str) -> &str {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    line.trim_end_matches('\n').trim_end_matches('\r')
}

/// Where herdr's block is: from its first byte to just after its end marker's line.
fn block(text: &str) -> Option<(usize, usize)> {
    let (at, line) = lines(text).find(|(_, l)| bare(l) == BEGIN)?;
    // A byte-order mark before the block is not part of it.
    let start = at + (line.len() - line.trim_start_matches(BOM).len());
    let (end_at, end_line) = lines(text).find(|(at, l)| *at > start && bare(l) == END)?;
    Some((start, end_at + end_line.len()))
}

/// The text with herdr's hook in it (unchanged if it is there already).
pub fn add_hook(text: &str, path: &Path) -> Result<String, IntegrationError> {
    let doc = check(text, path)?;
    if block(text).is_some() {
        return Ok(text.to_string());
    }
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let new = match doc.notify {
        None => {
            // Top-level keys must come before any table: the block goes first (after a
            // byte-order mark, which must stay first).
            let body = text.strip_prefix(BOM).unwrap_or(text);
            let bom = &text[..text.len() - body.len()];
            let line = notify_line(&[], eol);
            format!("{bom}{BEGIN}{eol}{line}{END}{eol}{body}")
        }
        Some(notify)
            if notify.get_ref().len() >= HOOK.len()
                && notify.get_ref().iter().zip(HOOK).all(|(a, b)| a == b) =>
        {
            return Err(IntegrationError::HookByHand(path.into()));
        }
        Some(notify) => {
            // The user's own notify: the whole lines it spans move into the block,
            // commented out, and herdr's hook runs it afterwards.
            let span = notify.span();
            let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let end = text[span.end..]
                .find('\n')
                .map_or(text.len(), |i| span.end + i + 1);
            let mut block = format!("{BEGIN}{eol}");
            for line in text[start..end].split_inclusive('\n') {
                match line.strip_suffix('\n') {
                    Some(l) => block.push_str(&format!("{KEPT}{l}\n")),
                    None => block.push_str(&format!("{KEPT_EOF}{line}{eol}")),
                }
            }
            block.push_str(&notify_line(notify.get_ref(), eol));
            block.push_str(&format!("{END}{eol}"));
            format!("{}{block}{}", &text[..start], &text[end..])
        }
    };
    toml::from_str::<toml::Table>(&new).map_err(|source| IntegrationError::WouldBreak {
        path: path.into(),
        source,
    })?;
    Ok(new)
}

fn notify_line(chain: &[String], eol: &str) -> String {
    let words: Vec<String> = HOOK
        .iter()
        .map(|w| w.to_string())
        .chain(chain.iter().cloned())
        .map(|w| toml_string(&w))
        .collect();
    format!("notify = [{}]{eol}", words.join(", "))
}

/// The text without herdr's block, the user's own `notify` back in its place.
pub fn remove_hook(text: &str) -> String {
    let Some((start, end)) = block(text) else {
        return text.to_string();
    };
    let mut restored = String::new();
    for line in text[start..end].split_inclusive('\n') {
        if let Some(l) = line.strip_prefix(KEPT) {
            restored.push_str(l);
        } else if let Some(l) = line.strip_prefix(KEPT_EOF) {
            restored.push_str(bare(l));
        }
    }
    format!("{}{restored}{}", &text[..start], &text[end..])
}

pub fn installed(text: &str) -> bool {
    block(text).is_some()
}

/// Installs herdr's `notify` and lifecycle hooks. Both files' new texts are made first
/// (the entries' places in `hooks.json` name their trust records), so a file herdr cannot
/// edit leaves both as they were; then `hooks.json` is written, and `config.toml` once
/// (the notify block at its top, the trust records for herdr's hooks at its end).
pub fn install(path: &Path) -> Result<String, IntegrationError> {
    let hooks = hooks_path(path);
    let old = read_text(path)?;
    let text = old.clone().unwrap_or_default();
    let old_hooks = read_text(&hooks)?;
    let hooks_text = old_hooks.clone().unwrap_or_else(|| "{}\n".to_string());
    let new_hooks = integration::add_set(&SET, &hooks_text, &hooks)?;
    let new = add_trust(&add_hook(&text, path)?, &new_hooks, &hooks, path)?;
    let hooks_changed = old_hooks.as_deref() != Some(new_hooks.as_str());
    if hooks_changed {
        replace(&hooks, old_hooks.as_deref(), &new_hooks)?;
    }
    if new == text && !hooks_changed {
        return Ok(format!(
            "herdr's hooks are already in {} and {}",
            path.display(),
            hooks.display()
        ));
    }
    if new != text {
        replace(path, old.as_deref(), &new)?;
    }
    Ok(format!(
        "installed herdr's hooks in {} and {}",
        path.display(),
        hooks.display()
    ))
}

/// Writes `new` over a file whose text was `old` (`None`: it did not exist), backing the
/// old text up first.
fn replace(path: &Path, old: Option<&str>, new: &str) -> Result<(), IntegrationError> {
    if let Some(old) = old {
        backup(path, old.as_bytes())?;
    }
    write_file(path, new.as_bytes())
}

pub fn uninstall(path: &Path) -> Result<String, IntegrationError> {
    let hooks = hooks_path(path);
    let text = read_text(path)?;
    if let Some(text) = &text {
        check(text, path)?;
    }
    if let Some(old) = read_text(&hooks)? {
        let new = integration::remove_set(&SET, &old, &hooks)?;
        if new != old {
            replace(&hooks, Some(&old), &new)?;
        }
    }
    let Some(text) = text else {
        return Ok(format!(
            "{} does not exist; nothing to remove",
            path.display()
        ));
    };
    let new = remove_hook(&remove_trust(&text));
    if new == text {
        return Ok(format!("no herdr hook in {}", path.display()));
    }
    replace(path, Some(&text), &new)?;
    Ok(format!(
        "removed herdr's hooks from {} and {}",
        path.display(),
        hooks.display()
    ))
}

pub fn status(path: &Path) -> Result<String, IntegrationError> {
    let hooks = hooks_path(path);
    let hooked = match read_text(&hooks)? {
        Some(t) => integration::missing_of(&SET, &integration::parse(&t, &hooks)?).is_empty(),
        None => false,
    };
    Ok(match read_text(path)? {
        Some(t) if installed(&t) && hooked && trust_installed(&t) => format!(
            "codex: installed ({}, {})",
            path.display(),
            hooks.display()
        ),
        Some(t) if installed(&t) => format!(
            "codex: partly installed, its notify without its lifecycle hooks ({}); `herdr integration install codex` adds them",
            path.display()
        ),
        Some(_) => format!("codex: not installed ({})", path.display()),
        None => format!("codex: not installed ({} does not exist)", path.display()),
    })
}

/// Day folders of `sessions/` looked through for a thread's file, newest first: a year.
const SESSION_DAYS: usize = 366;

/// What a Codex notification tells herdr, for a thread of the user's own: Codex also runs
/// hidden threads (one titles each new session) and notifies when they finish too — mid
/// turn, with another `thread-id`. Those are not saved (`saved_thread`): their reports
/// would be a false idle and a session `codex resume` cannot find, and are dropped.
pub fn own_hook_report(payload: &str) -> Option<super::HookReport> {
    let report = hook_report(payload)?;
    let home = config_path();
    let home = home.parent()?;
    match report.session.as_deref() {
        Some(thread) if saved_thread(home, thread) == Some(false) => None,
        _ => Some(report),
    }
}

/// Whether Codex saved `thread` (so that `codex resume` takes it): its file
/// `sessions/YYYY/MM/DD/rollout-…-<thread>.jsonl` under `codex_home`, looked for in the
/// newest `SESSION_DAYS` day folders. `None` without a sessions folder (a layout herdr
/// does not know: nothing can be told).
pub fn saved_thread(codex_home: &Path, thread: &str) -> Option<bool> {
    let sessions = codex_home.join("sessions");
    let newest_first = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    };
    if !sessions.is_dir() {
        return None;
    }
    let suffix = format!("-{thread}.jsonl");
    let days = newest_first(&sessions)
        .into_iter()
        .flat_map(|year| newest_first(&year))
        .flat_map(|month| newest_first(&month))
        .take(SESSION_DAYS);
    for day in days {
        let Ok(files) = std::fs::read_dir(&day) else {
            continue;
        };
        let found = files.flatten().any(|f| {
            let name = f.file_name();
            let name = name.to_string_lossy();
            name.starts_with("rollout-") && name.ends_with(&suffix)
        });
        if found {
            return Some(true);
        }
    }
    Some(false)
}

/// What a Codex notification tells herdr: a finished turn (the agent is idle now) and the
/// session it belongs to. Other notification types tell nothing.
pub fn hook_report(payload: &str) -> Option<super::HookReport> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    if v.get("type").and_then(|t| t.as_str()) != Some("agent-turn-complete") {
        return None;
    }
    let session = v
        .get("thread-id")
        .and_then(|t| t.as_str())
        .map(str::to_string);
    Some(super::HookReport {
        state: Some("idle"),
        session,
        error: None,
        route: route(&v),
    })
}

/// The turn's folder and the first line of its last prompt.
fn route(v: &serde_json::Value) -> Option<super::Route> {
    let cwd = v.get("cwd")?.as_str()?;
    let last = v.get("input-messages")?.as_array()?.last()?.as_str()?;
    prompt_route(cwd, last)
}

/// A turn's folder and the first line of its prompt, cut at a character boundary.
pub(super) fn prompt_route(cwd: &str, prompt: &str) -> Option<super::Route> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut end = line.len().min(super::Route::PROMPT_MAX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(super::Route {
        cwd: cwd.to_string(),
        prompt: line[..end].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = r#"# Codex settings
model = "o3"  # the default model
approval_policy = "on-request"
some_future_key = { nested = [1, 2] }

[profiles.fast]
model = "gpt-5-mini"

[mcp_servers.docs]
command = "docs-mcp"
"#;

    fn p() -> PathBuf {
        PathBuf::from("/home/u/.codex/config.toml")
    }

    #[test]
    fn the_hook_goes_in_and_out_byte_for_byte() {
        let once = add_hook(FIXTURE, &p()).unwrap();
        assert!(installed(&once));
        let parsed: toml::Table = toml::from_str(&once).unwrap();
        let notify: Vec<String> = parsed["notify"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(notify, HOOK);
        assert_eq!(parsed["model"].as_str(), Some("o3"));
        assert!(once.ends_with(FIXTURE), "the user's text is untouched");
        assert_eq!(add_hook(&once, &p()).unwrap(), once, "idempotent");
        assert_eq!(remove_hook(&once), FIXTURE);
    }

    #[test]
    fn a_notify_of_the_users_own_is_chained_and_restored() {
        let text = "model = \"o3\"\nnotify = [\n  \"python3\",\n  \"/home/u/notify.py\", # mine\n]\n\n[tui]\nx = 1\n";
        let once = add_hook(text, &p()).unwrap();
        let parsed: toml::Table = toml::from_str(&once).unwrap();
        let notify: Vec<&str> = parsed["notify"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            notify,
            [HOOK, &["python3", "/home/u/notify.py"]].concat(),
            "{once}"
        );
        assert_eq!(parsed["tui"]["x"].as_integer(), Some(1));
        assert_eq!(remove_hook(&once), text);
        // At the very end of a file without a final newline, too.
        let text = "model = \"o3\"\nnotify = [\"say\", \"done\"]";
        let once = add_hook(text, &p()).unwrap();
        assert!(toml::from_str::<toml::Table>(&once).is_ok(), "{once}");
        assert_eq!(remove_hook(&once), text);
    }

    #[test]
    fn crlf_files_and_a_byte_order_mark_are_handled() {
        let text = "\u{feff}model = \"o3\"\r\n\r\n[tui]\r\nx = 1\r\n";
        let once = add_hook(text, &p()).unwrap();
        assert!(once.starts_with("\u{feff}# >>> herdr"), "{once:?}");
        assert!(
            !once.replace("\r\n", "").contains('\n'),
            "CRLF kept: {once:?}"
        );
        assert_eq!(add_hook(&once, &p()).unwrap(), once);
        assert_eq!(remove_hook(&once), text);
        // Installed with LF, then an editor converted the file: still found and removed.
        let lf = add_hook("model = \"o3\"\n", &p()).unwrap();
        let crlf = lf.replace('\n', "\r\n");
        assert!(installed(&crlf));
        assert_eq!(
            add_hook(&crlf, &p()).unwrap(),
            crlf,
            "not chained to itself"
        );
        assert_eq!(remove_hook(&crlf), "model = \"o3\"\r\n");
        // herdr's hook written by hand is not chained to itself either.
        let by_hand = "notify = [\"herdr\", \"agent\", \"hook\", \"codex\", \"notify\"]\n";
        assert!(add_hook(by_hand, &p()).is_err());
    }

    #[test]
    fn files_herdr_cannot_read_are_left_alone() {
        let e = add_hook("model = [", &p()).unwrap_err();
        let e = crate::agent::error::chain(&e);
        assert!(e.contains("not valid TOML"), "{e}");
        let e = add_hook("notify = \"say\"\n", &p()).unwrap_err();
        let e = crate::agent::error::chain(&e);
        assert!(e.contains("notify"), "{e}");
    }

    #[test]
    fn every_change_is_backed_up_first_and_the_mode_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".codex/config.toml");
        let backup = || std::fs::read_to_string(path.with_extension("toml.herdr-backup"));
        assert!(status(&path).unwrap().contains("does not exist"));
        install(&path).unwrap();
        assert!(status(&path).unwrap().contains("codex: installed"));
        assert!(backup().is_err(), "nothing to back up");
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        std::fs::write(&path, FIXTURE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        install(&path).unwrap();
        let installed = std::fs::read_to_string(&path).unwrap();
        install(&path).unwrap();
        assert_eq!(backup().unwrap(), FIXTURE);
        uninstall(&path).unwrap();
        assert_eq!(backup().unwrap(), installed, "uninstall backs up too");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn the_lifecycle_hooks_go_in_beside_the_users_own_and_come_out_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let hooks = hooks_path(&path);
        let own = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"say done\"\n          }\n        ]\n      }\n    ]\n  },\n  \"x\": 1\n}\n";
        std::fs::write(&hooks, own).unwrap();
        std::fs::write(&path, FIXTURE).unwrap();
        install(&path).unwrap();
        assert!(status(&path).unwrap().starts_with("codex: installed"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&hooks).unwrap()).unwrap();
        assert_eq!(json["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(
            json["hooks"]["Stop"][1]["hooks"][0]["command"],
            "herdr agent hook codex Stop"
        );
        assert_eq!(json["hooks"].as_object().unwrap().len(), 6);
        let config = std::fs::read_to_string(&path).unwrap();
        let doc: toml::Table = toml::from_str(&config).unwrap();
        let key = format!("{}:stop:1:0", hooks.display());
        assert!(
            doc["hooks"]["state"][&key]["trusted_hash"].is_str(),
            "{config}"
        );
        assert!(install(&path).unwrap().contains("already"));
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&hooks).unwrap(), own);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
        assert!(status(&path).unwrap().contains("not installed"));
        // An install by an earlier herdr (notify only) reads as partly installed.
        std::fs::write(&path, add_hook(FIXTURE, &path).unwrap()).unwrap();
        assert!(status(&path).unwrap().contains("partly installed"));
        // A file herdr cannot read leaves both as they were.
        std::fs::write(&path, "model = [").unwrap();
        assert!(install(&path).is_err());
        assert_eq!(std::fs::read_to_string(&hooks).unwrap(), own);
        std::fs::write(&path, FIXTURE).unwrap();
        std::fs::write(&hooks, "{ not json").unwrap();
        assert!(install(&path).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
    }

    #[test]
    fn turn_completions_report_idle_with_the_thread() {
        let r = hook_report(
            r#"{"type":"agent-turn-complete","thread-id":"0199-abc","turn-id":"1","cwd":"/w"}"#,
        )
        .unwrap();
        assert_eq!(
            (r.state, r.session.as_deref()),
            (Some("idle"), Some("0199-abc"))
        );
        assert_eq!(hook_report(r#"{"type":"something-else"}"#), None);
        assert_eq!(hook_report("not json"), None);
        assert_eq!(r.route, None, "no prompt: nothing to route by");
    }

    #[test]
    fn a_turn_tells_its_folder_and_the_first_line_of_its_last_prompt() {
        let long = format!("\n  {}é and more\nsecond line", "x".repeat(199));
        let payload = serde_json::json!({"type": "agent-turn-complete", "thread-id": "t",
            "cwd": "/w", "input-messages": ["first prompt", long]});
        let r = hook_report(&payload.to_string()).unwrap();
        let route = r.route.expect("a route");
        assert_eq!(route.cwd, "/w");
        assert_eq!(route.prompt, "x".repeat(199), "cut at a character boundary");
    }

    #[test]
    fn only_threads_codex_saved_are_its_users_own() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(saved_thread(dir.path(), "t1"), None, "no sessions folder");
        let day = dir.path().join("sessions/2026/12/01");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::create_dir_all(dir.path().join("sessions/2025/01/31")).unwrap();
        std::fs::write(
            day.join("rollout-2026-12-01T23-08-33-01a233dd-f3aa.jsonl"),
            "",
        )
        .unwrap();
        assert_eq!(saved_thread(dir.path(), "01a233dd-f3aa"), Some(true));
        assert_eq!(
            saved_thread(dir.path(), "01a233de-0fdd"),
            Some(false),
            "the hidden title thread has no file"
        );
    }
}
