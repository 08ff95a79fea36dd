//! `herdr machine add|list|rename|remove|enable|disable|reconnect`: the saved machines
//! every local server links to and shows beside its own session (docs/remote.md,
//! "Machines"). The list is the user's, not a session's: after a change every running
//! local server is told to read it again.

use clap::Subcommand;
use serde_json::Value;

use super::control::s;
use crate::client::api::ApiClient;
use crate::machine::{self, Machine};
use crate::protocol::api::{MachineOpen, MachineTarget, NoParams, Request};

#[derive(Debug, Subcommand)]
pub enum MachineCommand {
    /// Save a machine: reached over SSH as `--remote` reaches a host (herdr installed
    /// there after asking, its server started), then linked by every local server.
    /// `--session` names the session on that machine. Arguments after `--` go to ssh.
    Add {
        /// What herdr calls it (`--machine NAME`, the sidebar).
        name: String,
        /// The SSH target (default: the name).
        #[arg(long, value_name = "SSH-TARGET")]
        host: Option<String>,
        /// Install herdr there without asking.
        #[arg(long)]
        yes: bool,
        /// Save it without reaching it now (it is linked once it answers).
        #[arg(long)]
        no_check: bool,
        /// Extra arguments for ssh (after `--`), used for every connection to it.
        #[arg(last = true, value_name = "SSH ARGS")]
        ssh_args: Vec<String>,
    },
    /// The saved machines: state (connected, connecting, unreachable since …), round
    /// trip, panes and agents waiting.
    List {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Give a saved machine another name.
    Rename {
        /// The machine.
        name: String,
        /// Its new name.
        new_name: String,
    },
    /// Forget a saved machine (nothing on it is touched).
    Remove {
        /// The machine.
        name: String,
    },
    /// Link to a machine that was disabled.
    Enable {
        /// The machine.
        name: String,
    },
    /// Keep a machine saved but unlinked.
    Disable {
        /// The machine.
        name: String,
    },
    /// Make a machine's link connect again now.
    Reconnect {
        /// The machine.
        name: String,
    },
    /// Open one of a machine's panes (default: the one focused there), or each pane of
    /// one of its tabs, in a new tab of this session: it shows, scrolls and takes keys as
    /// a pane here does, and reconnects by itself.
    Open {
        /// The machine.
        name: String,
        /// Its pane (`p3`) or tab (`t2`).
        target: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The link to one machine, run by the local server (one process per machine).
    #[command(hide = true)]
    Link { name: String },
    /// One pane of a machine, mirrored in this terminal: what the local server runs in
    /// a pane it opens for a machine's pane.
    #[command(hide = true)]
    View { name: String, pane: Option<String> },
}

/// `remote_session`: the global `--session`, which for `add` names the session on the
/// machine (`herdr machine add gpu --session work`); `open` opens in `session`, this
/// machine's.
pub fn run(
    cmd: MachineCommand,
    session: &crate::paths::SessionName,
    remote_session: Option<String>,
) -> anyhow::Result<i32> {
    match cmd {
        MachineCommand::Open { name, target, json } => {
            let (pane, tab) = match target.as_deref() {
                Some(t) if t.starts_with('t') => (None, Some(super::control::id(t)?)),
                Some(p) => (Some(super::control::id(p)?), None),
                None => (None, None),
            };
            let request = Request::MachineOpen(MachineOpen {
                machine: name,
                pane,
                tab,
            });
            super::control::call(session, request, json, |v| {
                format!("opened in tab {} (pane {})", s(v, "tab"), s(v, "pane"))
            })
        }
        MachineCommand::Add {
            name,
            host,
            yes,
            no_check,
            ssh_args,
        } => add(name, host, remote_session, yes, no_check, ssh_args),
        MachineCommand::List { json } => list(json),
        MachineCommand::Rename { name, new_name } => {
            machine::check_name(&new_name)?;
            machine::edit(|list| {
                if list.get(&new_name).is_ok() {
                    return Err(machine::Error::Exists(new_name.clone()));
                }
                list.get_mut(&name)?.name = new_name.clone();
                Ok(())
            })?;
            changed(&format!("renamed {name} to {new_name}"))
        }
        MachineCommand::Remove { name } => {
            machine::edit(|list| {
                list.get(&name)?;
                list.machines.retain(|m| m.name != name);
                Ok(())
            })?;
            changed(&format!("removed {name} (nothing on it was touched)"))
        }
        MachineCommand::Enable { name } => set_enabled(&name, true),
        MachineCommand::Disable { name } => set_enabled(&name, false),
        MachineCommand::Reconnect { name } => {
            machine::load()?.get(&name)?;
            let mut told = 0;
            for mut api in servers() {
                let request = Request::MachineReconnect(MachineTarget {
                    machine: name.clone(),
                });
                api.request(&request)?;
                told += 1;
            }
            match told {
                0 => anyhow::bail!(
                    "no local herdr server runs, so nothing links to {name}; start one with `herdr`"
                ),
                _ => {
                    crate::say!("{name}: reconnecting");
                    Ok(0)
                }
            }
        }
        MachineCommand::Link { name } => Ok(crate::remote::machine_link::run(&name)?),
        MachineCommand::View { name, pane } => {
            // (As the host writes it: `p3`.)
            let pane = (pane.as_deref())
                .map(super::control::id::<crate::model::ids::PaneNo>)
                .transpose()?
                .map(|p| p.to_string());
            Ok(crate::remote::machine_view::run(&name, pane.as_deref())?)
        }
    }
}

fn add(
    name: String,
    host: Option<String>,
    session: Option<String>,
    yes: bool,
    no_check: bool,
    ssh_args: Vec<String>,
) -> anyhow::Result<i32> {
    machine::check_name(&name)?;
    let host = host.unwrap_or_else(|| name.clone());
    machine::check_host(&host)?;
    let session = match session {
        Some(s) => crate::paths::SessionName::parse(&s)?,
        None => crate::paths::SessionName::default_session(),
    };
    if machine::load()?.get(&name).is_ok() {
        return Err(machine::Error::Exists(name).into());
    }
    let m = Machine {
        name: name.clone(),
        host: host.clone(),
        session: session.as_str().to_string(),
        ssh_args,
        enabled: true,
    };
    let args = crate::remote::RemoteArgs::for_machine(&m, yes)?;
    let checked = match no_check {
        true => None,
        false => Some(crate::remote::bootstrap(&args).map_err(|e| {
            anyhow::anyhow!(e).context(format!(
                "cannot reach herdr on {host} (nothing was saved; --no-check saves it as it is)"
            ))
        })?),
    };
    machine::edit(|list| {
        if list.get(&m.name).is_ok() {
            return Err(machine::Error::Exists(m.name.clone()));
        }
        list.machines.push(m.clone());
        Ok(())
    })?;
    let how = match checked {
        Some(binary) => format!("herdr at {binary}"),
        None => "not checked".to_string(),
    };
    changed(&format!("added {name}: {host}, session {session} ({how})"))
}

fn set_enabled(name: &str, on: bool) -> anyhow::Result<i32> {
    machine::edit(|list| {
        list.get_mut(name)?.enabled = on;
        Ok(())
    })?;
    changed(&format!(
        "{name} {}",
        if on { "enabled" } else { "disabled" }
    ))
}

/// Says what changed, and has every running local server read the list again.
fn changed(what: &str) -> anyhow::Result<i32> {
    for mut api in servers() {
        if let Err(e) = api.request(&Request::MachineReload(NoParams {})) {
            eprintln!("herdr: a running server did not take the change: {e}");
        }
    }
    crate::say!("{what}");
    Ok(0)
}

/// An API client of each local server that runs (never through `--machine`).
fn servers() -> Vec<ApiClient> {
    crate::paths::socket_sessions()
        .iter()
        .filter_map(|s| ApiClient::connect(s).ok().flatten())
        .collect()
}

fn list(json: bool) -> anyhow::Result<i32> {
    let saved = machine::load()?;
    // What the first local server's links say; the saved list alone without one.
    let live = servers()
        .into_iter()
        .find_map(|mut api| api.request(&Request::MachineList(NoParams {})).ok());
    let rows: Vec<Value> = match live {
        Some(Value::Array(rows)) => rows,
        _ => saved
            .machines
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name, "host": m.host, "session": m.session,
                    "enabled": m.enabled,
                    "state": if m.enabled { "not linked (no local server runs)" } else { "disabled" },
                })
            })
            .collect(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    if rows.is_empty() {
        crate::say!("no machines saved (add one with `herdr machine add NAME --host HOST`)");
    }
    for r in &rows {
        crate::say!("{}", row(r));
    }
    Ok(0)
}

fn row(r: &Value) -> String {
    let mut line = format!(
        "{:<12} {:<24} {}",
        s(r, "name"),
        s(r, "host"),
        s(r, "state")
    );
    if let (Some(since), Some(state)) = (r["since"].as_u64(), r["state"].as_str()) {
        if state != "connected" {
            let ago = crate::persist::unix_now().saturating_sub(since / 1000);
            line.push_str(&format!(" for {}", super::agent::duration(ago)));
        }
    }
    if let Some(ms) = r["rtt_ms"].as_f64() {
        line.push_str(&format!("  rtt {ms:.1} ms"));
    }
    if let Some(p) = r["panes"].as_u64() {
        line.push_str(&format!("  {p} panes"));
    }
    if let Some(w) = r["waiting"].as_u64().filter(|w| *w > 0) {
        line.push_str(&format!("  {w} waiting"));
    }
    if let Some(e) = r["error"].as_str().filter(|_| r["state"] != "connected") {
        line.push_str(&format!("  ({e})"));
    }
    line
}
