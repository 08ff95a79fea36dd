//! The wire between clients and the server.
//!
//! Every connection starts with a hello: one JSON line from the connecting side naming the
//! protocol version and its role, answered by one JSON line (accepted, or an error that
//! says what to do). After that the role decides the framing:
//! * `client` (interactive): length-prefixed binary frames, see [`frame`];
//! * `api`: one JSON object per line (requests with ids, replies, events); the requests
//!   are typed in [`api`].
//!
//! A peer of another protocol version gets one clear sentence, never a hang or garbage.

pub mod api;
pub mod base64;
pub mod exit;
pub mod frame;
pub mod machine;
pub mod terminal;

use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change to hello, frames or API messages.
pub const PROTOCOL_VERSION: u32 = 1;
/// Where release tooling writes the version of a built binary (`scripts/release.sh`): the
/// marker, then 64 bytes of NUL-padded version text. Unstamped, the crate version is used.
static VERSION_STAMP: [u8; 76] = *b"HERDR-STAMP:\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";

/// This binary's version, reported in hellos, status and `--version`: `<version>` on the
/// stable channel, `<version>-preview.<build>` on preview.
pub fn version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        // Read through an opaque reference: the bytes are changed after compilation.
        let stamp = std::hint::black_box(&VERSION_STAMP);
        let payload = &stamp[12..];
        let len = payload
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(payload.len());
        match std::str::from_utf8(&payload[..len]) {
            Ok(v) if !v.is_empty() => v.to_string(),
            _ => env!("CARGO_PKG_VERSION").to_string(),
        }
    })
}
/// A hello line longer than this is not a herdr peer.
pub const MAX_HELLO_LEN: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An interactive client that draws the UI in a terminal.
    Client,
    /// A script, agent or the CLI speaking JSON lines.
    Api,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Always "herdr": lets the server tell a stray connection from an old client.
    pub herdr: String,
    pub protocol: u32,
    pub version: String,
    pub role: Role,
    /// Interactive clients: the terminal size at attach time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<(u16, u16)>,
    /// Interactive clients that bring their own key bindings (`--remote-keybindings
    /// local`): the server uses these for this client instead of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<ClientKeys>,
    /// Interactive clients: the attaching side's values of [`ATTACH_ENV`] (a variable
    /// missing here is unset there). New panes get them; `None` changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Interactive clients on this machine: offers to hand over the terminal itself, so
    /// the server reads keys from it and draws on it without passing through the client
    /// (see [`FEATURE_TTY`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tty: bool,
    /// Interactive clients on this machine: the folder they run in, where the session's
    /// first pane starts if it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<std::path::PathBuf>,
    /// Interactive clients: the user's terminal (its key reporting and colours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<terminal::TerminalInfo>,
    /// Interactive clients that can be moved to another session
    /// ([`ServerMsg::Switch`](frame::ServerMsg)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub switch: bool,
    /// Interactive clients that take numbered frames ([`ServerMsg::Frame`](frame::ServerMsg)),
    /// so that they can come back after a drop and be sent only what changed since.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub frames: bool,
    /// A client coming back after its link dropped: the token its last server gave it and
    /// the last frame it drew (see [`FEATURE_RESUME`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Resume>,
}

/// Where a client's screen stands: the token of the attachment it drew for, and the
/// number of the last frame it drew whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    pub token: String,
    pub frame: u64,
}

/// The server answers pings ([`ClientMsg::Ping`](frame::ClientMsg)).
pub const FEATURE_PING: &str = "ping";
/// The server takes the terminal a client offered: right after the reply, the client
/// sends its descriptor (SCM_RIGHTS, one batch of one); from then on keys are read from
/// it and frames written to it by the server, and the connection carries only the rest
/// (sizes, detach, pings, the exit).
pub const FEATURE_TTY: &str = "tty";

/// The server numbers the frames it sends a client that takes them ([`Hello::frames`]),
/// and names the attachment with a token in its reply ([`HelloReply::token`]); a client
/// that comes back with both ([`Hello::resume`]) is sent only the rows that changed since
/// the frame it has, not a full repaint.
pub const FEATURE_RESUME: &str = "resume";

/// The server reads extended key reports (kitty keyboard protocol, modifyOtherKeys) from
/// the client's terminal and encodes keys for each pane as it asked: the client may turn
/// them on. (An older server would pass them to panes as they came.)
pub const FEATURE_KEYS: &str = "keys";

