//! `herdr server start|stop|status|run`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::api_client::ApiClient;
use super::ServerCommand;
use crate::paths::SessionName;
use crate::protocol::Role;

/// How long `server stop` waits for the server process to be gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

pub fn run(session: &SessionName, command: ServerCommand) -> anyhow::Result<i32> {
    match command {
        ServerCommand::Run => {
            crate::server::main(session.clone())?;
            Ok(0)
        }
        ServerCommand::Start => {
            crate::paths::repoint_agent_link(session);
            let (_, started) = crate::client::connect::connect_or_start(session, Role::Api, None)?;
            if started {
                println!("started the herdr server for session {session}");
            } else {
                println!("the herdr server for session {session} is already running");
            }
            Ok(0)
        }
        ServerCommand::Status { json } => status(session, json),
        ServerCommand::Stop => stop(session),
    }
}

fn status(session: &SessionName, as_json: bool) -> anyhow::Result<i32> {
    let Some(mut api) = ApiClient::connect(session)? else {
        if as_json {
            println!(
                "{}",
                json!({ "running": false, "session": session.as_str() })
            );
        } else {
            println!("no herdr server is running for session {session}");
        }
        return Ok(3);
    };
    let mut st = api.call("server.status", json!({}))?;
    if as_json {
        if let Value::Object(m) = &mut st {
            m.insert("running".into(), Value::Bool(true));
        }
        println!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(0);
    }
    let get = |k: &str| {
        st.get(k)
            .map(|v| v.to_string().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    println!("session:  {}", get("session"));
    println!(
        "version:  {} (protocol {})",
        get("version"),
        get("protocol")
    );
    println!("pid:      {}", get("pid"));
    println!("uptime:   {}s", get("uptime_secs"));
    println!(
        "panes:    {} in {} workspace(s)",
        get("panes"),
        get("workspaces")
    );
    println!("clients:  {}", get("clients"));
    println!("socket:   {}", get("socket"));
    Ok(0)
}

fn stop(session: &SessionName) -> anyhow::Result<i32> {
    let Some(mut api) = ApiClient::connect(session)? else {
        println!("no herdr server is running for session {session}");
        return Ok(0);
    };
    let st = api.call("server.status", json!({}))?;
    let pid = st.get("pid").and_then(|p| p.as_i64()).unwrap_or(0) as i32;
    api.call("server.stop", json!({}))?;
    // Wait until the process is gone: its panes are hung up and reaped before it exits.
    let deadline = Instant::now() + STOP_TIMEOUT;
    while pid > 0 && process_alive(pid) {
        if Instant::now() > deadline {
            anyhow::bail!(
                "the server (pid {pid}) did not exit within {}s",
                STOP_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("stopped the herdr server for session {session}");
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
