//! The machines part: one link process (`herdr machine link NAME`) per enabled saved
//! machine, started when the server starts or the list changes (`machine.reload`).
//! Each link owns its SSH connection and its reconnect loop; this thread only reads what
//! a link's reader thread queues as events and writes its requests through a bounded
//! queue that a writer thread drains, so a host that hangs, floods or vanishes never
//! holds up the loop, typing in panes or another machine.
//!
//! What is kept per machine is what the link last said: its state and since when, the
//! round trip, the host's version, and what the host's session holds (workspaces, tabs,
//! agents) — shown in `machine.list`, `agent.list` with `all_machines`, and the sidebar.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::SystemTime;

use serde_json::{json, Value};

use super::api::{now, ApiError, ApiResult, Outcome};
use super::conn::ClientId;
use super::{Event, EventTx, Server};
use crate::machine::Machine;
use crate::protocol::machine::{LinkMsg, LinkState, ToLink, LINK_PROTOCOL, MAX_LINE};

/// Requests that may wait for a link's writer thread; more are refused as `busy`.
const QUEUE: usize = 256;

/// What a link's reader thread queues for the server thread.
pub enum LinkEvent {
    Msg(LinkMsg),
    /// The link process ended (its output closed), and how.
    Ended(String),
}

#[derive(Default)]
pub(crate) struct Machines {
    /// By name, in the saved order.
    pub(super) links: Vec<Link>,
    /// Numbers each started link process, so events of one that was replaced are
    /// ignored.
    next_link: u64,
    next_call: u64,
    /// Calls forwarded and not answered yet: the API connection and request id to answer.
    calls: BTreeMap<u64, (ClientId, Value, u64)>,
    /// Why the saved list could not be read, if it could not.
    problem: Option<String>,
    /// Tabs here that show a machine's tab: a pane made in that tab later opens here too.
    pub(super) followed: Vec<super::machine_panes::Followed>,
}

/// A machine's workspaces, and a workspace's tabs, the sidebar lists at most (a host's
/// view is its own: what it sends costs this server's frames nothing beyond these).
const SHOWN_MAX: usize = 64;

pub(super) struct Link {
    pub(super) machine: Machine,
    /// The running link process's number, and its queue (dropping it ends the process:
    /// its input closes).
    running: Option<(u64, mpsc::SyncSender<ToLink>)>,
    state: Option<LinkState>,
    since: SystemTime,
    error: Option<String>,
    rtt_ms: Option<f64>,
    version: Option<String>,
    /// The host's session as last told.
    view: Option<HostView>,
}

/// A host's session as its link last told it: its `workspace.list`, `agent.list` and
/// `tab.list`, as they are.
struct HostView {
    workspaces: Value,
    agents: Value,
    tabs: Value,
}

impl Link {
    fn new(machine: Machine) -> Link {
        Link {
            machine,
            running: None,
            state: None,
            since: SystemTime::now(),
            error: None,
            rtt_ms: None,
            version: None,
            view: None,
        }
    }

    /// The word `machine.list` and the sidebar show.
    pub(crate) fn state_word(&self) -> &'static str {
        match (self.machine.enabled, self.state) {
            (false, _) => "disabled",
            (true, None) => "connecting",
            (true, Some(s)) => s.word(),
        }
    }

    pub(super) fn agents(&self) -> &[Value] {
        self.view
            .as_ref()
            .and_then(|v| v.agents.as_array())
            .map_or(&[], Vec::as_slice)
    }

    /// The panes of tab `tab` (`t2`) as the host last told, if it did.
    pub(super) fn tab_panes(&self, tab: &str) -> Option<Vec<String>> {
        let tabs = self.view.as_ref()?.tabs.as_array()?;
        let tab = tabs
            .iter()
            .find(|t| t.get("id").and_then(Value::as_str) == Some(tab))?;
        let panes = tab.get("panes")?.as_array()?;
        Some(
            panes
                .iter()
                .filter_map(|p| p.as_str().and_then(super::machine_panes::pane_id))
                .collect(),
        )
    }

    fn waiting(&self) -> usize {
        self.agents()
            .iter()
            .filter(|a| a.get("state").and_then(Value::as_str) == Some("blocked"))
            .count()
    }
}

