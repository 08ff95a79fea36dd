//! Reaching a session's server: connect, or start it (a daemon in its own session, stdio to
//! its log) and wait until it answers; then the hello.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::error::{Doing, Error};
use crate::paths::{self, SessionName};
use crate::protocol::{Hello, HelloReply, Role};

/// How long a freshly started server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Connects and says hello. `Ok(None)` when no server listens.
pub fn connect(
    session: &SessionName,
    role: Role,
    size: Option<(u16, u16)>,
) -> Result<Option<UnixStream>, Error> {
    Ok(connect_with(session, &Hello::new(role, size))?.map(|(s, _)| s))
}

/// Connects and says `hello`; the stream and the server's reply. `Ok(None)` when no
/// server listens.
pub fn connect_with(
    session: &SessionName,
    hello: &Hello,
) -> Result<Option<(UnixStream, HelloReply)>, Error> {
    let socket = paths::socket_path(session);
    // An old name is for the programs started under it (told it in HERDR_SESSION), not
    // for attaching by, nor for anyone else.
    let told = std::env::var("HERDR_SESSION").ok().as_deref() == Some(session.as_str());
    if hello.role == Role::Client || !told {
        if let Some(to) = paths::renamed_to(session) {
            return Err(Error::Renamed {
                from: session.clone(),
                to,
            });
        }
    }
    // Never talk to a socket in a folder someone else controls.
    if let Some(dir) = socket.parent() {
        match paths::check_private_dir(dir, false) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::Unsafe(e)),
        }
    }
    let stream = match UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None)
        }
        Err(source) => return Err(Error::Connect { socket, source }),
    };
    say_hello(stream, hello).map(Some)
}

pub fn hello(
    stream: UnixStream,
    role: Role,
    size: Option<(u16, u16)>,
) -> Result<UnixStream, Error> {
    say_hello(stream, &Hello::new(role, size)).map(|(s, _)| s)
}

fn say_hello(mut stream: UnixStream, hello: &Hello) -> Result<(UnixStream, HelloReply), Error> {
    use std::os::fd::AsFd;
    let me = nix::unistd::getuid().as_raw();
    let peer =
        crate::sys::peer_uid(stream.as_fd()).doing(|| "cannot check who owns the server".into())?;
    if peer != me {
        return Err(Error::NotOurs { peer, me });
    }
    let mut line = serde_json::to_string(hello)?;
    line.push('\n');
    let sent = stream.write_all(line.as_bytes());
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    if let Err(e) = sent {
        // A server that refuses the connection at once (too many waiting for their hello)
        // says why before closing: that is the error to show, if it is there.
        return match read_hello_reply(&mut stream, "the server") {
            Err(refused) if !matches!(refused, Error::NotAHello { .. }) => Err(refused),
            _ => Err(Error::ClosedBeforeHello(e)),
        };
    }
    let reply = read_hello_reply(&mut stream, "the server")?;
    stream.set_read_timeout(None)?;
    Ok((stream, reply))
}

/// Reads and checks the server's hello reply (`who` names the other end in errors).
/// Byte by byte, so no byte after the line (the first frame) is consumed.
pub fn read_hello_reply(r: &mut impl Read, who: &str) -> Result<HelloReply, Error> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < crate::protocol::MAX_HELLO_LEN {
        match r.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(source) => {
                return Err(Error::NoAnswer {
                    who: who.into(),
                    source,
                })
            }
        }
    }
    let answer = String::from_utf8_lossy(&line);
    let reply: HelloReply =
        serde_json::from_str(answer.trim()).map_err(|source| Error::NotAHello {
            who: who.into(),
            answer: answer.trim().into(),
            source,
        })?;
    if !reply.ok {
        return Err(Error::Refused(
            reply
                .error
                .unwrap_or_else(|| format!("{who} refused the connection")),
        ));
    }
    Ok(reply)
}

/// Connects, starting the server first if none runs. Returns whether it was started.
pub fn connect_or_start(
    session: &SessionName,
    role: Role,
    size: Option<(u16, u16)>,
) -> Result<(UnixStream, bool), Error> {
    let (stream, _, started) = connect_or_start_with(session, &Hello::new(role, size))?;
    Ok((stream, started))
}

/// [`connect_or_start`] with a hello of the caller's; also the server's reply.
pub fn connect_or_start_with(
    session: &SessionName,
    hello: &Hello,
) -> Result<(UnixStream, HelloReply, bool), Error> {
    // A server we may start makes its folder private when it binds there: a folder of
    // ours that others can enter is tightened now as well, rather than refused (one that
    // is not ours still is).
    let dir = paths::runtime_dir();
    paths::ensure_private_dir(&dir).map_err(Error::Unsafe)?;
    if let Some((s, r)) = connect_with(session, hello)? {
        return Ok((s, r, false));
    }
    let mut starting = Some(start_server(session)?);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match connect_with(session, hello) {
            Ok(Some((s, r))) => {
                let started = starting.is_some();
                if let Some(st) = starting {
                    reap_in_background(st.child);
                }
                return Ok((s, r, started));
            }
            Ok(None) => {}
            // Our server listens before it has finished starting; if starting then fails,
            // it drops us mid-hello. Its exit, below, says why; a server we did not
            // start is reported as it answered.
            Err(e) if starting.is_none() => return Err(e),
            Err(_) => {
                if let Some(st) = starting.as_mut() {
                    let deadline = Instant::now() + Duration::from_secs(2);
                    while st.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline
                    {
                        std::thread::sleep(START_POLL);
                    }
                }
            }
        }
        if let Some(status) = starting
            .as_mut()
            .and_then(|st| st.child.try_wait().ok().flatten())
        {
            if status.code() != Some(crate::protocol::exit::SESSION_BUSY) {
                return Err(Error::StartFailed {
                    session: session.clone(),
                    status,
                    log_tail: log_tail(session),
                });
            }
            // Another server held the session (starting, or being replaced by a live
            // handoff): ours gave way; wait for that one to listen.
            starting = None;
        }
        if starting.is_none() && !session_locked(session) {
            // The one we waited for is gone too: try again ourselves.
            if let Some((s, r)) = connect_with(session, hello)? {
                return Ok((s, r, false));
            }
            starting = Some(start_server(session)?);
        }
        if Instant::now() > deadline {
            return Err(Error::StartTimeout {
                session: session.clone(),
                secs: START_TIMEOUT.as_secs(),
                log: paths::log_path(session),
            });
        }
        match starting.as_mut() {
            Some(st) => st.wait(deadline.saturating_duration_since(Instant::now())),
            None => std::thread::sleep(START_POLL),
        }
    }
}

