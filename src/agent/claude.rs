//! What Claude Code's hooks tell herdr: each hook event herdr installs (see
//! `integration`), and the state it means given the JSON Claude Code passes on stdin.
//!
//! Invariant: only what waits for the user is `blocked` — a permission dialog or a
//! question — never a notification that merely informs (a login that worked, a reminder
//! that it is idle, a push).

use serde_json::Value;

use super::HookReport;

/// The events herdr hooks, in the order their entries are added to the settings (the
/// first four are the ones earlier herdr versions installed).
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "StopFailure",
    "SessionEnd",
];

/// An error kept for `pane get` is at most this long (a line, not a transcript).
pub const MAX_ERROR: usize = 300;

/// A hook run for an event herdr does not install a hook for.
#[derive(Debug, thiserror::Error)]
#[error("unknown Claude Code hook event {0:?}")]
pub struct UnknownEvent(pub String);

/// The state and session a hook run reports.
pub fn hook_report(event: &str, input: &str) -> Result<HookReport, UnknownEvent> {
    if !EVENTS.contains(&event) {
        return Err(UnknownEvent(event.into()));
    }
    let v: Value = serde_json::from_str(input).unwrap_or(Value::Null);
    let text = |key: &str| v.get(key).and_then(Value::as_str);
    let state = match event {
        // The turn began, or goes on: a tool about to run, or done (an approved one too).
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => Some("working"),
        // Fired as the permission dialog shows (the Notification about it comes seconds
        // later, and only if nobody answered).
        "PermissionRequest" => Some("blocked"),
        "Notification" => notification_state(text("notification_type"), text("message")),
        // StopFailure comes instead of Stop when an API error ended the turn.
        "SessionStart" | "Stop" | "StopFailure" | "SessionEnd" => Some("idle"),
        _ => None,
    };
    let error = (event == "StopFailure").then(|| {
        let what = [text("error"), text("last_assistant_message")]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        one_line(if what.is_empty() {
            "the turn failed"
        } else {
            &what
        })
    });
    Ok(HookReport {
        state,
        session: text("session_id").map(str::to_string),
        error,
        route: None,
    })
}

/// A Notification by its `notification_type`: the dialogs that wait for the user are
/// blocked; the reminder that Claude waits for a prompt is idle; an answered question
/// lets the turn go on; every other type (a login, a push) changes nothing.
fn notification_state(kind: Option<&str>, message: Option<&str>) -> Option<&'static str> {
    match kind {
        Some("permission_prompt" | "elicitation_dialog" | "elicitation_url_dialog") => {
            Some("blocked")
        }
        Some("idle_prompt") => Some("idle"),
        Some("elicitation_response" | "elicitation_complete") => Some("working"),
        Some(_) => None,
        // Versions without the type: the message tells the reminder from a question.
        None if message.is_some_and(|m| m.contains("waiting for your input")) => Some("idle"),
        None => Some("blocked"),
    }
}

/// `text` on one line (controls become spaces), at most `MAX_ERROR` bytes.
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    for c in text.trim().chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > MAX_ERROR {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(event: &str, input: &str) -> Option<&'static str> {
        hook_report(event, input).unwrap().state
    }

    #[test]
    fn events_map_to_states_and_the_session() {
        let r = hook_report(
            "UserPromptSubmit",
            r#"{"session_id":"abc","hook_event_name":"UserPromptSubmit"}"#,
        )
        .unwrap();
        assert_eq!(
            (r.state, r.session.as_deref()),
            (Some("working"), Some("abc"))
        );
        for (event, want) in [
            ("SessionStart", "idle"),
            ("PreToolUse", "working"),
            ("PermissionRequest", "blocked"),
            ("PostToolUse", "working"),
            ("PostToolUseFailure", "working"),
            ("Stop", "idle"),
            ("StopFailure", "idle"),
            ("SessionEnd", "idle"),
        ] {
            assert_eq!(state(event, "{}"), Some(want), "{event}");
        }
        assert!(hook_report("Nope", "{}").is_err());
        // Whatever Claude Code sends, the hook never fails: no JSON is no session.
        assert_eq!(hook_report("Stop", "not json").unwrap().session, None);
    }

    #[test]
    fn only_notifications_that_wait_for_the_user_are_blocked() {
        let n = |kind: &str| {
            state(
                "Notification",
                &format!(r#"{{"notification_type":"{kind}","message":"x"}}"#),
            )
        };
        assert_eq!(n("permission_prompt"), Some("blocked"));
        assert_eq!(n("elicitation_dialog"), Some("blocked"));
        assert_eq!(n("idle_prompt"), Some("idle"));
        assert_eq!(n("elicitation_response"), Some("working"));
        for other in ["auth_success", "push_notification", "something_new"] {
            assert_eq!(n(other), None, "{other}");
        }
        // Without a type (older versions), the message decides.
        assert_eq!(
            state(
                "Notification",
                r#"{"message":"Claude needs your permission to use Bash"}"#
            ),
            Some("blocked")
        );
        assert_eq!(
            state(
                "Notification",
                r#"{"message":"Claude is waiting for your input"}"#
            ),
            Some("idle")
        );
    }

    #[test]
    fn a_failed_turn_keeps_its_error_on_one_bounded_line() {
        let r = hook_report(
            "StopFailure",
            r#"{"session_id":"s","error":"authentication_failed","last_assistant_message":"Invalid API key · Fix external API key"}"#,
        )
        .unwrap();
        assert_eq!(r.state, Some("idle"));
        assert_eq!(
            r.error.as_deref(),
            Some("authentication_failed: Invalid API key · Fix external API key")
        );
        assert_eq!(
            hook_report("StopFailure", "{}").unwrap().error.as_deref(),
            Some("the turn failed")
        );
        let long = format!(r#"{{"error":"x\u001b[2J\n{}"}}"#, "é".repeat(1000));
        let e = hook_report("StopFailure", &long).unwrap().error.unwrap();
        assert!(e.len() <= MAX_ERROR + '…'.len_utf8(), "{}", e.len());
        assert!(!e.chars().any(char::is_control), "{e:?}");
        assert_eq!(hook_report("Stop", "{}").unwrap().error, None);
    }
}
