//! Resolving the public ids scripts type (`w1`, `t2`, `p3`, or bare numbers) to places in
//! the state, and reading typed parameters with clear errors.

use serde_json::Value;

use super::ApiError;
use crate::model::ids::PaneId;
use crate::model::state::PanePos;
use crate::server::Server;

/// Parses "p3", "P3" or "3" (also a JSON number) for the given prefix letter.
pub fn parse_public(v: &Value, prefix: char) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => {
            let s = s.trim();
            let digits = s
                .strip_prefix(prefix)
                .or_else(|| s.strip_prefix(prefix.to_ascii_uppercase()))
                .unwrap_or(s);
            digits.parse().ok()
        }
        _ => None,
    }
}

pub fn opt_str<'a>(p: &'a Value, key: &str) -> Result<Option<&'a str>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ApiError::params(format!(
            "\"{key}\" must be a string, got {other}"
        ))),
    }
}

pub fn req_str<'a>(p: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    opt_str(p, key)?.ok_or_else(|| ApiError::params(format!("missing \"{key}\" (a string)")))
}

pub fn opt_u64(p: &Value, key: &str) -> Result<Option<u64>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ApiError::params(format!("\"{key}\" must be a non-negative integer, got {v}"))
        }),
    }
}

pub fn opt_bool(p: &Value, key: &str) -> Result<Option<bool>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(ApiError::params(format!(
            "\"{key}\" must be true or false, got {v}"
        ))),
    }
}

/// A list of strings (a command's argv, named keys).
pub fn opt_str_list(p: &Value, key: &str) -> Result<Option<Vec<String>>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::params(format!("\"{key}\" must be a list of strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ApiError::params(format!(
            "\"{key}\" must be a list of strings"
        ))),
    }
}

fn not_found(kind: &str, v: &Value) -> ApiError {
    ApiError::new("not_found", format!("no {kind} {v} in this session"))
}

impl Server {
    /// The pane named by `params.pane`, else the focused pane.
    pub(crate) fn target_pane(&self, p: &Value) -> Result<PaneId, ApiError> {
        match p.get("pane") {
            None | Some(Value::Null) => self
                .session
                .state
                .focused_pane()
                .ok_or_else(|| ApiError::new("not_found", "the session has no pane")),
            Some(v) => {
                let no = parse_public(v, 'p').ok_or_else(|| {
                    ApiError::params(format!("\"pane\" must look like p3, got {v}"))
                })?;
                self.session
                    .state
                    .panes
                    .iter()
                    .find(|(_, ps)| ps.no.0 == no)
                    .map(|(id, _)| *id)
                    .ok_or_else(|| not_found("pane", v))
            }
        }
    }

    /// The workspace named by `params.workspace` (index into the list), else the active one.
    pub(crate) fn target_workspace(&self, p: &Value) -> Result<usize, ApiError> {
        match p.get("workspace") {
            None | Some(Value::Null) => {
                if self.session.state.workspaces.is_empty() {
                    Err(ApiError::new("not_found", "the session has no workspace"))
                } else {
                    Ok(self.session.state.active)
                }
            }
            Some(v) => {
                let no = parse_public(v, 'w').ok_or_else(|| {
                    ApiError::params(format!("\"workspace\" must look like w1, got {v}"))
                })?;
                self.session
                    .state
                    .workspaces
                    .iter()
                    .position(|w| w.no.0 == no)
                    .ok_or_else(|| not_found("workspace", v))
            }
        }
    }

    /// The tab named by `params.tab`, else the active tab of the target workspace.
    pub(crate) fn target_tab(&self, p: &Value) -> Result<PanePos, ApiError> {
        match p.get("tab") {
            None | Some(Value::Null) => {
                let w = self.target_workspace(p)?;
                Ok(PanePos {
                    workspace: w,
                    tab: self.session.state.workspaces[w].active,
                })
            }
            Some(v) => {
                let no = parse_public(v, 't').ok_or_else(|| {
                    ApiError::params(format!("\"tab\" must look like t2, got {v}"))
                })?;
                for (wi, ws) in self.session.state.workspaces.iter().enumerate() {
                    if let Some(ti) = ws.tabs.iter().position(|t| t.no.0 == no) {
                        return Ok(PanePos {
                            workspace: wi,
                            tab: ti,
                        });
                    }
                }
                Err(not_found("tab", v))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn public_ids_accept_prefixed_and_bare_forms() {
        assert_eq!(parse_public(&json!("p3"), 'p'), Some(3));
        assert_eq!(parse_public(&json!("P3"), 'p'), Some(3));
        assert_eq!(parse_public(&json!("3"), 'p'), Some(3));
        assert_eq!(parse_public(&json!(3), 'p'), Some(3));
        assert_eq!(parse_public(&json!("t3"), 'p'), None);
        assert_eq!(parse_public(&json!(-1), 'p'), None);
        assert_eq!(parse_public(&json!([1]), 'p'), None);
    }

    #[test]
    fn typed_params_say_what_is_wrong() {
        let p = json!({"n": "x", "b": 1, "l": [1]});
        assert!(opt_u64(&p, "n")
            .unwrap_err()
            .message
            .contains("non-negative integer"));
        assert!(opt_bool(&p, "b")
            .unwrap_err()
            .message
            .contains("true or false"));
        assert!(opt_str_list(&p, "l")
            .unwrap_err()
            .message
            .contains("list of strings"));
        assert!(req_str(&p, "missing")
            .unwrap_err()
            .message
            .contains("missing"));
        assert_eq!(opt_u64(&p, "absent").unwrap(), None);
    }
}