use crate::render::view::{MachineRow as Shown, MachineTab, MachineWorkspace};

/// The agents of `now` whose state is not what it was in `before` (by pane).
fn newly(before: &Value, now: &Value) -> Vec<Value> {
    let was = |pane: &Value| {
        (before.as_array().into_iter().flatten())
            .find(|a| a.get("pane") == Some(pane))
            .and_then(|a| a.get("state"))
    };
    (now.as_array().into_iter().flatten())
        .filter(|a| a.get("pane").is_some_and(|p| was(p) != a.get("state")))
        .cloned()
        .collect()
}

/// The panes of a host's workspaces (as `workspace.list` counts them).
fn panes(workspaces: &Value) -> u64 {
    (workspaces.as_array()).map_or(0, |ws| ws.iter().filter_map(|w| w["panes"].as_u64()).sum())
}

/// A host's workspace as the sidebar shows it: its name, its agents waiting, its tabs
/// (each named as the host's tab bar names it, with its panes).
fn shown_workspace(w: &Value, agents: &[Value], tabs: &[Value]) -> MachineWorkspace {
    let id = w.get("id").and_then(Value::as_str).unwrap_or("");
    let waiting = agents
        .iter()
        .filter(|a| {
            a.get("workspace").and_then(Value::as_str) == Some(id)
                && a.get("state").and_then(Value::as_str) == Some("blocked")
        })
        .count();
    let name = w.get("name").and_then(Value::as_str).unwrap_or(id);
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let tabs = tabs
        .iter()
        .filter(|t| t.get("workspace").and_then(Value::as_str) == Some(id))
        .take(SHOWN_MAX)
        .map(|t| MachineTab {
            id: text(t, "id").unwrap_or_default(),
            label: (text(t, "name").filter(|n| !n.is_empty()))
                .or_else(|| text(t, "title"))
                .or_else(|| text(t, "id"))
                .unwrap_or_default(),
            panes: (t
                .get("panes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten())
            .filter_map(|p| p.as_str().and_then(super::machine_panes::pane_id))
            .collect(),
        })
        .collect();
    MachineWorkspace {
        name: name.to_string(),
        waiting,
        tabs,
    }
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Machines {
    pub(crate) fn shown(&self) -> Vec<Shown> {
        self.links
            .iter()
            .filter(|l| l.machine.enabled)
            .map(|l| {
                let agents = l.agents();
                let workspaces = l
                    .view
                    .as_ref()
                    .and_then(|v| Some((v.workspaces.as_array()?, v.tabs.as_array())))
                    .map(|(ws, tabs)| {
                        ws.iter()
                            .take(SHOWN_MAX)
                            .map(|w| shown_workspace(w, agents, tabs.map_or(&[], Vec::as_slice)))
                            .collect()
                    })
                    .unwrap_or_default();
                Shown {
                    name: l.machine.name.clone(),
                    state: l.state_word(),
                    workspaces,
                    waiting: l.waiting(),
                }
            })
            .collect()
    }

    /// Starts `link`'s process, numbered anew (or notes why it could not start).
    fn start(&mut self, link: &mut Link, events: &EventTx) {
        self.next_link += 1;
        match start(&link.machine, self.next_link, events) {
            Ok(tx) => link.running = Some((self.next_link, tx)),
            Err(e) => {
                link.state = Some(LinkState::Unreachable);
                link.error = Some(e);
            }
        }
    }

    fn by_link(&mut self, link: u64) -> Option<&mut Link> {
        self.links
            .iter_mut()
            .find(|l| l.running.as_ref().is_some_and(|(n, _)| *n == link))
    }

    pub(super) fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.machine.name == name)
    }

    pub(super) fn named(&mut self, name: &str) -> Result<&mut Link, ApiError> {
        self.links
            .iter_mut()
            .find(|l| l.machine.name == name)
            .ok_or_else(|| no_machine(name))
    }
}

/// Starts a link process for `machine`: its output read by a thread of its own, its
/// input written by another from a bounded queue.
fn start(machine: &Machine, id: u64, events: &EventTx) -> Result<mpsc::SyncSender<ToLink>, String> {
    let exe = crate::paths::own_binary().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["machine", "link", &machine.name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // (The server's own stderr is its log.)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the machine's link: {e}"))?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the machine's link has no pipes".into());
    };
    let (tx, rx) = mpsc::sync_channel::<ToLink>(QUEUE);
    std::thread::Builder::new()
        .name("herdr-link-write".into())
        .spawn(move || {
            for msg in rx {
                let mut line = serde_json::to_vec(&msg).expect("requests serialize");
                line.push(b'\n');
                if input.write_all(&line).is_err() {
                    break;
                }
            }
            // (Dropping `input` closes the link's stdin: it ends.)
        })
        .map_err(|e| e.to_string())?;
    let events = events.clone();
    std::thread::Builder::new()
        .name("herdr-link-read".into())
        .spawn(move || {
            let mut reader = std::io::BufReader::new(output);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let ev = match serde_json::from_slice::<LinkMsg>(&line) {
                            Ok(msg) => LinkEvent::Msg(msg),
                            Err(e) => {
                                LinkEvent::Ended(format!("the link said something unreadable: {e}"))
                            }
                        };
                        let ended = matches!(ev, LinkEvent::Ended(_));
                        if events.send(Event::Link(id, Box::new(ev))).is_err() || ended {
                            break;
                        }
                    }
                }
            }
            drop(reader);
            let status = child
                .wait()
                .map_or_else(|e| e.to_string(), |s| s.to_string());
            let _ = events.send(Event::Link(
                id,
                Box::new(LinkEvent::Ended(format!("the link ended ({status})"))),
            ));
        })
        .map_err(|e| e.to_string())?;
    Ok(tx)
}

