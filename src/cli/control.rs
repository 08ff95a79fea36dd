//! `herdr workspace|tab|pane …` and `herdr events`: each subcommand is one API call
//! (docs/api.md), printed for people by default and as JSON with `--json`.
//!
//! Exit codes: 0 success; 1 error (one line on stderr); 2 usage error; 3 no server runs for
//! the session; 4 `pane wait` timed out.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{BufRead, Write};

use serde_json::Value;

use crate::client::api::{self, ApiClient};
use crate::model::ids::PaneNo;
use crate::paths::SessionName;
use crate::protocol::api::{self as req, NoParams, PublicId, Request, Strings};
use crate::protocol::exit;

pub use super::control_args::{
    Edge, Output, PaneCommand, SplitDirection, TabCommand, Target, WorkspaceCommand,
};

fn connect(session: &SessionName) -> anyhow::Result<Result<ApiClient, i32>> {
    match ApiClient::connect(session)? {
        Some(c) => Ok(Ok(c)),
        None => {
            eprintln!("herdr: no herdr server is running for session {session} (start one with `herdr` or `herdr server start`)");
            Ok(Err(exit::NO_SERVER))
        }
    }
}

/// The id a user typed (`p3`, `3`); one that is no such id stops the command here.
pub(super) fn id<T: PublicId>(text: &str) -> anyhow::Result<T> {
    T::parse(text).ok_or_else(|| anyhow::anyhow!("{text:?} is not {}", T::WHAT))
}

fn opt_id<T: PublicId>(text: Option<String>) -> anyhow::Result<Option<T>> {
    text.as_deref().map(id).transpose()
}

/// The pane of `--pane`, else the one this command runs in (`$HERDR_PANE`), else none
/// (the server takes the focused one).
pub(super) fn target(t: &Target) -> anyhow::Result<Option<PaneNo>> {
    let pane = t
        .pane
        .clone()
        .or_else(|| std::env::var("HERDR_PANE").ok().filter(|p| !p.is_empty()));
    opt_id(pane)
}

/// Sends one request and prints its result with `human`.
pub(super) fn call(
    session: &SessionName,
    request: Request,
    json_out: bool,
    human: fn(&Value) -> String,
) -> anyhow::Result<i32> {
    if !json_out {
        return call_coded(session, request, json_out, human, |_| 0);
    }
    // As the server wrote it, laid out (not made into values and written again).
    call_raw(session, request, |raw| Ok(super::pretty::pretty(raw)))
}

/// Sends one request and prints what `show` makes of the result's JSON text as the
/// server wrote it.
fn call_raw(
    session: &SessionName,
    request: Request,
    show: fn(&str) -> anyhow::Result<String>,
) -> anyhow::Result<i32> {
    let mut api = match connect(session)? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    match api.request_raw(&request) {
        Ok(raw) => {
            print_out(&show(&raw)?)?;
            Ok(0)
        }
        Err(e) => answer_error(e),
    }
}

/// Prints `text` and a newline; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) -> anyhow::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout();
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// The exit for a request that got no result: a timeout's own code, else the error.
fn answer_error(e: api::Error) -> anyhow::Result<i32> {
    match e {
        api::Error::Remote(r) if r.code == "timeout" => {
            eprintln!("herdr: timed out: {}", r.message);
            Ok(exit::TIMEOUT)
        }
        e => Err(e.into()),
    }
}