/// The environment that belongs to where a client attaches from, and goes stale when the
/// next one attaches from elsewhere: the X and Wayland displays. (SSH_AUTH_SOCK is kept
/// working in every pane through a per-session link instead; TERM is herdr's own.)
pub const ATTACH_ENV: &[&str] = &["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"];

/// This process's values of [`ATTACH_ENV`].
pub fn attach_env() -> std::collections::BTreeMap<String, String> {
    ATTACH_ENV
        .iter()
        .filter_map(|k| {
            let v = std::env::var(k).ok().filter(|v| !v.is_empty())?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// A client's own prefix and `[keys]` entries (key, action), as in its config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientKeys {
    pub prefix: String,
    pub keys: Vec<(String, String)>,
}

impl Hello {
    pub fn new(role: Role, size: Option<(u16, u16)>) -> Hello {
        Hello {
            herdr: "herdr".into(),
            protocol: PROTOCOL_VERSION,
            version: version().into(),
            role,
            size,
            keys: None,
            env: (role == Role::Client).then(attach_env),
            tty: false,
            cwd: (role == Role::Client)
                .then(|| std::env::current_dir().ok())
                .flatten(),
            terminal: None,
            switch: role == Role::Client,
            frames: role == Role::Client,
            resume: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloReply {
    pub ok: bool,
    pub protocol: u32,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the server offers beyond the protocol's base: `"ping"` (it answers pings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// For a client that takes numbered frames: the token that names this attachment, to
    /// come back with ([`Resume`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl HelloReply {
    pub fn accept() -> HelloReply {
        HelloReply {
            ok: true,
            protocol: PROTOCOL_VERSION,
            version: version().into(),
            error: None,
            features: vec![
                FEATURE_PING.into(),
                FEATURE_KEYS.into(),
                FEATURE_RESUME.into(),
            ],
            token: None,
        }
    }

    pub fn reject(error: String) -> HelloReply {
        HelloReply {
            ok: false,
            protocol: PROTOCOL_VERSION,
            version: version().into(),
            error: Some(error),
            features: Vec::new(),
            token: None,
        }
    }
}

/// Why a hello was refused; the message is sent to the peer as is, so it says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HelloError {
    #[error("this socket speaks the herdr protocol; expected a JSON hello line (see docs/api.md)")]
    NotJson,
    #[error("not a herdr hello: the first line must be a JSON object with \"herdr\":\"herdr\"")]
    NotHerdr,
    #[error(
        "protocol mismatch: this server (herdr {ours}) speaks protocol {PROTOCOL_VERSION}, \
         the client (herdr {theirs}) speaks {}; use the same herdr version for both, \
         or restart the server with `herdr server stop` (running programs will end)",
        .protocol.map(|p| p.to_string()).unwrap_or_else(|| "none".into())
    )]
    Mismatch {
        ours: &'static str,
        theirs: String,
        protocol: Option<u64>,
    },
    #[error("malformed hello: {0}")]
    Malformed(serde_json::Error),
}

/// Checks a hello line as the server sees it.
pub fn check_hello(line: &str) -> Result<Hello, HelloError> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|_| HelloError::NotJson)?;
    let protocol = value.get("protocol").and_then(|p| p.as_u64());
    if value.get("herdr").and_then(|h| h.as_str()) != Some("herdr") {
        return Err(HelloError::NotHerdr);
    }
    if protocol != Some(u64::from(PROTOCOL_VERSION)) {
        let theirs = value
            .get("version")
            .and_then(|v| v.as_str())
            .unwrap_or("unknown");
        return Err(HelloError::Mismatch {
            ours: version(),
            theirs: theirs.into(),
            protocol,
        });
    }
    serde_json::from_value(value).map_err(HelloError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip() {
        let h = Hello::new(Role::Client, Some((80, 24)));
        let line = serde_json::to_string(&h).unwrap();
        assert_eq!(check_hello(&line).unwrap(), h);
    }

    #[test]
    fn hello_golden_bytes() {
        let h = Hello::new(Role::Api, None);
        let line = serde_json::to_string(&h).unwrap();
        assert_eq!(
            line,
            format!(
                r#"{{"herdr":"herdr","protocol":1,"version":"{}","role":"api"}}"#,
                version()
            )
        );
    }

    #[test]
    fn other_protocol_gets_actionable_error() {
        let err =
            check_hello(r#"{"herdr":"herdr","protocol":99,"version":"9.0.0","role":"client"}"#)
                .unwrap_err()
                .to_string();
        assert!(err.contains("protocol mismatch"), "{err}");
        assert!(err.contains("9.0.0"), "{err}");
        assert!(check_hello("GET / HTTP/1.1").is_err());
    }
}