impl Server {
    /// Reads the saved machines and brings the links in line with them: a link for each
    /// enabled machine, restarted when how it is reached changed, ended for one removed
    /// or disabled.
    pub(crate) fn machines_reload(&mut self) {
        let saved = match crate::machine::load() {
            Ok(list) => {
                self.machines.problem = None;
                list.machines
            }
            Err(e) => {
                crate::log::warn!("machines", "{e}");
                self.machines.problem = Some(e.to_string());
                return;
            }
        };
        let mut old: Vec<Link> = std::mem::take(&mut self.machines.links);
        for machine in saved {
            let kept = old
                .iter()
                .position(|l| l.machine == machine && l.running.is_some() == machine.enabled);
            let link = match kept {
                Some(i) => old.remove(i),
                None => {
                    let mut link = Link::new(machine);
                    if link.machine.enabled {
                        self.machines.start(&mut link, &self.events.tx);
                    }
                    link
                }
            };
            self.machines.links.push(link);
        }
        // (Links left in `old` end as their queues drop.)
        let ended: Vec<u64> = old
            .iter()
            .filter_map(|l| l.running.as_ref().map(|r| r.0))
            .collect();
        drop(old);
        self.refuse_calls_of(&ended, "the machine was removed or disabled");
        self.machines_shown();
    }

    /// The sidebar shows the machines as they are now (drawn again only if that
    /// changed: a new round trip, say, does not).
    fn machines_shown(&mut self) {
        let rows = self.machines.shown();
        if rows != self.session.machines {
            self.session.machines = rows;
            self.request_render();
        }
    }

