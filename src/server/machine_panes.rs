//! A saved machine's panes opened here (`machine.open`, a click on a machine's tab in
//! the sidebar): local tabs whose panes run `herdr machine view` (docs/architecture.md,
//! "Machines"), the tabs that follow a machine's tab, and the agent states those panes
//! show as their machine's link last saw them.

use serde_json::{json, Value};

use super::api::{now, ApiError, ApiResult};
use super::machines::Machines;
use super::Server;
use crate::model::ids::{PaneId, TabNo};
use crate::model::layout::SplitDir;
use crate::protocol::api::MachineOpen;

/// A tab here showing a machine's tab (until this server restarts).
pub(super) struct Followed {
    /// The tab here (its public number).
    tab: TabNo,
    machine: String,
    /// The machine's tab (`t2`).
    host_tab: String,
    /// Its highest pane number seen: panes above it are new there.
    seen: u32,
}

/// A host's pane id as this server writes it (`p7`), if it is one: what goes into a
/// view's command line is never anything else.
pub(super) fn pane_id(text: &str) -> Option<String> {
    let no: crate::model::ids::PaneNo = crate::protocol::api::PublicId::parse(text)?;
    Some(no.to_string())
}

/// A pane's number from its public id (`p7` → 7).
fn pane_number(id: &str) -> u32 {
    id.trim_start_matches('p').parse().unwrap_or(0)
}

fn vanished() -> ApiError {
    ApiError::new("internal", "the new tab vanished")
}

impl Server {
    /// Opens a machine's pane, or each pane of one of its tabs, in a new tab of the
    /// active workspace: panes whose program mirrors the host's (`herdr machine view`).
    pub(crate) fn machine_open(&mut self, p: MachineOpen) -> ApiResult {
        let link = self.machines.named(&p.machine)?;
        let name = link.machine.name.clone();
        let host_tab = p.tab.map(|t| t.to_string());
        let (label, panes) = match (p.tab, p.pane) {
            (Some(_), Some(_)) => {
                return Err(ApiError::params("give \"pane\" or \"tab\", not both"));
            }
            (Some(tab), None) => {
                let tab = tab.to_string();
                let panes = link.tab_panes(&tab).ok_or_else(|| {
                    ApiError::new(
                        "not_found",
                        format!(
                            "machine {name} has no tab {tab} (as its link last saw it: {})",
                            link.state_word()
                        ),
                    )
                })?;
                (
                    format!("{name}:{tab}"),
                    panes.into_iter().map(Some).collect(),
                )
            }
            (None, Some(pane)) => (format!("{name}:{pane}"), vec![Some(pane.to_string())]),
            (None, None) => (name.clone(), vec![None]),
        };
        let (tab, pane) = self.open_machine_panes(&name, label, &panes)?;
        if let Some(host_tab) = host_tab {
            self.follow(&tab, &name, &host_tab, &panes);
        }
        now(json!({ "tab": tab, "pane": self.pane_no(pane) }))
    }

    /// A machine's tab clicked in the sidebar (machine `m`, its workspace `w`, tab `t` as
    /// listed there): its panes open here, or the tab here that shows them comes to front.
    pub(crate) fn click_machine_tab(&mut self, m: usize, w: usize, t: usize) {
        let Some(machine) = self.session.machines.get(m) else {
            return;
        };
        let Some(tab) = machine.workspaces.get(w).and_then(|ws| ws.tabs.get(t)) else {
            return;
        };
        let name = machine.name.clone();
        let label = format!("{name}:{}", tab.label);
        let host_tab = tab.id.clone();
        let panes: Vec<Option<String>> = tab.panes.iter().cloned().map(Some).collect();
        match self.open_machine_panes(&name, label, &panes) {
            Ok((tab, _)) => self.follow(&tab, &name, &host_tab, &panes),
            Err(e) => self.say(format!("{name}: {}", e.message)),
        }
    }

    /// From now on a pane made in `host_tab` of `machine` opens in tab `tab` here too.
    fn follow(&mut self, tab: &str, machine: &str, host_tab: &str, panes: &[Option<String>]) {
        let Some(tab) = crate::protocol::api::PublicId::parse(tab) else {
            return;
        };
        let seen = panes
            .iter()
            .flatten()
            .map(|p| pane_number(p))
            .max()
            .unwrap_or(0);
        let followed = &mut self.machines.followed;
        followed.retain(|f| f.tab != tab);
        followed.push(Followed {
            tab,
            machine: machine.to_string(),
            host_tab: host_tab.to_string(),
            seen,
        });
    }