/// Whether some process holds the session's lock (a server runs or is starting).
pub(crate) fn session_locked(session: &SessionName) -> bool {
    use std::os::fd::AsFd;
    let path = paths::runtime_dir().join(format!("{}.lock", session.as_str()));
    match std::fs::OpenOptions::new().write(true).open(path) {
        // Taking it ourselves fails only if it is held; if it succeeds, closing the file
        // right away gives it back.
        Ok(f) => crate::sys::flock_exclusive_nb(f.as_fd()).is_err(),
        Err(_) => false,
    }
}

/// The server is our child until we exit: reap it when it ends, so a stopped server never
/// lingers as a zombie while this client runs.
pub(crate) fn reap_in_background(mut child: std::process::Child) {
    let _ = std::thread::Builder::new()
        .name("herdr-reaper".into())
        .spawn(move || {
            let _ = child.wait();
        });
}

/// The descriptor number under which a server we start gets its ready pipe.
const READY_FD: i32 = 3;

/// How often a starting server is looked at when it cannot tell us it listens (another
/// process started it), or once it has told us and we wait for it to answer or exit.
const START_POLL: Duration = Duration::from_millis(10);

/// A server this process started: the child, and the read end of a pipe it writes one
/// byte to once it listens (or closes unwritten when it exits first), so we connect the
/// moment it can answer instead of guessing with sleeps.
pub struct Starting {
    pub child: std::process::Child,
    ready: Option<std::os::fd::OwnedFd>,
}

impl Starting {
    /// Waits at most `max` for the server to listen or exit, and returns as soon as it
    /// does; once it has said so, this only paces the caller's retries.
    pub fn wait(&mut self, max: Duration) {
        use std::os::fd::AsFd;
        match self.ready.take() {
            // A byte or the end of file: either way nothing more to wait for on it. An
            // error drops it too (the caller's retries are then paced by sleeping).
            Some(fd) => match crate::sys::poll_readable(&[fd.as_fd()], Some(max)) {
                Ok(ready) if ready == [false] => self.ready = Some(fd),
                _ => {}
            },
            None => std::thread::sleep(max.min(START_POLL)),
        }
    }
}

/// Starts `herdr server run` detached: no stdin, stdout/stderr appended to the log. The
/// server calls setsid itself, so it survives this terminal closing.
pub fn start_server(session: &SessionName) -> Result<Starting, Error> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let exe = std::env::current_exe()
        .doing(|| "cannot find the herdr binary to start the server".into())?;
    paths::ensure_state_dir(session).doing(|| "cannot create the state folder".into())?;
    let log_path = paths::log_path(session);
    // Private like the other state files: it holds config problems, paths and commands.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .doing(|| format!("cannot open the server log {}", log_path.display()))?;
    // One an older herdr created readable by others is closed now.
    if log
        .metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
    {
        log.set_permissions(std::fs::Permissions::from_mode(0o600))
            .doing(|| format!("cannot make {} private", log_path.display()))?;
    }
    let (ready, ready_tx) =
        crate::sys::pipe_cloexec().doing(|| "cannot create a pipe for the server".into())?;
    let mut cmd = Command::new(exe);
    cmd.args(["server", "run", "--session", session.as_str()])
        .arg(format!("--ready-fd={READY_FD}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    crate::sys::pass_fd(&mut cmd, ready_tx.as_fd(), READY_FD);
    let child = cmd
        .spawn()
        .doing(|| "cannot start the herdr server".into())?;
    // Only the server may hold the write end: its end of file is the server's exit.
    drop(ready_tx);
    Ok(Starting {
        child,
        ready: Some(ready),
    })
}

/// The server log's last lines: what a server that failed to start said.
fn log_tail(session: &SessionName) -> String {
    tail_of(&paths::log_path(session), 5)
}

/// The last `n` lines of the log at `path`. A log rotated just now holds only the newest
/// of them; the rest are read from the one before.
fn tail_of(path: &std::path::Path, n: usize) -> String {
    let mut lines = last_lines(path, n);
    if lines.len() < n {
        let older = crate::log::file::numbered(path, 1);
        lines.splice(0..0, last_lines(&older, n - lines.len()));
    }
    lines.join("\n")
}

fn last_lines(path: &std::path::Path, n: usize) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tail_of_a_log_rotated_just_now_reads_on_from_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        assert_eq!(super::tail_of(&log, 5), "", "no log yet");
        std::fs::write(dir.path().join("server.log.1"), "a\nb\nc\nd\n").unwrap();
        std::fs::write(&log, "e\nf\n").unwrap();
        assert_eq!(super::tail_of(&log, 5), "b\nc\nd\ne\nf");
        std::fs::write(&log, b"1\n2\n3\n4\n5\n\xff6\n").unwrap();
        assert_eq!(super::tail_of(&log, 5), "2\n3\n4\n5\n\u{fffd}6");
    }
}