    pub(crate) fn link_event(&mut self, id: u64, ev: LinkEvent) {
        let Some(link) = self.machines.by_link(id) else {
            return;
        };
        match ev {
            LinkEvent::Msg(LinkMsg::Hello { protocol }) if protocol != LINK_PROTOCOL => {
                link.running = None;
                link.state = Some(LinkState::Unreachable);
                link.error = Some(format!(
                    "its link speaks protocol {protocol}, this server {LINK_PROTOCOL}"
                ));
            }
            LinkEvent::Msg(LinkMsg::Hello { .. }) => {}
            LinkEvent::Msg(LinkMsg::State {
                state,
                error,
                rtt_ms,
                version,
            }) => {
                let dropped =
                    link.state == Some(LinkState::Connected) && state != LinkState::Connected;
                if link.state != Some(state) {
                    link.since = SystemTime::now();
                    crate::log::info!(
                        "machines",
                        "{}: {}{}",
                        link.machine.name,
                        state.word(),
                        error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    );
                }
                link.state = Some(state);
                link.error = error;
                link.rtt_ms = rtt_ms.or(link.rtt_ms);
                if version.is_some() {
                    link.version = version;
                }
                // (A link gives the answers it got before it says the connection is
                // gone: what is still owed will not come.)
                if dropped {
                    self.refuse_calls_of(&[id], "the link dropped before the machine answered");
                }
            }
            LinkEvent::Msg(LinkMsg::View {
                workspaces,
                agents,
                tabs,
            }) => {
                let name = link.machine.name.clone();
                // Agents that came to need the user since the last view (none for the
                // first: what already waited is marked, not announced).
                let news = match &link.view {
                    Some(old) => newly(&old.agents, &agents),
                    None => Vec::new(),
                };
                link.view = Some(HostView {
                    workspaces,
                    agents,
                    tabs,
                });
                for agent in news {
                    self.machine_agent_notify(&name, &agent);
                }
                self.follow_machine_tabs(&name);
                self.mirror_agents(&name);
            }
            LinkEvent::Msg(LinkMsg::Reply {
                call,
                result,
                error,
            }) => {
                if let Some((conn, req, _)) = self.machines.calls.remove(&call) {
                    // (The host's error as it gave it: it may be newer than this one.)
                    let error = error
                        .as_ref()
                        .map(|e| (e.code.as_str(), e.message.as_str()));
                    let result = Ok(result.unwrap_or(Value::Null));
                    self.api.pay(conn, &req, result, error);
                }
                return;
            }
            LinkEvent::Ended(why) => {
                link.running = None;
                link.state = Some(LinkState::Unreachable);
                link.since = SystemTime::now();
                link.error = Some(why);
                self.refuse_calls_of(&[id], "the machine's link ended");
            }
        }
        self.machines_shown();
    }

    fn refuse_calls_of(&mut self, links: &[u64], why: &str) {
        let gone: Vec<u64> = (self.machines.calls.iter())
            .filter(|(_, (_, _, l))| links.contains(l))
            .map(|(c, _)| *c)
            .collect();
        for call in gone {
            if let Some((conn, req, _)) = self.machines.calls.remove(&call) {
                let refused = Err(ApiError::new("unreachable", why));
                self.api.pay(conn, &req, refused, None);
            }
        }
    }

    pub(crate) fn machine_list(&self) -> ApiResult {
        let list: Vec<Value> = (self.machines.links.iter())
            .map(|l| {
                json!({
                    "name": l.machine.name,
                    "host": l.machine.host,
                    "session": l.machine.session,
                    "enabled": l.machine.enabled,
                    "state": l.state_word(),
                    "since": millis(l.since),
                    "error": l.error,
                    "rtt_ms": l.rtt_ms,
                    "version": l.version,
                    "workspaces": l.view.as_ref().and_then(|v| v.workspaces.as_array()).map_or(0, Vec::len),
                    "panes": l.view.as_ref().map(|v| panes(&v.workspaces)),
                    "agents": l.agents().len(),
                    "waiting": l.waiting(),
                })
            })
            .collect();
        match &self.machines.problem {
            Some(p) => Err(ApiError::new("machines_unreadable", p.clone())),
            None => now(json!(list)),
        }
    }

