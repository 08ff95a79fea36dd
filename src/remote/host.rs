//! A connection to a saved machine's server, kept up by the roaming rules, for whatever
//! runs over it (a [`Role`]: the machine's link, or one of its panes mirrored). It
//! reaches the host as `--remote` does — the installed herdr found by the probe (never
//! installed from here: `herdr machine add` asks), its server ensured, an API connection
//! through `herdr remote-bridge` — and keeps it the way the client keeps its link:
//! pinged, ended when it goes silent or a wake, SIGCONT or network change finds it dead,
//! remade at once and then every half second while the host is unreachable (every
//! [`SLOW_RETRY`] once that has lasted [`SLOW_AFTER`]).

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::link::{Bridge, Greeted, PatientWriter, WatchedReader};
use super::{Error, RemoteArgs};
use crate::client::keepalive::{self, Pace, SharedWatch};
use crate::machine::Machine;
use crate::protocol::{Hello, Role as HelloRole};

/// ssh's log of a connection is started again when it has grown past this.
const LOG_MAX: u64 = 1 << 20;

/// Once a machine has been unreachable this long, attempts are spaced out to every
/// SLOW_RETRY (a network change, a wake or a reconnect asked for still tries at once):
/// a machine switched off for the weekend costs an ssh every few seconds, not every
/// half second, and its host's sshd sees few failed logins.
const SLOW_AFTER: Duration = Duration::from_secs(120);
const SLOW_RETRY: Duration = Duration::from_secs(15);

/// Lines and commands waiting for the loop at most.
const INPUT_QUEUE: usize = 64;

/// Longest line read from the host: a mirror's data lines are at most a few hundred KiB.
const MAX_HOST_LINE: usize = 16 << 20;

/// What the connection's owner gets: its own commands, and the host's lines.
pub(super) enum Input<C> {
    Cmd(C),
    /// A line from the host's server over connection `gen`.
    Line(u64, String),
    /// Connection `gen` ended, and why.
    Ended(u64, String),
    /// An attempt ended: the bridge to keep, and the connection or why there is none.
    Attempt(Box<(Option<Bridge>, Result<Greeted, String>)>),
}

/// What a command asks of the connection.
pub(super) enum After {
    Nothing,
    /// Give the connection (or the wait for the next attempt) up and connect now.
    Reconnect,
}

/// The current connection's input, shared with the ping thread.
pub(super) type SharedOut = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// Writes one line to the host (dropped while no connection is up).
pub(super) fn write_line(writer: &SharedOut, value: &Value) {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(out) = w.as_mut() {
        if out.write_all(&line).is_err() {
            *w = None;
        }
    }
}

/// What runs over the connection.
pub(super) trait Role {
    type Cmd: Send + 'static;
    /// An attempt starts.
    fn connecting(&mut self);
    /// The connection is up, with the host's herdr `version`: the first requests.
    fn connected(&mut self, out: &SharedOut, version: String);
    /// The attempt failed or the connection ended: why.
    fn down(&mut self, why: &str);
    /// One of the owner's commands; `out` is None while no connection is up.
    fn command(&mut self, out: Option<&SharedOut>, cmd: Self::Cmd) -> After;
    /// A line from the host (not an answer to a ping).
    fn line(&mut self, out: &SharedOut, msg: Value);
    /// The round trip changed.
    fn round_trip(&mut self, _rtt: Option<Duration>) {}
    /// When [`Role::due`] wants to be called, while connected.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn due(&mut self, _out: &SharedOut) {}
}

pub(super) struct Host<C> {
    machine: Machine,
    rx: mpsc::Receiver<Input<C>>,
    tx: mpsc::SyncSender<Input<C>>,
    /// Kept across connections once the host's herdr was found (and its server ensured):
    /// later ones only start a bridge.
    bridge: Option<Bridge>,
    watched: SharedWatch,
    /// Set by a wake, SIGCONT or network change: an attempt waiting is made now.
    nudged: Arc<AtomicBool>,
    writer: SharedOut,
    gen: u64,
    /// Where ssh's messages go.
    log: std::path::PathBuf,
}