    /// After a machine's view changed: the panes here that mirror one of its panes show
    /// that pane's agent and state as the view has them (or none).
    pub(super) fn mirror_agents(&mut self, machine: &str) {
        let Some(link) = self.machines.link(machine) else {
            return;
        };
        let text = |a: &Value, key: &str| a.get(key).and_then(Value::as_str).map(String::from);
        let mut changed = false;
        for term in self.session.state.terminals.values_mut() {
            if crate::model::state::viewed_machine(&term.argv) != Some(machine) {
                continue;
            }
            let pane = term.argv.get(4).map(String::as_str);
            let agent = (link.agents().iter())
                .find(|a| pane.is_some() && a.get("pane").and_then(Value::as_str) == pane)
                .and_then(|a| Some((text(a, "agent")?, text(a, "state")?)));
            if term.mirrored_agent != agent {
                term.mirrored_agent = agent;
                changed = true;
            }
        }
        if changed {
            self.request_render();
        }
    }

    /// After a machine's view changed: panes made since in a tab followed here open in
    /// that tab (split from its last pane); tabs here that are gone are forgotten.
    pub(super) fn follow_machine_tabs(&mut self, machine: &str) {
        let st = &self.session.state;
        let exists = |no: TabNo| {
            st.workspaces
                .iter()
                .any(|w| w.tabs.iter().any(|t| t.no == no))
        };
        self.machines.followed.retain(|f| exists(f.tab));
        let Machines {
            links, followed, ..
        } = &mut self.machines;
        let Some(link) = links.iter().find(|l| l.machine.name == machine) else {
            return;
        };
        let mut opens = Vec::new();
        for f in followed.iter_mut().filter(|f| f.machine == machine) {
            let Some(panes) = link.tab_panes(&f.host_tab) else {
                continue;
            };
            let seen = f.seen;
            for pane in panes.into_iter().filter(|p| pane_number(p) > seen) {
                f.seen = f.seen.max(pane_number(&pane));
                opens.push((f.tab, pane));
            }
        }
        if opens.is_empty() {
            return;
        }
        let Ok(exe) = crate::paths::own_binary() else {
            return;
        };
        for (tab, pane) in opens {
            let st = &self.session.state;
            let last = (st.workspaces.iter().flat_map(|w| &w.tabs))
                .find(|t| t.no == tab)
                .and_then(|t| t.layout.panes().last().copied());
            let argv = crate::machine::view_argv(&exe, machine, Some(&pane));
            if let Err(e) = (self.session).split_pane(last, SplitDir::Right, argv, None) {
                self.say(format!("{machine}: {pane} did not open here: {e}"));
            }
        }
        self.session.relayout();
        self.request_render();
    }

    /// Opens `panes` of machine `name` (None: the one focused there) in one new tab named
    /// `label` — the first opens it, each next one splits the one before, right and down
    /// in turn — or, when a pane here shows the first already, focuses that one. The
    /// tab's public id and its first pane.
    pub(crate) fn open_machine_panes(
        &mut self,
        name: &str,
        label: String,
        panes: &[Option<String>],
    ) -> Result<(String, PaneId), ApiError> {
        let shown = |argv: &[String]| {
            crate::machine::is_view(argv)
                && argv.get(3).map(String::as_str) == Some(name)
                && panes.first().and_then(Option::as_deref).is_some()
                && argv.get(4).map(String::as_str) == panes.first().and_then(Option::as_deref)
        };
        let st = &self.session.state;
        let already = st.panes.iter().find_map(|(id, ps)| {
            let t = st.terminals.get(&ps.terminal)?;
            (shown(&t.argv) && t.exited.is_none()).then_some(*id)
        });
        if let Some(pane) = already {
            self.session.state.focus_pane(pane);
            self.request_render();
            let pos = (self.session.state.find_pane(pane)).ok_or_else(vanished)?;
            let tab = &self.session.state.workspaces[pos.workspace].tabs[pos.tab];
            return Ok((tab.no.to_string(), pane));
        }
        let exe = crate::paths::own_binary()
            .map_err(|e| ApiError::new("internal", format!("cannot find herdr's binary: {e}")))?;
        let argv = |pane: &Option<String>| crate::machine::view_argv(&exe, name, pane.as_deref());
        let spawn_failed =
            |e: super::panes::PaneError| ApiError::new("spawn_failed", e.to_string());
        let first = panes
            .first()
            .ok_or_else(|| ApiError::new("not_found", "no panes"))?;
        let opened = self
            .session
            .open_tab(argv(first), None)
            .map_err(spawn_failed)?;
        let mut last = opened;
        for (i, pane) in panes.iter().enumerate().skip(1) {
            let dir = if i % 2 == 1 {
                SplitDir::Right
            } else {
                SplitDir::Down
            };
            match self.session.split_pane(Some(last), dir, argv(pane), None) {
                Ok(p) => last = p,
                // (Too small to split further: the rest are left out, the tab stays.)
                Err(e) => {
                    self.say(format!("{name}: not every pane of the tab opened: {e}"));
                    break;
                }
            }
        }
        self.session.state.focus_pane(opened);
        self.session.relayout();
        self.request_render();
        let pos = (self.session.state.find_pane(opened)).ok_or_else(vanished)?;
        let tab = self.session.state.tab_at_mut(pos).ok_or_else(vanished)?;
        tab.name = Some(label);
        Ok((tab.no.to_string(), opened))
    }
}