    /// Forwards an API request to a machine's server; the answer comes later. Refused at
    /// once when the machine is not connected (never queued without end).
    pub(crate) fn machine_call(
        &mut self,
        conn: ClientId,
        id: &Value,
        machine: &str,
        request: Value,
    ) -> ApiResult {
        let call = self.machines.next_call + 1;
        let in_flight = |calls: &BTreeMap<u64, (ClientId, Value, u64)>, link: u64| {
            calls.values().filter(|c| c.2 == link).count()
        };
        let calls = &self.machines.calls;
        let link = (self.machines.links.iter())
            .find(|l| l.machine.name == machine)
            .ok_or_else(|| no_machine(machine))?;
        let name = link.machine.name.clone();
        let Some((link_id, tx)) = link
            .running
            .as_ref()
            .filter(|_| link.state == Some(LinkState::Connected))
        else {
            let why = link
                .error
                .clone()
                .unwrap_or_else(|| link.state_word().to_string());
            return Err(ApiError::new(
                "unreachable",
                format!(
                    "machine {name} is {}: {why}; nothing was sent",
                    link.state_word()
                ),
            ));
        };
        let link_id = *link_id;
        if in_flight(calls, link_id) >= QUEUE {
            return Err(busy(&name));
        }
        match tx.try_send(ToLink::Call { call, request }) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => return Err(busy(&name)),
            Err(mpsc::TrySendError::Disconnected(_)) => {
                return Err(ApiError::new(
                    "unreachable",
                    format!("machine {name}'s link ended"),
                ))
            }
        }
        self.machines.next_call = call;
        self.machines
            .calls
            .insert(call, (conn, id.clone(), link_id));
        self.api.owe(conn);
        Ok(Outcome::Later)
    }

    pub(crate) fn machine_reconnect(&mut self, machine: &str) -> ApiResult {
        let link = self.machines.named(machine)?;
        let name = link.machine.name.clone();
        match &link.running {
            Some((_, tx)) => {
                let _ = tx.try_send(ToLink::Reconnect);
                now(json!({ "machine": name, "reconnecting": true }))
            }
            None if !link.machine.enabled => Err(ApiError::new(
                "disabled",
                format!("machine {name} is disabled: `herdr machine enable {name}` first"),
            )),
            None => {
                // A link that ended is started again.
                self.machines_restart(&name);
                now(json!({ "machine": name, "reconnecting": true }))
            }
        }
    }

    fn machines_restart(&mut self, name: &str) {
        let Some(i) = self
            .machines
            .links
            .iter()
            .position(|l| l.machine.name == name)
        else {
            return;
        };
        let mut link = self.machines.links.remove(i);
        link.state = None;
        self.machines.start(&mut link, &self.events.tx);
        self.machines.links.insert(i, link);
    }

    /// Every agent of every machine (`agent.list` with `all_machines`), after this one's.
    pub(crate) fn machine_agents(&self, state: Option<&str>) -> Vec<Value> {
        let mut out = Vec::new();
        for l in self.machines.links.iter().filter(|l| l.machine.enabled) {
            for a in l.agents() {
                if state.is_some_and(|s| a.get("state").and_then(Value::as_str) != Some(s)) {
                    continue;
                }
                let mut a = a.clone();
                if let Some(obj) = a.as_object_mut() {
                    obj.insert("machine".into(), json!(l.machine.name));
                    obj.insert("machine_state".into(), json!(l.state_word()));
                }
                out.push(a);
            }
        }
        out
    }
}

fn no_machine(name: &str) -> ApiError {
    ApiError::new(
        "not_found",
        format!("no machine named {name:?} (see `herdr machine list`)"),
    )
}

/// A machine with as many requests waiting as it may have.
fn busy(name: &str) -> ApiError {
    ApiError::new(
        "busy",
        format!("{QUEUE} requests for machine {name} wait already; retry in a moment"),
    )
}
