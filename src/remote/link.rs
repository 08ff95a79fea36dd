//! The bridge as the client's transport: each `open` runs `herdr remote-bridge` on the
//! host over SSH and says hello through it. After a link went silent, bridges are raced
//! (the first to reach the server gets the hello); the pipe to a bridge is watched, so a
//! link the keepalive gave up stops blocking its reader and writer.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{bridge, Error, Pipe, ReadFd, Ssh, WriteFd};
use crate::client::{self, Link, Transport};
use crate::paths::SessionName;
use crate::protocol::{Hello, Role};

/// The bridge as a transport: each `open` runs `herdr remote-bridge` over SSH.
pub(super) struct Bridge {
    pub(super) ssh: Ssh,
    pub(super) binary: String,
    pub(super) session: SessionName,
    /// This machine's key bindings, sent with each hello (`--remote-keybindings local`).
    pub(super) keys: Option<crate::protocol::ClientKeys>,
    pub(super) log: PathBuf,
    /// Set when the user gives up: a hello that does not come is no longer waited for.
    pub(super) cancel: Arc<AtomicBool>,
    /// The user's terminal, told in each hello.
    pub(super) terminal: crate::protocol::terminal::TerminalInfo,
}

impl Transport for Bridge {
    fn open(
        &mut self,
        size: (u16, u16),
        resume: Option<&crate::protocol::Resume>,
    ) -> Result<Link, client::Error> {
        let mut hello = Hello::new(Role::Client, Some(size));
        hello.keys = self.keys.clone();
        hello.terminal = Some(self.terminal.clone());
        // A folder of this machine means nothing on the remote one.
        hello.cwd = None;
        hello.resume = resume.cloned();
        let Greeted {
            reader,
            writer,
            kill,
            reply,
        } = self.greet(&hello)?;
        // A server that answers pings is watched: a link that goes silent is ended (our
        // end stops reading, its ssh is killed) and the client reconnects, whatever ssh's
        // own keepalive settings are. (With a shared connection the ssh master, not this
        // process, moves the bytes: killing this one alone would not end the link.)
        let broken = Arc::new(AtomicBool::new(false));
        let watchdog: Option<Box<dyn Fn() + Send>> = if reply
            .features
            .iter()
            .any(|f| f == crate::protocol::FEATURE_PING)
        {
            let broken = broken.clone();
            Some(Box::new(move || {
                broken.store(true, Ordering::Release);
                kill();
            }))
        } else {
            None
        };
        crate::sys::set_nonblocking(std::os::fd::AsFd::as_fd(&writer))?;
        let keys = reply
            .features
            .iter()
            .any(|f| f == crate::protocol::FEATURE_KEYS);
        Ok(Link {
            reader: Box::new(WatchedReader {
                inner: reader,
                broken: broken.clone(),
            }),
            writer: Box::new(PatientWriter {
                inner: writer,
                broken,
            }),
            watchdog,
            tty: None,
            keys,
            token: reply.token,
        })
    }

    fn reconnects(&self) -> bool {
        true
    }

    fn cancel_on(&mut self, flag: Arc<AtomicBool>) {
        self.cancel = flag;
    }

    fn switch(&mut self, to: SessionName) {
        self.session = to;
    }

    fn session(&self) -> SessionName {
        self.session.clone()
    }

    fn describe(&self) -> String {
        format!("{} (session {})", self.ssh.host, self.session)
    }
}

/// A bridge the server answered: its ends, how to end it, and the answer.
pub(super) struct Greeted {
    pub(super) reader: Box<dyn ReadFd>,
    pub(super) writer: Box<dyn WriteFd>,
    pub(super) kill: Box<dyn Fn() + Send>,
    pub(super) reply: crate::protocol::HelloReply,
}

/// The bridge, run by the remote shell (`--ready` when raced).
const BRIDGE: &str = r#"exec "$1" --session "$2" remote-bridge ${3+"$3"}"#;

