//! `herdr remote-bridge`: runs on the remote host, at the far end of an SSH channel, and
//! copies bytes between its stdin/stdout and the session's server socket — starting the
//! server first if none runs. It never looks inside the stream: the client's hello and
//! frames pass through as they are.

use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::Error;
use crate::client;
use crate::paths::{self, SessionName};

/// How long a server started by the bridge may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// What `--ready` says once the bridge is connected to the server.
pub const READY: &str = "herdr-bridge-ready";

pub fn run(session: &SessionName, ready: bool) -> Result<i32, Error> {
    let stream = connect_raw(session)?;
    if ready {
        let mut out = std::io::stdout().lock();
        out.write_all(format!("{READY}\n").as_bytes())?;
        out.flush()?;
    }
    let mut to_server = stream.try_clone()?;
    let mut from_server = stream;
    let agent_session = session.clone();
    let upstream = std::thread::spawn(move || {
        let mut stdin = std::io::BufReader::new(std::io::stdin().lock());
        // The client's hello says where it attaches from; here, that is this host.
        if let Some((line, client)) = local_hello(&mut stdin) {
            // This SSH connection's forwarded agent serves the session's panes from now
            // on, when a client attaches through it (a bridge that lost a race, and gets
            // no hello, or an API connection such as a machine's link, leaves it alone).
            if client {
                paths::repoint_agent_link(&agent_session);
            }
            if to_server.write_all(&line).is_err() {
                return;
            }
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        // The SSH side closed: tell the server this client is gone.
        let _ = to_server.shutdown(std::net::Shutdown::Both);
    });
    let mut stdout = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from_server.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|_| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(upstream);
    Ok(0)
}

/// The client's hello line, with the attach environment (DISPLAY…) of this host instead of
/// the client's: panes run here; and whether it is an interactive client's. A line that
/// is not a hello passes as it is (the server judges it).
fn local_hello(stdin: &mut impl std::io::BufRead) -> Option<(Vec<u8>, bool)> {
    let mut line = Vec::new();
    stdin
        .take(crate::protocol::MAX_HELLO_LEN as u64)
        .read_until(b'\n', &mut line)
        .ok()?;
    let Ok(mut hello) = serde_json::from_slice::<serde_json::Value>(&line) else {
        return Some((line, false));
    };
    let client = hello.get("role").and_then(|r| r.as_str()) == Some("client");
    if let Some(obj) = hello.as_object_mut().filter(|o| o.contains_key("env")) {
        obj.insert(
            "env".into(),
            serde_json::json!(crate::protocol::attach_env()),
        );
    }
    let mut out = serde_json::to_vec(&hello).ok()?;
    out.push(b'\n');
    Some((out, client))
}

/// Connects without a hello (the client behind us says it), after the same ownership
/// checks a client makes; starts the server if none listens.
fn connect_raw(session: &SessionName) -> Result<UnixStream, Error> {
    let socket = paths::socket_path(session);
    let try_connect = || -> Result<Option<UnixStream>, Error> {
        if let Some(dir) = socket.parent() {
            if dir.exists() {
                paths::check_private_dir(dir, false).map_err(client::Error::Unsafe)?;
            }
        }
        match UnixStream::connect(&socket) {
            Ok(s) => {
                use std::os::fd::AsFd;
                let me = nix::unistd::getuid().as_raw();
                let peer = crate::sys::peer_uid(s.as_fd())?;
                if peer != me {
                    return Err(Error::NotYourSocket(peer));
                }
                Ok(Some(s))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(None)
            }
            Err(source) => Err(client::Error::Connect {
                socket: socket.clone(),
                source,
            }
            .into()),
        }
    };
    if let Some(s) = try_connect()? {
        return Ok(s);
    }
    let mut starting = client::connect::start_server(session)?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(s) = try_connect()? {
            client::connect::reap_in_background(starting.child);
            return Ok(s);
        }
        if let Ok(Some(status)) = starting.child.try_wait() {
            return Err(Error::BridgeStartFailed {
                session: session.clone(),
                status,
                log: paths::log_path(session),
            });
        }
        if Instant::now() >= deadline {
            return Err(Error::BridgeStartTimeout(session.clone()));
        }
        starting.wait(deadline.saturating_duration_since(Instant::now()));
    }
}
