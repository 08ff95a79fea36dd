//! `herdr machine link NAME`: one saved machine's link, run by the local server as a
//! child process of its own (so a host that hangs, floods or vanishes holds up nothing of
//! the server's: it reads this process's lines when they come). The connection is kept
//! up by `host` (the roaming rules).
//!
//! It tells the server (protocol/machine.rs) its state, the round trip, what the host's
//! session holds (after each change the host announces: never output) and the answers to
//! the calls it forwards. Calls made while the host is unreachable are refused at once.

use std::io::{BufRead, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::host::{write_line, After, Host, Input, Role, SharedOut};
use super::Error;
use crate::protocol::machine::{LinkMsg, LinkState, RemoteError, ToLink, LINK_PROTOCOL, MAX_LINE};

/// After the host announced a change, the view is asked for again this much later (a
/// burst of changes costs one refresh).
const REFRESH_AFTER: Duration = Duration::from_millis(100);

pub fn run(name: &str) -> Result<i32, Error> {
    let machine = crate::machine::load()?.get(name)?.clone();
    send(&LinkMsg::Hello {
        protocol: LINK_PROTOCOL,
    });
    let mut host = Host::new(machine.clone(), &format!("ssh-machine-{name}.log"))?;
    let commands = host.sender();
    std::thread::Builder::new()
        .name("herdr-link-in".into())
        .spawn(move || read_commands(commands))?;
    let mut linker = Linker {
        name: machine.name,
        state: None,
        error: None,
        rtt: None,
        refresh_at: None,
        view: vec![None; VIEW_PARTS.len()],
    };
    host.run(&mut linker)
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
fn read_commands(tx: mpsc::SyncSender<Input<ToLink>>) {
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

/// The link's side of the connection: its state told to the server, the host's view
/// kept fresh, calls forwarded.
struct Linker {
    name: String,
    state: Option<LinkState>,
    /// Why the last attempt or connection failed.
    error: Option<String>,
    rtt: Option<Duration>,
    /// When the view is asked for next (after a change the host announced).
    refresh_at: Option<Instant>,
    /// The answers of a view refresh gathered so far, one per list.
    view: Vec<Option<Value>>,
}

/// What a view refresh gathers before it is sent: one answer per list.
const VIEW_PARTS: [(&str, &str); 3] = [
    ("v:w", "workspace.list"),
    ("v:a", "agent.list"),
    ("v:t", "tab.list"),
];

/// The events after which the view is asked for again: what changes the workspaces
/// (their names, their panes) or the agents. Never output, titles or focus.
fn changes_view(event: &str) -> bool {
    event.starts_with("workspace.")
        || matches!(
            event,
            "pane.created"
                | "pane.closed"
                | "pane.exited"
                | "pane.agent"
                | "tab.created"
                | "tab.closed"
                | "tab.renamed"
        )
}

impl Linker {
    fn set_state(&mut self, state: LinkState, version: Option<String>) {
        self.state = Some(state);
        let connected = state == LinkState::Connected;
        send(&LinkMsg::State {
            state,
            error: (!connected).then(|| self.error.clone()).flatten(),
            rtt_ms: self.rtt.map(|d| d.as_secs_f64() * 1000.0),
            version,
        });
    }

    fn refuse(&self, call: u64) {
        let why = self.error.as_deref().unwrap_or("not connected yet");
        send(&LinkMsg::Reply {
            call,
            result: None,
            error: Some(RemoteError {
                code: "unreachable".into(),
                message: format!("machine {} is unreachable: {why}", self.name),
            }),
        });
    }
}

impl Role for Linker {
    type Cmd = ToLink;

    fn connecting(&mut self) {
        if self.state != Some(LinkState::Unreachable) {
            self.set_state(LinkState::Connecting, None);
        }
    }

    fn connected(&mut self, out: &SharedOut, version: String) {
        write_line(out, &json!({ "id": "s", "method": "events.subscribe" }));
        self.set_state(LinkState::Connected, Some(version));
        self.refresh_at = Some(Instant::now());
        self.view = vec![None; VIEW_PARTS.len()];
    }

    fn down(&mut self, why: &str) {
        self.error = Some(why.to_string());
        self.refresh_at = None;
        self.set_state(LinkState::Unreachable, None);
    }

    fn command(&mut self, out: Option<&SharedOut>, cmd: ToLink) -> After {
        match (cmd, out) {
            (ToLink::Reconnect, _) => After::Reconnect,
            (ToLink::Call { call, .. }, None) => {
                self.refuse(call);
                After::Nothing
            }
            (ToLink::Call { call, request }, Some(out)) => {
                let mut line = request;
                if let Some(obj) = line.as_object_mut() {
                    obj.insert("id".into(), json!(format!("c{call}")));
                }
                write_line(out, &line);
                After::Nothing
            }
        }
    }

    fn line(&mut self, _out: &SharedOut, msg: Value) {
        if let Some(event) = msg.get("event").and_then(Value::as_str) {
            if changes_view(event) && self.refresh_at.is_none() {
                self.refresh_at = Some(Instant::now() + REFRESH_AFTER);
            }
            return;
        }
        let id = msg.get("id").and_then(Value::as_str).unwrap_or("");
        if let Some(i) = VIEW_PARTS.iter().position(|(v, _)| *v == id) {
            self.view[i] = Some(msg.get("result").cloned().unwrap_or(Value::Null));
            if self.view.iter().all(Option::is_some) {
                let parts: Vec<Value> = self.view.iter_mut().filter_map(Option::take).collect();
                send(&view_msg(parts));
            }
        } else if let Some(call) = id.strip_prefix('c').and_then(|n| n.parse().ok()) {
            send(&reply_msg(call, msg));
        }
    }

    fn round_trip(&mut self, rtt: Option<Duration>) {
        self.rtt = rtt;
        self.set_state(LinkState::Connected, None);
    }

    fn deadline(&self) -> Option<Instant> {
        self.refresh_at
    }

    fn due(&mut self, out: &SharedOut) {
        self.refresh_at = None;
        for (id, method) in VIEW_PARTS {
            write_line(out, &json!({ "id": id, "method": method }));
        }
    }
}

fn view_msg(parts: Vec<Value>) -> LinkMsg {
    let mut parts = parts.into_iter();
    let mut next = || parts.next().unwrap_or(Value::Null);
    let (workspaces, agents, tabs) = (next(), next(), next());
    LinkMsg::View {
        workspaces,
        agents,
        tabs,
    }
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