/// While a link is being made again: a bridge more is started every RACE_EVERY while none
/// is connected yet, at most RACERS at once, for RACE_FOR; the first connected one is the
/// link. So a link that returns in the middle of an attempt's wait for a TCP answer (its
/// SYNs go out a second apart, then two) is found by the next attempt half a second
/// later, not by that attempt's next SYN.
const RACE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
const RACERS: usize = 4;
const RACE_FOR: std::time::Duration = std::time::Duration::from_secs(4);
/// A racer may take this long after the last one started to say it is connected (ssh's
/// connect, authentication and the bridge's start), as a single bridge had for its hello.
const RACE_WAIT: std::time::Duration = HELLO_TIMEOUT;

/// A raced bridge's writer and its end (its reader is with the thread that waits for it
/// to say it is ready).
type Racer = (Box<dyn WriteFd>, Box<dyn Fn() + Send>);

impl Bridge {
    /// Starts a bridge (raced after a link went silent) and says `hello` through it: its
    /// ends and the server's answer, waited for until the user gives up or HELLO_TIMEOUT
    /// passes (a connection that does not answer must not hold a reconnection forever).
    pub(super) fn greet(&mut self, hello: &Hello) -> Result<Greeted, client::Error> {
        let Pipe {
            reader,
            mut writer,
            kill,
        } = match self.ssh.races() {
            true => self.race()?,
            false => self.ssh.stream(
                BRIDGE,
                &[&self.binary, self.session.as_str()],
                &self.log,
                false,
            )?,
        };
        let mut line = serde_json::to_string(hello)?;
        line.push('\n');
        writer
            .write_all(line.as_bytes())
            .map_err(Error::BridgeClosed)?;
        writer.flush()?;
        let gave_up = self.cancel.clone();
        let timed_out = Arc::new(AtomicBool::new(false));
        let deadline = std::time::Instant::now() + HELLO_TIMEOUT;
        let mut waiting = WatchedReader {
            inner: reader,
            broken: timed_out.clone(),
        };
        let t = timed_out.clone();
        let watcher = std::thread::spawn(move || {
            while !t.load(Ordering::Acquire) {
                if gave_up.load(Ordering::Acquire) || std::time::Instant::now() >= deadline {
                    t.store(true, Ordering::Release);
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        let reply = crate::client::connect::read_hello_reply(
            &mut waiting,
            &format!("the bridge (see {})", self.log.display()),
        );
        let reader = waiting.inner;
        timed_out.store(true, Ordering::Release);
        let _ = watcher.join();
        match reply {
            Ok(reply) => Ok(Greeted {
                reader,
                writer,
                kill,
                reply,
            }),
            Err(e) => {
                kill();
                Err(e)
            }
        }
    }

    /// Bridges raced until one says it is connected to the server (`remote-bridge
    /// --ready`), before any hello: the others are ended then, having attached nothing.
    fn race(&mut self) -> Result<Pipe, client::Error> {
        use std::sync::mpsc;
        type Ready = (usize, Result<Box<dyn ReadFd>, std::io::Error>);
        let (tx, rx) = mpsc::channel::<Ready>();
        // Per racer: its writer and its end, until it wins or fails.
        let mut racers: Vec<Option<Racer>> = Vec::new();
        let started = std::time::Instant::now();
        let mut next = started;
        let mut running = 0;
        let mut failed: Option<client::Error> = None;
        let end_all = |racers: &mut Vec<Option<Racer>>| {
            for (_, kill) in racers.iter_mut().filter_map(Option::take) {
                kill();
            }
        };
        loop {
            if self.cancel.load(Ordering::Acquire) {
                end_all(&mut racers);
                return Err(failed.unwrap_or(client::Error::NotListening));
            }
            let now = std::time::Instant::now();
            let racing = now.duration_since(started) < RACE_FOR;
            if now >= next && running < RACERS && racing {
                next = now + RACE_EVERY;
                let id = racers.len();
                let args = [self.binary.as_str(), self.session.as_str(), "--ready"];
                match self.ssh.stream(BRIDGE, &args, &self.log, id > 0) {
                    Ok(Pipe {
                        reader,
                        writer,
                        kill,
                    }) => {
                        racers.push(Some((writer, kill)));
                        running += 1;
                        let tx = tx.clone();
                        std::thread::spawn(move || {
                            let mut reader = reader;
                            let _ = tx.send((id, ready(&mut reader).map(|()| reader)));
                        });
                    }
                    Err(e) => failed = Some(e.into()),
                }
            }
            if (running == 0 && !racing) || now.duration_since(started) > RACE_FOR + RACE_WAIT {
                end_all(&mut racers);
                let late = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no bridge reached the server in time",
                );
                return Err(failed.unwrap_or_else(|| Error::BridgeClosed(late).into()));
            }
            // Until the next racer may start; once none may, until one answers (or the
            // race's end is due: looked at every RACE_EVERY).
            let wait = match running < RACERS && racing {
                true => next
                    .saturating_duration_since(now)
                    .clamp(std::time::Duration::from_millis(10), RACE_EVERY),
                false => RACE_EVERY,
            };
            match rx.recv_timeout(wait) {
                Ok((id, Ok(reader))) => {
                    let won = racers.get_mut(id).and_then(Option::take);
                    end_all(&mut racers);
                    if let Some((writer, kill)) = won {
                        return Ok(Pipe {
                            reader,
                            writer,
                            kill,
                        });
                    }
                }
                Ok((id, Err(e))) => {
                    running -= 1;
                    if let Some((_, kill)) = racers.get_mut(id).and_then(Option::take) {
                        kill();
                    }
                    failed = Some(Error::BridgeClosed(e).into());
                }
                Err(_) => {}
            }
        }
    }
}

/// Reads a raced bridge's first line: it is connected, or it failed (ssh ended, or the
/// bridge said something else: its error).
fn ready(reader: &mut Box<dyn ReadFd>) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 4096 {
        match reader.read(&mut byte)? {
            0 => break,
            _ if byte[0] == b'\n' => break,
            _ => line.push(byte[0]),
        }
    }
    match line == bridge::READY.as_bytes() {
        true => Ok(()),
        false => Err(std::io::Error::other(format!(
            "the bridge did not start: {}",
            String::from_utf8_lossy(&line).trim()
        ))),
    }
}

/// How long a new bridge may take to answer the hello, once ssh has reached the host
/// (reaching it is bounded by CONNECT_TIMEOUT): authentication and the bridge's start on
/// a slow host fit; a link that died halfway through is given up soon enough.
const HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

/// The bridge's input, written so that a link the watchdog ended stops blocking its
/// writer (a frozen connection takes nothing, and another process may hold the pipe).
pub(super) struct PatientWriter {
    pub(super) inner: Box<dyn WriteFd>,
    pub(super) broken: Arc<AtomicBool>,
}

impl Write for PatientWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use std::os::fd::AsFd;
        loop {
            if self.broken.load(Ordering::Acquire) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the link went silent",
                ));
            }
            if crate::sys::poll_writable(self.inner.as_fd(), std::time::Duration::from_millis(250))?
            {
                match crate::sys::write_nb(self.inner.as_fd(), buf)? {
                    Some(n) => return Ok(n),
                    None => continue,
                }
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bridge's output, read so that a link the watchdog ended stops being read even
/// though no end-of-file comes (another process may still hold the pipe).
pub(super) struct WatchedReader {
    pub(super) inner: Box<dyn ReadFd>,
    pub(super) broken: Arc<AtomicBool>,
}

impl std::io::Read for WatchedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsFd;
        loop {
            if self.broken.load(Ordering::Acquire) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the link went silent",
                ));
            }
            let ready = crate::sys::poll_readable(
                &[self.inner.as_fd()],
                Some(std::time::Duration::from_millis(250)),
            )?;
            if ready.first().copied().unwrap_or(false) {
                match self.inner.read(buf) {
                    // (The writer's side of a socket is non-blocking, and so its reader.)
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    other => return other,
                }
            }
        }
    }
}