impl<C: Send + 'static> Host<C> {
    /// A connection to `machine`, not made yet; `log` names ssh's log in the runtime
    /// folder. Commands are sent through [`Host::sender`].
    pub(super) fn new(machine: Machine, log: &str) -> std::io::Result<Host<C>> {
        // Bounded: a host's lines wait for this process to write them out (to a pane that
        // reads them when it can), and the host holds the rest back.
        let (tx, rx) = mpsc::sync_channel(INPUT_QUEUE);
        let watched: SharedWatch = Arc::default();
        let nudged = Arc::new(AtomicBool::new(false));
        let writer: SharedOut = Arc::default();
        let w = writer.clone();
        keepalive::spawn(
            Box::new(move || write_line(&w, &json!({ "id": "p", "method": "ping" }))),
            watched.clone(),
            Arc::new(AtomicBool::new(false)),
            nudged.clone(),
        )?;
        Ok(Host {
            machine,
            rx,
            tx,
            bridge: None,
            watched,
            nudged,
            writer,
            gen: 0,
            log: crate::paths::runtime_dir().join(log),
        })
    }

    pub(super) fn sender(&self) -> mpsc::SyncSender<Input<C>> {
        self.tx.clone()
    }

    pub(super) fn rtt(&self) -> Option<Duration> {
        keepalive::rtt(&self.watched)
    }

    /// Connects and serves `role`, again and again, for as long as this process runs.
    pub(super) fn run(&mut self, role: &mut impl Role<Cmd = C>) -> ! {
        let mut pace = Pace::default();
        // Since when the machine has been unreachable (none while it is connected).
        let mut down: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut pause = pace.wait(now);
            if down.is_some_and(|d| now.duration_since(d) > SLOW_AFTER) {
                pause = pause.max(SLOW_RETRY);
            }
            self.wait_for_attempt(pause, role);
            pace.attempt(Instant::now());
            down.get_or_insert_with(Instant::now);
            role.connecting();
            let why = match self.attempt(role) {
                Ok(greeted) => {
                    pace.reset();
                    down = None;
                    self.serve(greeted, role)
                }
                Err(why) => why,
            };
            role.down(&why);
        }
    }

    /// Waits `pause` before the next attempt, passing commands on meanwhile; a reconnect
    /// or a nudge ends the wait.
    fn wait_for_attempt(&mut self, pause: Duration, role: &mut impl Role<Cmd = C>) {
        let until = Instant::now() + pause;
        loop {
            if self.nudged.swap(false, Ordering::AcqRel) {
                return;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(250))) {
                Ok(Input::Cmd(cmd)) => {
                    if let After::Reconnect = role.command(None, cmd) {
                        return;
                    }
                }
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::process::exit(0),
            }
        }
    }

    /// One attempt, made on a thread of its own while commands are answered here (an
    /// attempt into a black hole takes seconds: keys typed meanwhile are refused at once).
    fn attempt(&mut self, role: &mut impl Role<Cmd = C>) -> Result<Greeted, String> {
        let (machine, log, tx) = (self.machine.clone(), self.log.clone(), self.tx.clone());
        let bridge = self.bridge.take();
        std::thread::Builder::new()
            .name("herdr-host-connect".into())
            .spawn(move || {
                let _ = tx.send(Input::Attempt(Box::new(connect(bridge, &machine, &log))));
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        loop {
            match self.rx.recv() {
                Ok(Input::Cmd(cmd)) => {
                    // (A reconnect asked for now is this attempt.)
                    let _ = role.command(None, cmd);
                }
                Ok(Input::Attempt(done)) => {
                    let (bridge, result) = *done;
                    self.bridge = bridge;
                    return result;
                }
                Ok(_) => {}
                Err(_) => std::process::exit(0),
            }
        }
    }

    /// Serves one connection until it ends; returns why it ended.
    fn serve(&mut self, greeted: Greeted, role: &mut impl Role<Cmd = C>) -> String {
        let Greeted {
            reader,
            writer,
            kill,
            reply,
        } = greeted;
        self.gen += 1;
        let gen = self.gen;
        let broken = Arc::new(AtomicBool::new(false));
        let b = broken.clone();
        keepalive::watch(&self.watched).attach(Some(Box::new(move || {
            b.store(true, Ordering::Release);
            kill();
        })));
        if let Err(e) = crate::sys::set_nonblocking(std::os::fd::AsFd::as_fd(&writer)) {
            keepalive::watch(&self.watched).detach();
            return format!("cannot use the bridge: {e}");
        }
        *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(PatientWriter {
            inner: writer,
            broken: broken.clone(),
        }));
        let (tx, watched) = (self.tx.clone(), self.watched.clone());
        let reader = WatchedReader {
            inner: reader,
            broken,
        };
        let spawned = std::thread::Builder::new()
            .name("herdr-host-read".into())
            .spawn(move || read_host(reader, gen, &tx, &watched));
        if let Err(e) = spawned {
            keepalive::watch(&self.watched).detach();
            *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return format!("cannot start a thread: {e}");
        }
        role.connected(&self.writer, reply.version);
        let mut rtt_told = self.rtt();
        loop {
            let wait = role.deadline().map_or(Duration::from_secs(1), |t| {
                t.saturating_duration_since(Instant::now())
            });
            let input = match self.rx.recv_timeout(wait) {
                Ok(input) => input,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if role.deadline().is_some_and(|t| Instant::now() >= t) {
                        role.due(&self.writer);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => std::process::exit(0),
            };
            match input {
                Input::Cmd(cmd) => {
                    if let After::Reconnect = role.command(Some(&self.writer), cmd) {
                        if let Some(brk) = keepalive::watch(&self.watched).breaker_take() {
                            brk();
                        }
                    }
                }
                Input::Line(g, line) if g == gen => {
                    let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    if msg.get("id").and_then(Value::as_str) == Some("p") {
                        keepalive::ponged(&self.watched);
                        let rtt = self.rtt();
                        if rtt != rtt_told {
                            rtt_told = rtt;
                            role.round_trip(rtt);
                        }
                    } else {
                        role.line(&self.writer, msg);
                    }
                }
                Input::Ended(g, why) if g == gen => {
                    keepalive::watch(&self.watched).detach();
                    *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    return why;
                }
                Input::Line(..) | Input::Ended(..) | Input::Attempt(..) => {}
            }
            if role.deadline().is_some_and(|t| Instant::now() >= t) {
                role.due(&self.writer);
            }
        }
    }
}

/// One attempt: the host's herdr found and its server ensured (the first time, when no
/// `bridge` is kept yet), then a bridge that said hello as an API client.
fn connect(
    bridge: Option<Bridge>,
    machine: &Machine,
    log: &std::path::Path,
) -> (Option<Bridge>, Result<Greeted, String>) {
    let mut bridge = match bridge {
        Some(b) => b,
        None => {
            let made = RemoteArgs::for_machine(machine, false).and_then(|args| {
                let (ssh, binary) = super::prepare(&args)?;
                Ok(Bridge {
                    ssh,
                    binary,
                    session: args.session,
                    keys: None,
                    log: log.to_path_buf(),
                    cancel: Arc::new(AtomicBool::new(false)),
                    terminal: Default::default(),
                })
            });
            match made {
                Ok(b) => b,
                Err(e) => return (None, Err(crate::client::with_causes(&e))),
            }
        }
    };
    // (ssh's messages go to the log: one that has grown is started again, so a machine
    // unreachable for days does not fill the runtime folder.)
    if std::fs::metadata(log).is_ok_and(|m| m.len() > LOG_MAX) {
        let _ = std::fs::File::create(log);
    }
    let greeted = bridge
        .greet(&Hello::new(HelloRole::Api, None))
        .map_err(|e| crate::client::with_causes(&Error::from(e)));
    (Some(bridge), greeted)
}

/// Reads the host's lines until the connection ends (or the watchdog ends it).
fn read_host<C>(
    reader: WatchedReader,
    gen: u64,
    tx: &mpsc::SyncSender<Input<C>>,
    watched: &SharedWatch,
) {
    let mut reader = std::io::BufReader::new(reader);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        match (&mut reader)
            .take(MAX_HOST_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) if reader.get_ref().broken.load(Ordering::Acquire) => {
                break "no answer from it for a while".to_string()
            }
            Ok(0) => break "the host's server closed the connection".to_string(),
            Err(e) => break e.to_string(),
            Ok(_) => {
                keepalive::heard(watched);
                let text = String::from_utf8_lossy(&line).into_owned();
                if tx.send(Input::Line(gen, text)).is_err() {
                    return;
                }
            }
        }
    };
    let _ = tx.send(Input::Ended(gen, why));
}