/// [`call`], exiting with the code `code` reads off the result.
fn call_coded(
    session: &SessionName,
    request: Request,
    json_out: bool,
    human: fn(&Value) -> String,
    code: fn(&Value) -> i32,
) -> anyhow::Result<i32> {
    let mut api = match connect(session)? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    match api.request(&request) {
        Ok(v) => {
            let text = if json_out {
                serde_json::to_string_pretty(&v)?
            } else {
                human(&v)
            };
            print_out(&text)?;
            Ok(code(&v))
        }
        Err(e) => answer_error(e),
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
    let (request, json_out, human): (_, _, fn(&Value) -> String) = match cmd {
        WorkspaceCommand::List(o) => (Request::WorkspaceList(NoParams {}), o.json, |v| {
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
        WorkspaceCommand::Create { cwd, name, out } => (
            Request::WorkspaceCreate(req::WorkspaceCreate {
                name,
                cwd: abs(cwd.cwd).map(Into::into),
            }),
            out.json,
            id_only,
        ),
        WorkspaceCommand::Close { workspace } => (
            Request::WorkspaceClose(req::WorkspaceTarget {
                workspace: opt_id(workspace)?,
            }),
            false,
            nothing,
        ),
        WorkspaceCommand::Rename { workspace, name } => (
            Request::WorkspaceRename(req::WorkspaceRename {
                workspace: opt_id(workspace)?,
                name,
            }),
            false,
            nothing,
        ),
        WorkspaceCommand::Focus { workspace } => (
            Request::WorkspaceFocus(req::WorkspaceTarget {
                workspace: Some(id(&workspace)?),
            }),
            false,
            nothing,
        ),
    };
    call(session, request, json_out, human)
}

pub fn tab(session: &SessionName, cmd: TabCommand) -> anyhow::Result<i32> {
    let (request, json_out, human): (_, _, fn(&Value) -> String) = match cmd {
        TabCommand::List { workspace, out } => (
            Request::TabList(req::TabList {
                workspace: opt_id(workspace)?,
            }),
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
        } => (
            Request::TabCreate(req::TabCreate {
                workspace: opt_id(workspace)?,
                cwd: abs(cwd.cwd).map(Into::into),
                name,
            }),
            out.json,
            id_only,
        ),
        TabCommand::Close { tab } => (
            Request::TabClose(req::TabTarget {
                tab: opt_id(tab)?,
                workspace: None,
            }),
            false,
            nothing,
        ),
        TabCommand::Rename { tab, name } => (
            Request::TabRename(req::TabRename {
                tab: opt_id(tab)?,
                workspace: None,
                name,
            }),
            false,
            nothing,
        ),
        TabCommand::Focus { tab } => (
            Request::TabFocus(req::TabTarget {
                tab: Some(id(&tab)?),
                workspace: None,
            }),
            false,
            nothing,
        ),
    };
    call(session, request, json_out, human)
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

/// What a pane's line shows of it, read off `pane.get`/`pane.list`'s JSON text without
/// making values of the rest (a listing of 1,000 panes spent more time building and freeing
/// them than the server took to answer).
#[derive(serde::Deserialize)]
struct PaneLine<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    workspace: Cow<'a, str>,
    #[serde(borrow)]
    tab: Cow<'a, str>,
    cols: u16,
    rows: u16,
    #[serde(borrow)]
    command: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(default)]
    focused: bool,
}

impl std::fmt::Display for PaneLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{:<4} {} {} {:>3}x{:<3} {:<20} {}",
            if self.focused { "*" } else { " " },
            self.id,
            self.workspace,
            self.tab,
            self.cols,
            self.rows,
            self.command.as_deref().unwrap_or(""),
            self.cwd.as_deref().unwrap_or("")
        )
    }
}

/// `herdr pane get` for people: its line.
fn pane_line(raw: &str) -> anyhow::Result<String> {
    let line: PaneLine = serde_json::from_str(raw).map_err(unreadable)?;
    Ok(line.to_string())
}

/// `herdr pane list` for people: a line a pane.
fn pane_lines(raw: &str) -> anyhow::Result<String> {
    let lines: Vec<PaneLine> = serde_json::from_str(raw).map_err(unreadable)?;
    let mut text = String::with_capacity(64 * lines.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        write!(text, "{line}")?;
    }
    Ok(text)
}

fn unreadable(e: serde_json::Error) -> anyhow::Error {
    anyhow::anyhow!("the server described a pane in a way this herdr does not read: {e}")
}

