//! `herdr workspace|tab|pane …` and `herdr events`: each subcommand is one API call
//! (docs/api.md), printed for people by default and as JSON with `--json`.
//!
//! Exit codes: 0 success; 1 error (one line on stderr); 2 usage error; 3 no server runs for
//! the session; 4 `pane wait` timed out.

use std::io::{BufRead, Write};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};

use crate::client::api::{ApiClient, RemoteError};
use crate::paths::SessionName;
use crate::protocol::exit;

#[derive(Debug, Args)]
pub struct Output {
    /// Print the result as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    List(Output),
    Create {
        #[arg(long)]
        cwd: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    Close {
        workspace: Option<String>,
    },
    Rename {
        #[arg(long)]
        workspace: Option<String>,
        name: String,
    },
    Focus {
        workspace: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TabCommand {
    List {
        #[arg(long)]
        workspace: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    Create {
        #[arg(long)]
        workspace: Option<String>,
        #[arg(long)]
        cwd: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    Close {
        tab: Option<String>,
    },
    Rename {
        #[arg(long)]
        tab: Option<String>,
        name: String,
    },
    Focus {
        tab: String,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SplitDirection {
    Right,
    Down,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Edge {
    Left,
    Right,
    Up,
    Down,
}

/// The pane a command acts on: `--pane ID`, else the pane this command runs in
/// (`$HERDR_PANE`), else the focused pane.
#[derive(Debug, Args)]
pub struct Target {
    #[arg(long, value_name = "ID")]
    pub(super) pane: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PaneCommand {
    List {
        #[arg(long)]
        workspace: Option<String>,
        #[arg(long)]
        tab: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    Get {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        out: Output,
    },
    /// Split a pane; with `-- COMMAND ARGS…` the new pane runs that program.
    Split {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value = "right")]
        direction: SplitDirection,
        #[arg(long)]
        cwd: Option<String>,
        #[command(flatten)]
        out: Output,
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    Close {
        #[command(flatten)]
        target: Target,
    },
    Focus {
        #[command(flatten)]
        target: Target,
    },
    /// Toggle zoom (or force it with --on/--off).
    Zoom {
        #[command(flatten)]
        target: Target,
        #[arg(long, conflicts_with = "off")]
        on: bool,
        #[arg(long)]
        off: bool,
    },
    Resize {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum)]
        direction: Edge,
        #[arg(long, default_value_t = 1)]
        cells: u16,
    },
    Rename {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    /// Send text as typed (no Enter).
    Send {
        #[command(flatten)]
        target: Target,
        text: String,
    },
    /// Send named keys: Enter, C-c, Up, M-x, F5, …
    Keys {
        #[command(flatten)]
        target: Target,
        #[arg(required = true)]
        keys: Vec<String>,
    },
    /// Send text, then Enter (Enter lands after the text and before later input).
    Submit {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        delay_ms: Option<u64>,
        text: String,
    },
    /// Print the visible screen, or the last N lines including scrollback.
    Read {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        lines: Option<u64>,
        /// Keep colours and attributes as ANSI sequences.
        #[arg(long)]
        ansi: bool,
        #[command(flatten)]
        out: Output,
    },
    /// Wait until the output matches a regex, the program exits, or the agent state is S.
    Wait {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_name = "REGEX", group = "cond", required = true)]
        output: Option<String>,
        #[arg(long, group = "cond")]
        exit: bool,
        #[arg(long, value_name = "STATE", group = "cond")]
        agent_state: Option<String>,
        /// Give up after this many seconds (exit code 4).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<f64>,
        #[command(flatten)]
        out: Output,
    },
}

fn connect(session: &SessionName) -> anyhow::Result<Result<ApiClient, i32>> {
    match ApiClient::connect(session)? {
        Some(c) => Ok(Ok(c)),
        None => {
            eprintln!("herdr: no herdr server is running for session {session} (start one with `herdr` or `herdr server start`)");
            Ok(Err(exit::NO_SERVER))
        }
    }
}

/// Puts optional string fields into a params object.
fn params(fields: &[(&str, Option<&str>)]) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in fields {
        if let Some(v) = v {
            m.insert((*k).into(), Value::String((*v).into()));
        }
    }
    m
}

pub(super) fn target(t: &Target) -> Map<String, Value> {
    let pane = t
        .pane
        .clone()
        .or_else(|| std::env::var("HERDR_PANE").ok().filter(|p| !p.is_empty()));
    params(&[("pane", pane.as_deref())])
}

/// Calls one method and prints its result with `human`.
pub(super) fn call(
    session: &SessionName,
    method: &str,
    p: Map<String, Value>,
    json_out: bool,
    human: fn(&Value) -> String,
) -> anyhow::Result<i32> {
    let mut api = match connect(session)? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    match api.call(method, Value::Object(p)) {
        Ok(v) => {
            let text = if json_out {
                serde_json::to_string_pretty(&v)?
            } else {
                human(&v)
            };
            if !text.is_empty() {
                // A reader that went away (`| head`) is not an error.
                let mut out = std::io::stdout();
                match writeln!(out, "{text}").and_then(|_| out.flush()) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                    _ => {}
                }
            }
            Ok(0)
        }
        Err(e) => match e.downcast_ref::<RemoteError>() {
            Some(r) if r.code == "timeout" => {
                eprintln!("herdr: timed out: {}", r.message);
                Ok(exit::TIMEOUT)
            }
            _ => Err(e),
        },
    }
}

pub(super) fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn id_only(v: &Value) -> String {
    s(v, "id")
}

pub(super) fn nothing(_: &Value) -> String {
    String::new()
}

pub(super) fn rows(v: &Value, row: fn(&Value) -> String) -> String {
    v.as_array()
        .map(|a| a.iter().map(row).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

fn star(v: &Value) -> &'static str {
    if v.get("focused").and_then(Value::as_bool) == Some(true) {
        "*"
    } else {
        " "
    }
}

pub fn workspace(session: &SessionName, cmd: WorkspaceCommand) -> anyhow::Result<i32> {
    match cmd {
        WorkspaceCommand::List(o) => call(session, "workspace.list", Map::new(), o.json, |v| {
            rows(v, |w| {
                format!(
                    "{}{} {:<20} {} tab(s), {} pane(s)",
                    star(w),
                    s(w, "id"),
                    s(w, "name"),
                    w["tabs"].as_array().map_or(0, Vec::len),
                    s(w, "panes")
                )
            })
        }),
        WorkspaceCommand::Create { cwd, name, out } => call(
            session,
            "workspace.create",
            params(&[("cwd", abs(cwd).as_deref()), ("name", name.as_deref())]),
            out.json,
            id_only,
        ),
        WorkspaceCommand::Close { workspace } => call(
            session,
            "workspace.close",
            params(&[("workspace", workspace.as_deref())]),
            false,
            nothing,
        ),
        WorkspaceCommand::Rename { workspace, name } => call(
            session,
            "workspace.rename",
            params(&[("workspace", workspace.as_deref()), ("name", Some(&name))]),
            false,
            nothing,
        ),
        WorkspaceCommand::Focus { workspace } => call(
            session,
            "workspace.focus",
            params(&[("workspace", Some(&workspace))]),
            false,
            nothing,
        ),
    }
}

pub fn tab(session: &SessionName, cmd: TabCommand) -> anyhow::Result<i32> {
    match cmd {
        TabCommand::List { workspace, out } => call(
            session,
            "tab.list",
            params(&[("workspace", workspace.as_deref())]),
            out.json,
            |v| {
                rows(v, |t| {
                    format!(
                        "{}{} {} {:<24} {} pane(s)",
                        star(t),
                        s(t, "id"),
                        s(t, "workspace"),
                        s(t, "title"),
                        t["panes"].as_array().map_or(0, Vec::len)
                    )
                })
            },
        ),
        TabCommand::Create {
            workspace,
            cwd,
            name,
            out,
        } => call(
            session,
            "tab.create",
            params(&[
                ("workspace", workspace.as_deref()),
                ("cwd", abs(cwd).as_deref()),
                ("name", name.as_deref()),
            ]),
            out.json,
            id_only,
        ),
        TabCommand::Close { tab } => call(
            session,
            "tab.close",
            params(&[("tab", tab.as_deref())]),
            false,
            nothing,
        ),
        TabCommand::Rename { tab, name } => call(
            session,
            "tab.rename",
            params(&[("tab", tab.as_deref()), ("name", Some(&name))]),
            false,
            nothing,
        ),
        TabCommand::Focus { tab } => call(
            session,
            "tab.focus",
            params(&[("tab", Some(&tab))]),
            false,
            nothing,
        ),
    }
}

/// Relative folders are taken relative to where the command runs, not the server.
fn abs(dir: Option<String>) -> Option<String> {
    let dir = dir?;
    let p = std::path::Path::new(&dir);
    if p.is_absolute() {
        return Some(dir);
    }
    std::env::current_dir()
        .ok()
        .map(|c| c.join(p).display().to_string())
        .or(Some(dir))
}

fn pane_row(p: &Value) -> String {
    format!(
        "{}{:<4} {} {} {:>3}x{:<3} {:<20} {}",
        star(p),
        s(p, "id"),
        s(p, "workspace"),
        s(p, "tab"),
        s(p, "cols"),
        s(p, "rows"),
        s(p, "command"),
        s(p, "cwd")
    )
}

pub fn pane(session: &SessionName, cmd: PaneCommand) -> anyhow::Result<i32> {
    match cmd {
        PaneCommand::List {
            workspace,
            tab,
            out,
        } => call(
            session,
            "pane.list",
            params(&[("workspace", workspace.as_deref()), ("tab", tab.as_deref())]),
            out.json,
            |v| rows(v, pane_row),
        ),
        PaneCommand::Get { target: t, out } => {
            call(session, "pane.get", target(&t), out.json, pane_row)
        }
        PaneCommand::Split {
            target: t,
            direction,
            cwd,
            out,
            command,
        } => {
            let mut p = target(&t);
            p.insert(
                "direction".into(),
                json!(match direction {
                    SplitDirection::Right => "right",
                    SplitDirection::Down => "down",
                }),
            );
            if let Some(c) = abs(cwd) {
                p.insert("cwd".into(), json!(c));
            }
            if !command.is_empty() {
                p.insert("command".into(), json!(command));
            }
            call(session, "pane.split", p, out.json, id_only)
        }
        PaneCommand::Close { target: t } => call(session, "pane.close", target(&t), false, nothing),
        PaneCommand::Focus { target: t } => call(session, "pane.focus", target(&t), false, nothing),
        PaneCommand::Zoom { target: t, on, off } => {
            let mut p = target(&t);
            if on || off {
                p.insert("zoom".into(), json!(on));
            }
            call(session, "pane.zoom", p, false, nothing)
        }
        PaneCommand::Resize {
            target: t,
            direction,
            cells,
        } => {
            let mut p = target(&t);
            let d = match direction {
                Edge::Left => "left",
                Edge::Right => "right",
                Edge::Up => "up",
                Edge::Down => "down",
            };
            p.insert("direction".into(), json!(d));
            p.insert("cells".into(), json!(cells));
            call(session, "pane.resize", p, false, nothing)
        }
        PaneCommand::Rename { target: t, name } => {
            let mut p = target(&t);
            p.insert("name".into(), json!(name));
            call(session, "pane.rename", p, false, nothing)
        }
        PaneCommand::Send { target: t, text } => {
            let mut p = target(&t);
            p.insert("text".into(), json!(text));
            call(session, "pane.send", p, false, nothing)
        }
        PaneCommand::Keys { target: t, keys } => {
            let mut p = target(&t);
            p.insert("keys".into(), json!(keys));
            call(session, "pane.keys", p, false, nothing)
        }
        PaneCommand::Submit {
            target: t,
            delay_ms,
            text,
        } => {
            let mut p = target(&t);
            p.insert("text".into(), json!(text));
            if let Some(d) = delay_ms {
                p.insert("delay_ms".into(), json!(d));
            }
            call(session, "pane.submit", p, false, nothing)
        }
        PaneCommand::Read {
            target: t,
            lines,
            ansi,
            out,
        } => {
            let mut p = target(&t);
            if let Some(n) = lines {
                p.insert("lines".into(), json!(n));
            }
            p.insert("ansi".into(), json!(ansi));
            call(session, "pane.read", p, out.json, |v| {
                s(v, "text").trim_end_matches('\n').to_string()
            })
        }
        PaneCommand::Wait {
            target: t,
            output,
            exit,
            agent_state,
            timeout,
            out,
        } => {
            let mut p = target(&t);
            if let Some(re) = output {
                p.insert("output".into(), json!(re));
            }
            if exit {
                p.insert("exit".into(), json!(true));
            }
            if let Some(st) = agent_state {
                p.insert("agent_state".into(), json!(st));
            }
            if let Some(secs) = timeout {
                if !(secs.is_finite() && secs >= 0.0) {
                    anyhow::bail!("--timeout must be a number of seconds, got {secs}");
                }
                p.insert("timeout_ms".into(), json!((secs * 1000.0) as u64));
            }
            call(session, "pane.wait", p, out.json, |v| {
                if v.get("exited").is_some() {
                    match v.get("status").and_then(Value::as_i64) {
                        Some(code) => format!("exited with status {code}"),
                        None => "exited (ended by a signal)".to_string(),
                    }
                } else if v.get("agent_state").is_some() {
                    s(v, "agent_state")
                } else {
                    s(v, "line")
                }
            })
        }
    }
}

/// Subscribes and prints events until the server goes away.
pub fn events(session: &SessionName, json_out: bool) -> anyhow::Result<i32> {
    let mut api = match connect(session)? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    api.call("events.subscribe", json!({}))?;
    let mut stdout = std::io::stdout();
    for line in api.lines() {
        let line = line?;
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let text = if json_out {
            line
        } else {
            let mut t = format!("{} {}", s(&v, "event"), s(&v, "id"));
            for k in ["name", "title", "status"] {
                if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
                    t.push_str(&format!(" {k}={x}"));
                }
            }
            t
        };
        if writeln!(stdout, "{text}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    Ok(0)
}

impl ApiClient {
    /// The remaining lines of the connection (events after a subscribe).
    pub fn lines(self) -> impl Iterator<Item = std::io::Result<String>> {
        self.into_reader().lines()
    }
}
