//! `herdr machine view NAME PANE`: one pane of a saved machine, shown in the terminal this
//! runs in — a pane of the local server, which starts it when a machine's pane is opened
//! there (`machine.open`) and keeps that pane's emulator from answering queries (the
//! host's did). The host's server mirrors the pane (`pane.stream`): its program's bytes
//! come as they were written, so the emulator here — with its scrollback, copy mode and
//! search — shows what the host's shows, in the modes the program set; keys and mouse
//! reports, encoded here for those modes, go back as they are (`pane.write`). The pane
//! is laid out at this terminal's size while it is mirrored, and follows its resizes.
//!
//! A pane nobody here looks at is paused: the local server sends it a SIGWINCH when it
//! is shown or hidden, it asks that server whether it is shown, and the host holds back
//! what the program prints (bounded) until it is shown again.
//!
//! The connection is kept up by `host` (the roaming rules). While the host is
//! unreachable, keys typed are refused with a bell (the local server, which sees the
//! machine unreachable through its link, says so over the pane's last row and refuses
//! them itself); nothing is written to the terminal, so once the connection is back the
//! mirror goes on from where it stood: the host sends what its program printed since, or
//! the pane's state when that is no longer kept.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::mpsc;

use serde_json::{json, Value};

use super::host::{write_line, After, Host, Input, Role, SharedOut};
use super::Error;
use crate::protocol::base64;

/// Keys read from this terminal in one piece at most.
const KEYS_PIECE: usize = 16 << 10;

/// What the terminal here sends.
enum Cmd {
    Keys(Vec<u8>),
    Resize,
}

/// `pane`: the host's public pane id (`p3`); None: the pane focused there when the mirror
/// starts (the same one after a reconnect).
pub fn run(name: &str, pane: Option<&str>) -> Result<i32, Error> {
    let machine = crate::machine::load()?.get(name)?.clone();
    let mut host = Host::new(
        machine,
        // (One log per machine's pane, not per run: started again past 1 MiB, never left
        // behind by the runs before.)
        &format!("ssh-view-{name}-{}.log", pane.unwrap_or("focused")),
    )?;
    let keys = host.sender();
    std::thread::Builder::new()
        .name("herdr-view-keys".into())
        .spawn(move || read_keys(keys))?;
    let resizes = host.sender();
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGWINCH])?;
    std::thread::Builder::new()
        .name("herdr-view-winch".into())
        .spawn(move || {
            for _ in signals.forever() {
                if resizes.send(Input::Cmd(Cmd::Resize)).is_err() {
                    return;
                }
            }
        })?;
    if crate::sys::tty::is_tty(std::io::stdin().as_fd()) {
        crossterm::terminal::enable_raw_mode()?;
    }
    let mut viewer = Viewer {
        name: name.to_string(),
        pane: pane.map(String::from),
        paused: !shown_here(),
        pos: None,
        refused: false,
    };
    // (Until the mirror starts, which resets this terminal, it may say what it waits for.)
    notice(&format!("connecting to {name}…"));
    host.run(&mut viewer)
}

/// Ends this process, the terminal put back as it was.
fn leave(code: i32) -> ! {
    // (The mirrored program's modes, which a terminal other than a pane would keep.)
    put(b"\x1b[?1049l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[0m");
    let _ = crossterm::terminal::disable_raw_mode();
    std::process::exit(code)
}