pub fn pane(session: &SessionName, cmd: PaneCommand) -> anyhow::Result<i32> {
    let (request, json_out, human): (_, _, fn(&Value) -> String) = match cmd {
        PaneCommand::List {
            workspace,
            tab,
            out,
        } => {
            let request = Request::PaneList(req::PaneList {
                workspace: opt_id(workspace)?,
                tab: opt_id(tab)?,
            });
            if !out.json {
                return call_raw(session, request, pane_lines);
            }
            (request, true, nothing)
        }
        PaneCommand::Get { target: t, out } => {
            let request = Request::PaneGet(req::PaneTarget { pane: target(&t)? });
            if !out.json {
                return call_raw(session, request, pane_line);
            }
            (request, true, nothing)
        }
        PaneCommand::Split {
            target: t,
            direction,
            cwd,
            out,
            command,
        } => (
            Request::PaneSplit(req::PaneSplit {
                pane: target(&t)?,
                direction: Some(match direction {
                    SplitDirection::Right => req::SplitDirection::Right,
                    SplitDirection::Down => req::SplitDirection::Down,
                }),
                cwd: abs(cwd).map(Into::into),
                command: (!command.is_empty()).then_some(Strings(command)),
            }),
            out.json,
            id_only,
        ),
        PaneCommand::Close { target: t } => (
            Request::PaneClose(req::PaneTarget { pane: target(&t)? }),
            false,
            nothing,
        ),
        PaneCommand::Focus { target: t } => (
            Request::PaneFocus(req::PaneTarget { pane: target(&t)? }),
            false,
            nothing,
        ),
        PaneCommand::Zoom { target: t, on, off } => (
            Request::PaneZoom(req::PaneZoom {
                pane: target(&t)?,
                zoom: (on || off).then_some(on),
            }),
            false,
            nothing,
        ),
        PaneCommand::Resize {
            target: t,
            direction,
            cells,
        } => (
            Request::PaneResize(req::PaneResize {
                pane: target(&t)?,
                direction: match direction {
                    Edge::Left => req::Edge::Left,
                    Edge::Right => req::Edge::Right,
                    Edge::Up => req::Edge::Up,
                    Edge::Down => req::Edge::Down,
                },
                cells: Some(cells.into()),
            }),
            false,
            nothing,
        ),
        PaneCommand::Rename { target: t, name } => (
            Request::PaneRename(req::PaneRename {
                pane: target(&t)?,
                name,
            }),
            false,
            nothing,
        ),
        PaneCommand::Send { target: t, text } => (
            Request::PaneSend(req::PaneSend {
                pane: target(&t)?,
                text,
            }),
            false,
            nothing,
        ),
        PaneCommand::Paste { target: t } => (
            Request::PanePaste(req::PaneTarget { pane: target(&t)? }),
            false,
            nothing,
        ),
        PaneCommand::Keys { target: t, keys } => (
            Request::PaneKeys(req::PaneKeys {
                pane: target(&t)?,
                keys: Strings(keys),
            }),
            false,
            nothing,
        ),
        PaneCommand::Submit {
            target: t,
            delay_ms,
            text,
        } => (
            Request::PaneSubmit(req::PaneSubmit {
                pane: target(&t)?,
                text,
                delay_ms,
            }),
            false,
            nothing,
        ),
        PaneCommand::Read {
            target: t,
            lines,
            ansi,
            out,
        } => (
            Request::PaneRead(req::PaneRead {
                pane: target(&t)?,
                lines,
                ansi,
            }),
            out.json,
            |v| s(v, "text").trim_end_matches('\n').to_string(),
        ),
        PaneCommand::Wait {
            target: t,
            output,
            exit,
            agent_state,
            timeout,
            out,
        } => {
            let timeout_ms = match timeout {
                Some(secs) if !(secs.is_finite() && secs >= 0.0) => {
                    anyhow::bail!("--timeout must be a number of seconds, got {secs}")
                }
                Some(secs) => Some((secs * 1000.0) as u64),
                None => None,
            };
            let wait = req::PaneWait {
                pane: target(&t)?,
                output,
                exit,
                agent_state,
                timeout_ms,
            };
            let coded = wait.exit;
            if coded {
                let request = Request::PaneWait(wait);
                return call_coded(session, request, out.json, wait_row, exit_status);
            }
            (Request::PaneWait(wait), out.json, wait_row)
        }
    };
    call(session, request, json_out, human)
}

/// What `pane wait --exit` exits with: the program's own status (0 to 255), 1 when a
/// signal ended it (it has no status then).
fn exit_status(v: &Value) -> i32 {
    v.get("status")
        .and_then(Value::as_i64)
        .map_or(1, |c| c.clamp(0, 255) as i32)
}

/// What `pane wait` prints: the line that matched, the exit status or the agent's state.
fn wait_row(v: &Value) -> String {
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
}

/// Subscribes and prints events until the server goes away.
pub fn events(session: &SessionName, json_out: bool) -> anyhow::Result<i32> {
    let mut api = match connect(session)? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    api.request(&Request::EventsSubscribe(NoParams {}))?;
    for line in api.lines() {
        let line = line?;
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if !print_event(&v, json_out) {
            break;
        }
    }
    Ok(0)
}

/// `herdr --machine NAME events`: that machine's, over a connection of its own.
pub fn machine_events(machine: &str, json_out: bool) -> anyhow::Result<i32> {
    Ok(crate::remote::machine_events::run(machine, |v| {
        print_event(v, json_out)
    })?)
}

/// Prints one event (`json_out`: as it came); false once stdout is gone.
fn print_event(v: &Value, json_out: bool) -> bool {
    let text = if json_out {
        v.to_string()
    } else {
        let mut t = format!("{} {}", s(v, "event"), s(v, "id"));
        for k in ["name", "title", "status"] {
            if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
                t.push_str(&format!(" {k}={x}"));
            }
        }
        t
    };
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{text}")
        .and_then(|_| stdout.flush())
        .is_ok()
}

impl ApiClient {
    /// The remaining lines of the connection (events after a subscribe).
    pub fn lines(self) -> impl Iterator<Item = std::io::Result<String>> {
        self.into_reader().lines()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::WorkspaceNo;

    #[test]
    fn a_typed_id_is_parsed_before_anything_is_sent() {
        assert_eq!(id::<PaneNo>("p3").unwrap(), PaneNo(3));
        assert_eq!(
            opt_id::<WorkspaceNo>(Some("2".into())).unwrap(),
            Some(WorkspaceNo(2))
        );
        assert_eq!(opt_id::<WorkspaceNo>(None).unwrap(), None);
        let e = id::<PaneNo>("t3").unwrap_err().to_string();
        assert_eq!(e, "\"t3\" is not a pane id like p3");
    }
}
