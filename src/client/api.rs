//! A minimal synchronous API client for the CLI: one connection, requests one at a time,
//! each a typed [`Request`] (the values the server decodes), each answered before the next.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use serde_json::Value;

use crate::paths::SessionName;
use crate::protocol::api::{self, Request};
use crate::protocol::Role;

pub struct ApiClient {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
    /// The saved machine whose server answers (`herdr --machine NAME …`): each request
    /// goes to the local server as a `machine.call`, through that machine's link.
    via: Option<String>,
}

/// The machine `--machine` named, for every API client of this process.
static VIA_MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// From now on this process's requests are for the saved machine `name` (`--machine`).
pub fn use_machine(name: String) {
    let _ = VIA_MACHINE.set(name);
}

/// The machine `--machine` named, if it did.
pub fn machine() -> Option<&'static str> {
    VIA_MACHINE.get().map(String::as_str)
}

/// Why a request got no result. The server's own refusal stays apart ([`RemoteError`]),
/// so callers can act on its code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Connect(#[from] super::Error),
    #[error("cannot encode the request")]
    Encode(#[source] serde_json::Error),
    #[error("the server connection closed")]
    Send(#[source] std::io::Error),
    /// Reading the reply (or cloning the socket) failed; the system's words say it.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error("the server closed the connection before answering {0}")]
    Unanswered(&'static str),
    #[error("the server sent a malformed reply")]
    Malformed(#[source] serde_json::Error),
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// A reply with an error object, kept typed so callers can show code and message.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RemoteError {
    pub code: String,
    pub message: String,
}

/// How much of an answer one read may take.
const READ_ROOM: usize = 64 << 10;

impl ApiClient {
    /// Connects to a running server; `Ok(None)` if none runs.
    pub fn connect(session: &SessionName) -> Result<Option<ApiClient>, Error> {
        let Some(stream) = crate::client::connect::connect(session, Role::Api, None)? else {
            return Ok(None);
        };
        Ok(Some(ApiClient::from_stream(stream)?))
    }

    pub fn from_stream(stream: UnixStream) -> Result<ApiClient, Error> {
        Ok(ApiClient {
            // (Large answers in few reads: a listing of 1,000 panes is 270 KB, 34 reads
            // and as many wake-ups of the server's writer at the default 8 KiB.)
            reader: BufReader::with_capacity(READ_ROOM, stream.try_clone()?),
            writer: stream,
            next_id: 0,
            via: VIA_MACHINE.get().cloned(),
        })
    }

    /// How long a reply may take before the request fails (`None`: for ever).
    pub fn set_timeout(&mut self, timeout: Option<std::time::Duration>) -> std::io::Result<()> {
        self.reader.get_ref().set_read_timeout(timeout)
    }

    pub fn into_reader(self) -> BufReader<UnixStream> {
        self.reader
    }

    /// Sends `request` and returns the answer's line.
    fn exchange(&mut self, request: &Request) -> Result<String, Error> {
        self.next_id += 1;
        let wrapped;
        let request = match &self.via {
            Some(machine) => {
                let mut inner = serde_json::to_value(request).map_err(Error::Encode)?;
                if let Some(Value::Object(params)) = inner.get_mut("params") {
                    params.retain(|_, v| !v.is_null());
                }
                wrapped = Request::MachineCall(api::MachineCall {
                    machine: machine.clone(),
                    request: inner,
                });
                &wrapped
            }
            None => request,
        };
        let mut line = api::encode(self.next_id, request).map_err(Error::Encode)?;
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .map_err(Error::Send)?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer)? == 0 {
            return Err(Error::Unanswered(request.method()));
        }
        Ok(answer)
    }

    /// Sends `request` and returns its result as the server wrote it (JSON text, not
    /// made into values: a listing of 1,000 panes is 250 KB of it).
    pub fn request_raw(&mut self, request: &Request) -> Result<String, Error> {
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            #[serde(borrow, default)]
            result: Option<&'a serde_json::value::RawValue>,
            #[serde(default)]
            error: Option<Value>,
        }
        let answer = self.exchange(request)?;
        let a: Answer = serde_json::from_str(&answer).map_err(Error::Malformed)?;
        if let Some(err) = &a.error {
            return Err(remote_error(err).into());
        }
        Ok(a.result.map_or("null", |r| r.get()).to_string())
    }

    /// Sends one request and waits for its reply: the result, or the server's error as a
    /// [`RemoteError`].
    pub fn request(&mut self, request: &Request) -> Result<Value, Error> {
        let answer = self.exchange(request)?;
        let v: Value = serde_json::from_str(&answer).map_err(Error::Malformed)?;
        if let Some(err) = v.get("error") {
            return Err(remote_error(err).into());
        }
        // (Taken out, not copied: a listing of 1,000 panes is 400 KB of values.)
        Ok(match v {
            Value::Object(mut answer) => answer.remove("result").unwrap_or(Value::Null),
            _ => Value::Null,
        })
    }
}

/// The error an answer carries.
fn remote_error(err: &Value) -> RemoteError {
    let field = |k: &str, default: &str| {
        err.get(k)
            .and_then(|c| c.as_str())
            .unwrap_or(default)
            .into()
    };
    RemoteError {
        code: field("code", "error"),
        message: field("message", "unknown error"),
    }
}
