//! The wire between a server and one of its machine links (`herdr machine link NAME`, a
//! child process per saved machine that owns the SSH connection to that host's server).
//! JSON lines over the link's stdin and stdout; the link says [`LinkMsg::Hello`] first,
//! with [`LINK_PROTOCOL`], and a server that does not speak it ends the link. Versioned
//! like the client protocol: a change that an older peer would misread is a new number.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const LINK_PROTOCOL: u32 = 1;

/// What a link tells its server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LinkMsg {
    Hello {
        protocol: u32,
    },
    /// The link's state changed (or, while connected, its round trip was measured again).
    State {
        state: LinkState,
        /// Why it is not connected (the last attempt's error).
        #[serde(default)]
        error: Option<String>,
        /// The smoothed round trip of the host's answers to pings.
        #[serde(default)]
        rtt_ms: Option<f64>,
        /// The host's herdr version, once connected.
        #[serde(default)]
        version: Option<String>,
    },
    /// What the host's session holds now (its `workspace.list`, `agent.list` and
    /// `tab.list`): sent
    /// once connected and after each change of them it announced (never for output).
    View {
        workspaces: Value,
        agents: Value,
        /// Its `tab.list` (null from a link that did not ask).
        #[serde(default)]
        tabs: Value,
    },
    /// The answer to a [`ToLink::Call`].
    Reply {
        call: u64,
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        error: Option<RemoteError>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Making (or remaking) the connection.
    Connecting,
    Connected,
    /// The last attempt failed; attempts go on.
    Unreachable,
}

impl LinkState {
    pub fn word(self) -> &'static str {
        match self {
            LinkState::Connecting => "connecting",
            LinkState::Connected => "connected",
            LinkState::Unreachable => "unreachable",
        }
    }
}

/// An error the host's server answered with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
}

/// What a server asks of its link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToLink {
    /// An API request for the host's server (its method and params as the API takes
    /// them); answered with a [`LinkMsg::Reply`] of the same `call`.
    Call { call: u64, request: Value },
    /// Give up the current connection (or the wait for the next attempt) and connect
    /// again now.
    Reconnect,
}

/// The longest line either side sends or takes (a `pane.read` of a full history fits).
pub const MAX_LINE: usize = 64 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_as_written() {
        let msgs = [
            LinkMsg::Hello { protocol: 1 },
            LinkMsg::State {
                state: LinkState::Unreachable,
                error: Some("no route".into()),
                rtt_ms: None,
                version: None,
            },
            LinkMsg::Reply {
                call: 3,
                result: None,
                error: Some(RemoteError {
                    code: "not_found".into(),
                    message: "no such pane".into(),
                }),
            },
        ];
        for m in msgs {
            let line = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<LinkMsg>(&line).unwrap(), m);
        }
        let call: ToLink =
            serde_json::from_str(r#"{"kind":"call","call":1,"request":{"method":"ping"}}"#)
                .unwrap();
        assert!(matches!(call, ToLink::Call { call: 1, .. }));
    }
}
