//! `herdr server start|stop|status|reload-config|handoff|run`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::ServerCommand;
use crate::client::api::ApiClient;
use crate::client::handoff::{hand_off, HandedOff};
use crate::paths::SessionName;
use crate::protocol::api::{NoParams, Request};
use crate::protocol::Role;

/// How long `server stop` waits for the server process to be gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

pub fn run(session: &SessionName, command: ServerCommand) -> anyhow::Result<i32> {
    match command {
        ServerCommand::Run { ready_fd } => {
            // Taken before anything else opens a descriptor (see `sys::take_inherited`).
            let ready = ready_fd
                .map(|fd| {
                    crate::sys::take_inherited(fd)
                        .map_err(|e| anyhow::anyhow!("--ready-fd {fd}: {e}"))
                })
                .transpose()?;
            run_server(session, ready)
        }
        ServerCommand::Start => {
            crate::paths::repoint_agent_link(session);
            let (_, started) = crate::client::connect::connect_or_start(session, Role::Api, None)?;
            if started {
                crate::say!("started the herdr server for session {session}");
            } else {
                crate::say!("the herdr server for session {session} is already running");
            }
            Ok(0)
        }
        ServerCommand::Status { json } => status(session, json),
        ServerCommand::ReloadConfig => super::config::reload(session),
        ServerCommand::Stop => stop(session),
        ServerCommand::Handoff {
            binary,
            expect_version,
            expect_protocol,
        } => handoff(session, binary, expect_version, expect_protocol),
        ServerCommand::Import { from } => {
            crate::server::handoff::import::main(session.clone(), from)?;
            Ok(0)
        }
    }
}

/// Runs the server when the command line is exactly the one a client starts it with
/// (`herdr server run --session NAME --ready-fd=N`, see `client::connect`), without the
/// CLI parser: building the parser's whole command tree would touch pages of code and
/// data the server never uses again, and they would stay resident for its whole life.
/// `None` for any other command line (the parser takes it, errors and all).
pub fn run_if_server_start() -> Option<i32> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let [server, run, flag, name, ready] = args.as_slice() else {
        return None;
    };
    if server != "server" || run != "run" || flag != "--session" {
        return None;
    }
    let fd: i32 = ready.to_str()?.strip_prefix("--ready-fd=")?.parse().ok()?;
    let session = SessionName::parse(name.to_str()?).ok()?;
    let ready = crate::sys::take_inherited(fd).ok()?;
    Some(match run_server(&session, Some(ready)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("herdr: {e:#}");
            1
        }
    })
}

fn run_server(session: &SessionName, ready: Option<std::os::fd::OwnedFd>) -> anyhow::Result<i32> {
    match crate::server::main(session.clone(), ready) {
        Ok(()) => Ok(0),
        Err(e @ crate::server::StartError::Busy(_)) => {
            crate::log::info!("server", "{e}");
            Ok(crate::protocol::exit::SESSION_BUSY)
        }
        // Said in the log, where whoever started the server looks (a terminal, for one
        // run in the foreground).
        Err(e) => {
            crate::log::error!("server", "{e}");
            Ok(1)
        }
    }
}

fn handoff(
    session: &SessionName,
    binary: Option<std::path::PathBuf>,
    expect_version: Option<String>,
    expect_protocol: Option<u32>,
) -> anyhow::Result<i32> {
    let binary = match binary {
        // The server resolves paths from its own folder: send an absolute one.
        Some(b) => Some(
            std::fs::canonicalize(&b)
                .map_err(|e| anyhow::anyhow!("cannot use --binary {}: {e}", b.display()))?,
        ),
        None => None,
    };
    match hand_off(session, binary.as_deref(), expect_version, expect_protocol) {
        Ok(HandedOff::NoServer) => {
            eprintln!(
                "herdr: no herdr server is running for session {session}; nothing to hand off"
            );
            Ok(crate::protocol::exit::NO_SERVER)
        }
        Ok(HandedOff::Done { report, serving }) => {
            crate::say!("{report}");
            match serving {
                Some(s) => {
                    crate::say!("now serving: {s}");
                    Ok(0)
                }
                None => {
                    eprintln!(
                        "herdr: the new server does not answer yet; check `herdr server status`"
                    );
                    Ok(1)
                }
            }
        }
        Err(e) => {
            eprintln!("herdr: live handoff failed; the old server keeps serving, every program still runs: {e:#}");
            Ok(1)
        }
    }
}

fn status(session: &SessionName, as_json: bool) -> anyhow::Result<i32> {
    let Some(mut api) = ApiClient::connect(session)? else {
        if as_json {
            crate::say!(
                "{}",
                json!({ "running": false, "session": session.as_str() })
            );
        } else {
            crate::say!("no herdr server is running for session {session}");
        }
        return Ok(crate::protocol::exit::NO_SERVER);
    };
    let mut st = api.request(&Request::ServerStatus(NoParams {}))?;
    if as_json {
        if let Value::Object(m) = &mut st {
            m.insert("running".into(), Value::Bool(true));
        }
        crate::say!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(0);
    }
    let get = |k: &str| {
        st.get(k)
            .map(|v| v.to_string().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    crate::say!("session:  {}", get("session"));
    crate::say!(
        "version:  {} (protocol {})",
        get("version"),
        get("protocol")
    );
    crate::say!("pid:      {}", get("pid"));
    crate::say!("uptime:   {}s", get("uptime_secs"));
    crate::say!(
        "panes:    {} in {} workspace(s)",
        get("panes"),
        get("workspaces")
    );
    let keys: Vec<String> = st
        .get("client_keys")
        .and_then(|k| k.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match keys.is_empty() {
        true => crate::say!("clients:  {}", get("clients")),
        false => crate::say!("clients:  {} (keys: {})", get("clients"), keys.join(", ")),
    }
    crate::say!("socket:   {}", get("socket"));
    Ok(0)
}

pub(super) fn stop(session: &SessionName) -> anyhow::Result<i32> {
    let Some(mut api) = ApiClient::connect(session)? else {
        crate::say!("no herdr server is running for session {session}");
        return Ok(0);
    };
    let st = api.request(&Request::ServerStatus(NoParams {}))?;
    let pid = st.get("pid").and_then(|p| p.as_i64()).unwrap_or(0) as i32;
    api.request(&Request::ServerStop(NoParams {}))?;
    // Wait until the process is gone: its panes are hung up and reaped before it exits.
    // Its main thread turns zombie before the others have closed their descriptors, so
    // "gone" also means the session lock is free (a new server could start now).
    let deadline = Instant::now() + STOP_TIMEOUT;
    while pid > 0 && (process_alive(pid) || crate::client::connect::session_locked(session)) {
        if Instant::now() > deadline {
            anyhow::bail!(
                "the server (pid {pid}) did not exit within {}s",
                STOP_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::say!("stopped the herdr server for session {session}");
    Ok(0)
}

/// Alive and not a zombie (a zombie has exited; only its parent has not looked yet).
fn process_alive(pid: i32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}
