//! `herdr machine link NAME`: one saved machine's connection, run by the local server as a
//! child process of its own (so a host that hangs, floods or vanishes holds up nothing of
//! the server's: it reads this process's lines when they come). It reaches the host as
//! `--remote` does — the installed herdr found by the probe (never installed from here:
//! `herdr machine add` asks), its server ensured, an API connection through
//! `herdr remote-bridge` — and keeps it the way the client keeps its link: pinged, ended
//! when it goes silent or a wake, SIGCONT or network change finds it dead, remade at once
//! and then every half second while the host is unreachable.
//!
//! It tells the server (protocol/machine.rs) its state, the round trip, what the host's
//! session holds (after each change the host announces: never output) and the answers to
//! the calls it forwards. Calls made while the host is unreachable are refused at once.

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::link::{Bridge, Greeted, PatientWriter, WatchedReader};
use super::{Error, RemoteArgs};
use crate::client::keepalive::{self, Pace, SharedWatch};
use crate::machine::Machine;
use crate::protocol::machine::{LinkMsg, LinkState, RemoteError, ToLink, LINK_PROTOCOL, MAX_LINE};
use crate::protocol::{Hello, Role};

/// ssh's log of a link is started again when it has grown past this.
const LOG_MAX: u64 = 1 << 20;

/// Once a machine has been unreachable this long, attempts are spaced out to every
/// SLOW_RETRY (a network change, a wake or `machine reconnect` still tries at once):
/// a machine switched off for the weekend costs an ssh every few seconds, not every
/// half second, and its host's sshd sees few failed logins.
const SLOW_AFTER: Duration = Duration::from_secs(120);
const SLOW_RETRY: Duration = Duration::from_secs(15);

/// After the host announced a change, the view is asked for again this much later (a
/// burst of changes costs one refresh).
const REFRESH_AFTER: Duration = Duration::from_millis(100);

enum Input {
    Cmd(ToLink),
    /// A line from the host's server over connection `gen`.
    Line(u64, String),
    /// Connection `gen` ended, and why.
    Ended(u64, String),
}

type SharedOut = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

pub fn run(name: &str) -> Result<i32, Error> {
    let machine = crate::machine::load()?.get(name)?.clone();
    send(&LinkMsg::Hello {
        protocol: LINK_PROTOCOL,
    });
    let (tx, rx) = mpsc::channel();
    let commands = tx.clone();
    std::thread::Builder::new()
        .name("herdr-link-in".into())
        .spawn(move || read_commands(commands))?;
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
    let mut linker = Linker {
        machine,
        rx,
        tx,
        bridge: None,
        watched,
        nudged,
        writer,
        gen: 0,
        state: None,
        error: None,
        log: crate::paths::runtime_dir().join(format!("ssh-machine-{name}.log")),
    };
    linker.run();
    Ok(0)
}

/// Writes one message to the server; a server that is gone ends this process (its pipe
/// closed: nobody is left to link for).
fn send(msg: &LinkMsg) {
    let mut line = serde_json::to_vec(msg).expect("link messages serialize");
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    if out.write_all(&line).and_then(|_| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// The server's requests, one per line; its end of the pipe closing ends this process.
fn read_commands(tx: mpsc::Sender<Input>) {
    let mut stdin = std::io::BufReader::new(std::io::stdin().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut stdin)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => std::process::exit(0),
            Ok(_) => match serde_json::from_slice::<ToLink>(&line) {
                Ok(cmd) => {
                    if tx.send(Input::Cmd(cmd)).is_err() {
                        std::process::exit(0);
                    }
                }
                Err(e) => eprintln!("machine link: a request it cannot read ({e}); ignored"),
            },
        }
    }
}

fn write_line(writer: &SharedOut, value: &Value) {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(out) = w.as_mut() {
        if out.write_all(&line).is_err() {
            *w = None;
        }
    }
}