/// Writes to the terminal here; one that is gone ends this process.
fn put(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// A line of herdr's own on the terminal, between the program's output.
fn notice(text: &str) {
    put(format!("\r\n\x1b[0;7m {text} \x1b[0m\r\n").as_bytes());
}

fn read_keys(tx: mpsc::SyncSender<Input<Cmd>>) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0; KEYS_PIECE];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) | Err(_) => leave(0),
            Ok(n) => {
                if tx.send(Input::Cmd(Cmd::Keys(buf[..n].to_vec()))).is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether this pane is on a client's screen in the local session it runs in (asked of
/// that session's server: `shown`); yes when that cannot be known.
fn shown_here() -> bool {
    use crate::protocol::api::{PaneTarget, PublicId, Request};
    let session = std::env::var("HERDR_SESSION").ok();
    let pane = std::env::var("HERDR_PANE").ok();
    let (Some(session), Some(pane)) = (session, pane) else {
        return true;
    };
    let (Ok(session), Some(pane)) = (
        crate::paths::SessionName::parse(&session),
        crate::model::ids::PaneNo::parse(&pane),
    ) else {
        return true;
    };
    let Ok(Some(mut api)) = crate::client::api::ApiClient::connect(&session) else {
        return true;
    };
    let request = Request::PaneGet(PaneTarget { pane: Some(pane) });
    api.request(&request)
        .ok()
        .and_then(|v| v.get("shown").and_then(serde_json::Value::as_bool))
        .unwrap_or(true)
}

/// The terminal's size, rows and columns.
fn size() -> (u16, u16) {
    match crate::sys::get_winsize(std::io::stdout().as_fd()) {
        Ok((rows, cols)) if rows > 0 && cols > 0 => (rows, cols),
        _ => (24, 80),
    }
}

struct Viewer {
    name: String,
    /// The pane mirrored: as asked, or as the host first answered.
    pane: Option<String>,
    /// Nobody sees this pane now: the host holds back what it prints.
    paused: bool,
    /// Where the mirror stands (`run` and `at` of the last `pane.data`): a connection
    /// made again asks to go on from there.
    pos: Option<Value>,
    /// Keys were refused before the mirror first started (said once).
    refused: bool,
}

impl Viewer {
    /// `gpu:p3`, or `gpu` before the host said which pane.
    fn label(&self) -> String {
        match &self.pane {
            Some(p) => format!("{}:{p}", self.name),
            None => self.name.clone(),
        }
    }

    fn stream(&self, out: &SharedOut) {
        let (rows, cols) = size();
        let params = json!({
            "pane": self.pane,
            "rows": rows,
            "cols": cols,
            "paused": self.paused,
            "resume": self.pos,
        });
        write_line(
            out,
            &json!({ "id": "s", "method": "pane.stream", "params": params }),
        );
    }
}

impl Role for Viewer {
    type Cmd = Cmd;

    fn connecting(&mut self) {}

    fn connected(&mut self, out: &SharedOut, _version: String) {
        self.stream(out);
    }

    fn down(&mut self, _why: &str) {
        // (Nothing is written here: the mirror comes back to where it stood, and this
        // pane's server says the machine is unreachable over its last row.)
    }

    fn command(&mut self, out: Option<&SharedOut>, cmd: Cmd) -> After {
        match (cmd, out) {
            (Cmd::Keys(bytes), Some(out)) => {
                let params = json!({ "pane": self.pane, "data": base64::encode(&bytes) });
                write_line(
                    out,
                    &json!({ "id": "w", "method": "pane.write", "params": params }),
                );
            }
            // Refused, with a bell (this pane's server says why once it sees the machine
            // unreachable too); never queued.
            (Cmd::Keys(_), None) => {
                put(b"\x07");
                // Before the mirror first started nothing of it is shown yet: saying so
                // costs nothing (the start resets this terminal).
                if self.pos.is_none() && !std::mem::replace(&mut self.refused, true) {
                    notice(&format!(
                        "keys not sent: not connected to {} yet",
                        self.name
                    ));
                }
            }
            // (A SIGWINCH: a new size, or this pane shown or hidden here.)
            (Cmd::Resize, out) => {
                self.paused = !shown_here();
                // (Without a connection, the mirror starts at the size of the moment.)
                if let Some(out) = out {
                    self.stream(out);
                }
            }
        }
        After::Nothing
    }

    fn line(&mut self, _out: &SharedOut, msg: Value) {
        match msg.get("event").and_then(Value::as_str) {
            Some("pane.data") => {
                let data = msg.get("data").and_then(Value::as_str).unwrap_or("");
                if let Some(bytes) = base64::decode(data) {
                    // A start resets this terminal: until its last line, there is no
                    // position to come back to.
                    if msg.get("start").is_some() {
                        self.pos = None;
                    }
                    put(&bytes);
                    if msg.get("at").is_some() {
                        self.pos = Some(json!({ "run": msg["run"], "at": msg["at"] }));
                    }
                }
                return;
            }
            Some("pane.closed") => {
                notice(&format!("{} closed", self.label()));
                leave(0);
            }
            Some(_) => return,
            None => {}
        }
        let Some(error) = msg.get("error") else {
            if msg.get("id").and_then(Value::as_str) == Some("s") && self.pane.is_none() {
                let id = msg.pointer("/result/id").and_then(Value::as_str);
                self.pane = id.map(String::from);
            }
            return;
        };
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        let code = error.get("code").and_then(Value::as_str).unwrap_or("");
        match msg.get("id").and_then(Value::as_str) {
            // The pane is not there (any more), or cannot be asked for: nothing to show.
            // (Anything else, such as a busy server, passes: the mirror stays as it is.)
            Some("s") if matches!(code, "not_found" | "pane_exited" | "invalid_params") => {
                notice(&format!("{}: {message}", self.label()));
                leave(1);
            }
            // A key its program has no room for yet.
            _ => put(b"\x07"),
        }
    }
}
