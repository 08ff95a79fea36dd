//! The JSON API served to connections whose hello says `"role":"api"`: one request object
//! per line (`{"id":…, "method":…, "params":{…}}`), one reply per line with the same id and
//! either `result` or `error: {code, message}`. A malformed request gets an error reply;
//! it never affects another connection.

use serde_json::{json, Value};

use super::{ClientId, Server};
use crate::protocol::{PROTOCOL_VERSION, VERSION};

/// An API error: a stable machine-readable code and a sentence for people.
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

impl Server {
    pub(super) fn api(&mut self, _conn: ClientId, line: &str) -> String {
        let request: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return reply(
                    Value::Null,
                    Err(ApiError::new(
                        "parse_error",
                        format!("request is not JSON: {e}"),
                    )),
                )
            }
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let Some(method) = request.get("method").and_then(|m| m.as_str()) else {
            return reply(
                id,
                Err(ApiError::new("invalid_request", "missing \"method\"")),
            );
        };
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        let result = self.dispatch(method, &params);
        reply(id, result)
    }

    fn dispatch(&mut self, method: &str, _params: &Value) -> Result<Value, ApiError> {
        match method {
            "ping" => Ok(json!({ "pong": true, "protocol": PROTOCOL_VERSION, "version": VERSION })),
            "server.status" => Ok(self.status()),
            "server.stop" => {
                self.stop("server stopped");
                Ok(json!({ "stopping": true }))
            }
            other => Err(ApiError::new(
                "unknown_method",
                format!("unknown method {other:?}; see docs/api.md for the list"),
            )),
        }
    }

    pub(super) fn status(&self) -> Value {
        json!({
            "version": VERSION,
            "protocol": PROTOCOL_VERSION,
            "pid": std::process::id(),
            "uptime_secs": self.started.elapsed().as_secs(),
            "session": self.session.as_str(),
            "socket": self.socket.display().to_string(),
            "workspaces": self.state.workspaces.len(),
            "panes": self.state.pane_count(),
            "clients": self.clients.len(),
            "size": { "cols": self.size.0, "rows": self.size.1 },
        })
    }
}

fn reply(id: Value, result: Result<Value, ApiError>) -> String {
    let v = match result {
        Ok(r) => json!({ "id": id, "result": r }),
        Err(e) => json!({ "id": id, "error": { "code": e.code, "message": e.message } }),
    };
    v.to_string()
}