struct Linker {
    machine: Machine,
    rx: mpsc::Receiver<Input>,
    tx: mpsc::Sender<Input>,
    /// Kept across connections once the host's herdr was found (and its server ensured):
    /// later ones only start a bridge.
    bridge: Option<Bridge>,
    watched: SharedWatch,
    /// Set by a wake, SIGCONT or network change: an attempt waiting is made now.
    nudged: Arc<AtomicBool>,
    /// The current connection's input, shared with the ping thread.
    writer: SharedOut,
    gen: u64,
    state: Option<LinkState>,
    /// Why the last attempt or connection failed.
    error: Option<String>,
    /// Where ssh's messages go.
    log: std::path::PathBuf,
}

/// What a view refresh gathers before it is sent: one answer per list.
const VIEW_PARTS: [(&str, &str); 2] = [("v:w", "workspace.list"), ("v:a", "agent.list")];

/// The events after which the view is asked for again: what changes the workspaces
/// (their names, their panes) or the agents. Never output, titles or focus.
fn changes_view(event: &str) -> bool {
    event.starts_with("workspace.")
        || matches!(
            event,
            "pane.created" | "pane.closed" | "pane.exited" | "pane.agent"
        )
}

impl Linker {
    fn run(&mut self) {
        let mut pace = Pace::default();
        // Since when the machine has been unreachable (none while it is connected).
        let mut down: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut pause = pace.wait(now);
            if down.is_some_and(|d| now.duration_since(d) > SLOW_AFTER) {
                pause = pause.max(SLOW_RETRY);
            }
            self.wait_for_attempt(pause);
            pace.attempt(Instant::now());
            down.get_or_insert_with(Instant::now);
            if self.state != Some(LinkState::Unreachable) {
                self.set_state(LinkState::Connecting, None);
            }
            match self.connect() {
                Ok(greeted) => {
                    pace.reset();
                    down = None;
                    let why = self.serve(greeted);
                    self.error = Some(why);
                }
                Err(e) => self.error = Some(crate::client::with_causes(&e)),
            }
            self.set_state(LinkState::Unreachable, None);
        }
    }

    fn set_state(&mut self, state: LinkState, version: Option<String>) {
        self.state = Some(state);
        let connected = state == LinkState::Connected;
        send(&LinkMsg::State {
            state,
            error: (!connected).then(|| self.error.clone()).flatten(),
            rtt_ms: keepalive::rtt(&self.watched).map(|d| d.as_secs_f64() * 1000.0),
            version,
        });
    }

    /// Waits `pause` before the next attempt, answering what comes meanwhile: calls are
    /// refused (the host is not reachable now), a reconnect or a nudge ends the wait.
    fn wait_for_attempt(&mut self, pause: Duration) {
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
                Ok(Input::Cmd(ToLink::Reconnect)) => return,
                Ok(Input::Cmd(ToLink::Call { call, .. })) => self.refuse(call),
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::process::exit(0),
            }
        }
    }

    fn refuse(&self, call: u64) {
        let why = self.error.as_deref().unwrap_or("not connected yet");
        send(&LinkMsg::Reply {
            call,
            result: None,
            error: Some(RemoteError {
                code: "unreachable".into(),
                message: format!("machine {} is unreachable: {why}", self.machine.name),
            }),
        });
    }

    /// One attempt: the host's herdr found and its server ensured (the first time), then
    /// a bridge that said hello as an API client.
    fn connect(&mut self) -> Result<Greeted, Error> {
        if self.bridge.is_none() {
            let args = RemoteArgs::for_machine(&self.machine, false)?;
            let (ssh, binary) = super::prepare(&args)?;
            self.bridge = Some(Bridge {
                ssh,
                binary,
                session: args.session,
                keys: None,
                log: self.log.clone(),
                cancel: Arc::new(AtomicBool::new(false)),
                terminal: Default::default(),
            });
        }
        // (ssh's messages go to the log: one that has grown is started again, so a
        // machine unreachable for days does not fill the runtime folder.)
        if std::fs::metadata(&self.log).is_ok_and(|m| m.len() > LOG_MAX) {
            let _ = std::fs::File::create(&self.log);
        }
        let bridge = self.bridge.as_mut().expect("made above");
        Ok(bridge.greet(&Hello::new(Role::Api, None))?)
    }

    /// Serves one connection until it ends; returns why it ended.
    fn serve(&mut self, greeted: Greeted) -> String {
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
            .name("herdr-link-read".into())
            .spawn(move || read_host(reader, gen, &tx, &watched));
        if let Err(e) = spawned {
            return format!("cannot start a thread: {e}");
        }
        self.write(json!({ "id": "s", "method": "events.subscribe" }));
        self.set_state(LinkState::Connected, Some(reply.version));
        let mut refresh_at = Some(Instant::now());
        let mut view: Vec<Option<Value>> = vec![None; VIEW_PARTS.len()];
        let mut rtt_sent = keepalive::rtt(&self.watched);
        loop {
            if refresh_at.is_some_and(|t| Instant::now() >= t) {
                refresh_at = None;
                for (id, method) in VIEW_PARTS {
                    self.write(json!({ "id": id, "method": method }));
                }
            }
            let wait = refresh_at.map_or(Duration::from_secs(1), |t| {
                t.saturating_duration_since(Instant::now())
            });
            let input = match self.rx.recv_timeout(wait) {
                Ok(input) => input,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => std::process::exit(0),
            };
            match input {
                Input::Cmd(ToLink::Call { call, request }) => {
                    let mut line = request;
                    if let Some(obj) = line.as_object_mut() {
                        obj.insert("id".into(), json!(format!("c{call}")));
                    }
                    self.write(line);
                }
                Input::Cmd(ToLink::Reconnect) => {
                    if let Some(brk) = keepalive::watch(&self.watched).breaker_take() {
                        brk();
                    }
                }
                Input::Line(g, line) if g == gen => {
                    let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    if let Some(event) = msg.get("event").and_then(Value::as_str) {
                        if changes_view(event) && refresh_at.is_none() {
                            refresh_at = Some(Instant::now() + REFRESH_AFTER);
                        }
                        continue;
                    }
                    let id = msg.get("id").and_then(Value::as_str).unwrap_or("");
                    if id == "p" {
                        keepalive::ponged(&self.watched);
                        let rtt = keepalive::rtt(&self.watched);
                        if rtt != rtt_sent {
                            rtt_sent = rtt;
                            self.set_state(LinkState::Connected, None);
                        }
                    } else if let Some(i) = VIEW_PARTS.iter().position(|(v, _)| *v == id) {
                        view[i] = Some(msg.get("result").cloned().unwrap_or(Value::Null));
                        if view.iter().all(Option::is_some) {
                            let parts: Vec<Value> =
                                view.iter_mut().filter_map(Option::take).collect();
                            send(&view_msg(parts));
                        }
                    } else if let Some(call) = id.strip_prefix('c').and_then(|n| n.parse().ok()) {
                        send(&reply_msg(call, msg));
                    }
                }
                Input::Ended(g, why) if g == gen => {
                    keepalive::watch(&self.watched).detach();
                    *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    return why;
                }
                Input::Line(..) | Input::Ended(..) => {}
            }
        }
    }

    fn write(&self, value: Value) {
        write_line(&self.writer, &value);
    }
}

/// Reads the host's lines until the connection ends (or the watchdog ends it).
fn read_host(reader: WatchedReader, gen: u64, tx: &mpsc::Sender<Input>, watched: &SharedWatch) {
    let mut reader = std::io::BufReader::new(reader);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
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

fn view_msg(parts: Vec<Value>) -> LinkMsg {
    let mut parts = parts.into_iter();
    let mut next = || parts.next().unwrap_or(Value::Null);
    let (workspaces, agents) = (next(), next());
    LinkMsg::View { workspaces, agents }
}

fn reply_msg(call: u64, msg: Value) -> LinkMsg {
    let error = msg.get("error").map(|e| RemoteError {
        code: e
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .into(),
        message: e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
    });
    LinkMsg::Reply {
        call,
        result: msg.get("result").cloned(),
        error,
    }
}
