//! Structural events for subscribers, computed by comparing a cheap summary of the session
//! before and after each change — so no code path that changes the structure can forget
//! to announce it, and events come out in a stable order: created (workspace, tab, pane),
//! renamed, closed (pane, tab, workspace), then focus.

use serde_json::{json, Value};

use crate::server::Server;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// (id, name)
    workspaces: Vec<(String, String)>,
    /// (id, workspace, name)
    tabs: Vec<(String, String, Option<String>)>,
    /// (id, tab, workspace, label)
    panes: Vec<(String, String, String, Option<String>)>,
    focus: (Option<String>, Option<String>, Option<String>),
}

impl Server {
    pub(crate) fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for ws in &self.session.state.workspaces {
            s.workspaces.push((ws.no.to_string(), ws.name.clone()));
            for tab in &ws.tabs {
                s.tabs
                    .push((tab.no.to_string(), ws.no.to_string(), tab.name.clone()));
                for pane in tab.layout.panes() {
                    if let Some(ps) = self.session.state.panes.get(&pane) {
                        s.panes.push((
                            ps.no.to_string(),
                            tab.no.to_string(),
                            ws.no.to_string(),
                            ps.label.clone(),
                        ));
                    }
                }
            }
        }
        let ws = self.session.state.active_workspace();
        s.focus = (
            ws.map(|w| w.no.to_string()),
            self.session.state.active_tab().map(|t| t.no.to_string()),
            self.session.state.focused_pane().map(|p| self.pane_no(p)),
        );
        s
    }

    /// Announces what changed in the structure since the last call (only when someone
    /// listens: the summary costs a walk over every pane).
    pub(crate) fn publish_structure(&mut self) {
        if !self.api.has_subscribers() {
            self.api.last = None;
            return;
        }
        let now = self.summary();
        let before = self.api.last.take().unwrap_or_default();
        if before != now {
            for ev in diff(&before, &now) {
                self.emit(ev);
            }
        }
        self.api.last = Some(now);
    }
}

fn diff(a: &Summary, b: &Summary) -> Vec<Value> {
    let mut out = Vec::new();
    let has = |list: &[(String, String)], id: &str| list.iter().any(|(i, _)| i == id);
    for (id, name) in &b.workspaces {
        if !has(&a.workspaces, id) {
            out.push(json!({ "event": "workspace.created", "id": id, "name": name }));
        }
    }
    for (id, ws, name) in &b.tabs {
        if !a.tabs.iter().any(|(i, _, _)| i == id) {
            out.push(json!({ "event": "tab.created", "id": id, "workspace": ws, "name": name }));
        }
    }
    for (id, tab, ws, _) in &b.panes {
        if !a.panes.iter().any(|(i, ..)| i == id) {
            out.push(json!({ "event": "pane.created", "id": id, "tab": tab, "workspace": ws }));
        }
    }
    for (id, name) in &b.workspaces {
        if a.workspaces.iter().any(|(i, n)| i == id && n != name) {
            out.push(json!({ "event": "workspace.renamed", "id": id, "name": name }));
        }
    }
    for (id, _, name) in &b.tabs {
        if a.tabs.iter().any(|(i, _, n)| i == id && n != name) {
            out.push(json!({ "event": "tab.renamed", "id": id, "name": name }));
        }
    }
    for (id, _, _, label) in &b.panes {
        if a.panes.iter().any(|(i, _, _, l)| i == id && l != label) {
            out.push(json!({ "event": "pane.renamed", "id": id, "name": label }));
        }
    }
    for (id, ..) in &a.panes {
        if !b.panes.iter().any(|(i, ..)| i == id) {
            out.push(json!({ "event": "pane.closed", "id": id }));
        }
    }
    for (id, ..) in &a.tabs {
        if !b.tabs.iter().any(|(i, ..)| i == id) {
            out.push(json!({ "event": "tab.closed", "id": id }));
        }
    }
    for (id, _) in &a.workspaces {
        if !has(&b.workspaces, id) {
            out.push(json!({ "event": "workspace.closed", "id": id }));
        }
    }
    let (fa, fb) = (&a.focus, &b.focus);
    if fa.0 != fb.0 {
        if let Some(id) = &fb.0 {
            out.push(json!({ "event": "workspace.focused", "id": id }));
        }
    }
    if fa.1 != fb.1 {
        if let Some(id) = &fb.1 {
            out.push(json!({ "event": "tab.focused", "id": id }));
        }
    }
    if fa.2 != fb.2 {
        if let Some(id) = &fb.2 {
            out.push(json!({ "event": "pane.focused", "id": id }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ws: &[&str], panes: &[&str], focus: &str) -> Summary {
        Summary {
            workspaces: ws.iter().map(|w| (w.to_string(), "n".into())).collect(),
            tabs: ws
                .iter()
                .map(|w| (format!("t{}", &w[1..]), w.to_string(), None))
                .collect(),
            panes: panes
                .iter()
                .map(|p| (p.to_string(), "t1".into(), "w1".into(), None))
                .collect(),
            focus: (Some("w1".into()), Some("t1".into()), Some(focus.into())),
        }
    }

    #[test]
    fn creations_come_before_closings_and_focus_last() {
        let a = s(&["w1"], &["p1"], "p1");
        let b = s(&["w1"], &["p2"], "p2");
        let names: Vec<String> = diff(&a, &b)
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["event"].as_str().unwrap(),
                    e["id"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            names,
            ["pane.created p2", "pane.closed p1", "pane.focused p2"]
        );
        let c = s(&["w1", "w2"], &["p2"], "p2");
        let names: Vec<String> = diff(&b, &c)
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["workspace.created", "tab.created"]);
        assert!(diff(&c, &c).is_empty());
    }
}
