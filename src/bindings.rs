//! Key bindings: the actions a key can trigger after the prefix, their names (as written in
//! config.toml and shown in the help overlay), and the default table.
//!
//! One table in one place: `ACTIONS` names and describes every action; `DEFAULTS` binds
//! keys. The config may rebind or unbind ("none") any key.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{Config, Diagnostic};
use crate::input::keys::Key;
use crate::suggest::did_you_mean;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    SplitRight,
    SplitDown,
    FocusLeft,
    FocusDown,
    FocusUp,
    FocusRight,
    ResizeLeft,
    ResizeDown,
    ResizeUp,
    ResizeRight,
    Zoom,
    ClosePane,
    NextPane,
    LastPane,
    SwapPrev,
    SwapNext,
    NewTab,
    CloseTab,
    RenameTab,
    RenameWorkspace,
    NextTab,
    PrevTab,
    SelectTab(u8),
    NewWorkspace,
    NextWorkspace,
    PrevWorkspace,
    Detach,
    Help,
    ScrollMode,
    PasteBuffer,
    SendPrefix,
    ToggleSidebar,
    ReloadConfig,
    Sessions,
}

/// (name, action, description) for every action.
const ACTIONS: &[(&str, Action, &str)] = &[
    (
        "split_right",
        Action::SplitRight,
        "split the pane side by side",
    ),
    ("split_down", Action::SplitDown, "split the pane stacked"),
    (
        "focus_left",
        Action::FocusLeft,
        "focus the pane to the left",
    ),
    ("focus_down", Action::FocusDown, "focus the pane below"),
    ("focus_up", Action::FocusUp, "focus the pane above"),
    (
        "focus_right",
        Action::FocusRight,
        "focus the pane to the right",
    ),
    (
        "resize_left",
        Action::ResizeLeft,
        "move the pane's left border left",
    ),
    (
        "resize_down",
        Action::ResizeDown,
        "move the pane's lower border down",
    ),
    (
        "resize_up",
        Action::ResizeUp,
        "move the pane's upper border up",
    ),
    (
        "resize_right",
        Action::ResizeRight,
        "move the pane's right border right",
    ),
    (
        "zoom",
        Action::Zoom,
        "zoom the pane to the full tab and back",
    ),
    (
        "close_pane",
        Action::ClosePane,
        "close the pane (asks if its program runs)",
    ),
    ("next_pane", Action::NextPane, "focus the next pane"),
    (
        "last_pane",
        Action::LastPane,
        "focus the pane focused before",
    ),
    (
        "swap_prev",
        Action::SwapPrev,
        "swap the pane with the previous one",
    ),
    (
        "swap_next",
        Action::SwapNext,
        "swap the pane with the next one",
    ),
    ("new_tab", Action::NewTab, "new tab"),
    (
        "close_tab",
        Action::CloseTab,
        "close the tab and its panes (asks)",
    ),
    ("rename_tab", Action::RenameTab, "rename the tab"),
    ("next_tab", Action::NextTab, "next tab"),
    ("prev_tab", Action::PrevTab, "previous tab"),
    ("select_tab_1", Action::SelectTab(1), "go to tab 1"),
    ("select_tab_2", Action::SelectTab(2), "go to tab 2"),
    ("select_tab_3", Action::SelectTab(3), "go to tab 3"),
    ("select_tab_4", Action::SelectTab(4), "go to tab 4"),
    ("select_tab_5", Action::SelectTab(5), "go to tab 5"),
    ("select_tab_6", Action::SelectTab(6), "go to tab 6"),
    ("select_tab_7", Action::SelectTab(7), "go to tab 7"),
    ("select_tab_8", Action::SelectTab(8), "go to tab 8"),
    ("select_tab_9", Action::SelectTab(9), "go to tab 9"),
    ("new_workspace", Action::NewWorkspace, "new workspace"),
    (
        "rename_workspace",
        Action::RenameWorkspace,
        "rename the workspace",
    ),
    ("next_workspace", Action::NextWorkspace, "next workspace"),
    (
        "prev_workspace",
        Action::PrevWorkspace,
        "previous workspace",
    ),
    (
        "detach",
        Action::Detach,
        "detach (everything keeps running)",
    ),
    ("help", Action::Help, "show this help"),
    (
        "scroll_mode",
        Action::ScrollMode,
        "scroll/copy mode over the scrollback",
    ),
    (
        "paste_buffer",
        Action::PasteBuffer,
        "paste what copy mode copied last",
    ),
    (
        "send_prefix",
        Action::SendPrefix,
        "send the prefix key to the program",
    ),
    (
        "toggle_sidebar",
        Action::ToggleSidebar,
        "show or hide the sidebar",
    ),
    (
        "reload_config",
        Action::ReloadConfig,
        "re-read config.toml and apply it",
    ),
    (
        "sessions",
        Action::Sessions,
        "choose a session to switch to",
    ),
];

const DEFAULTS: &[(&str, &str)] = &[
    ("%", "split_right"),
    ("|", "split_right"),
    ("\"", "split_down"),
    ("-", "split_down"),
    ("h", "focus_left"),
    ("Left", "focus_left"),
    ("j", "focus_down"),
    ("Down", "focus_down"),
    ("k", "focus_up"),
    ("Up", "focus_up"),
    ("l", "focus_right"),
    ("Right", "focus_right"),
    ("H", "resize_left"),
    ("J", "resize_down"),
    ("K", "resize_up"),
    ("L", "resize_right"),
    ("C-Left", "resize_left"),
    ("C-Down", "resize_down"),
    ("C-Up", "resize_up"),
    ("C-Right", "resize_right"),
    ("z", "zoom"),
    ("x", "close_pane"),
    ("o", "next_pane"),
    (";", "last_pane"),
    ("{", "swap_prev"),
    ("}", "swap_next"),
    ("c", "new_tab"),
    ("&", "close_tab"),
    (",", "rename_tab"),
    ("$", "rename_workspace"),
    ("n", "next_tab"),
    ("p", "prev_tab"),
    ("1", "select_tab_1"),
    ("2", "select_tab_2"),
    ("3", "select_tab_3"),
    ("4", "select_tab_4"),
    ("5", "select_tab_5"),
    ("6", "select_tab_6"),
    ("7", "select_tab_7"),
    ("8", "select_tab_8"),
    ("9", "select_tab_9"),
    ("W", "new_workspace"),
    (")", "next_workspace"),
    ("(", "prev_workspace"),
    ("q", "detach"),
    ("d", "detach"),
    ("?", "help"),
    ("[", "scroll_mode"),
    ("]", "paste_buffer"),
    ("b", "toggle_sidebar"),
    ("R", "reload_config"),
    ("s", "sessions"),
];

impl Action {
    pub fn from_name(name: &str) -> Option<Action> {
        ACTIONS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, a, _)| *a)
    }

    pub fn name(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(_, a, _)| *a == self)
            .map(|(n, _, _)| *n)
            .unwrap_or("?")
    }

    pub fn description(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(_, a, _)| *a == self)
            .map(|(_, _, d)| *d)
            .unwrap_or("")
    }
}

/// The live binding table of a server.
#[derive(Debug, Clone)]
pub struct Bindings {
    pub prefix: Key,
    map: BTreeMap<Key, Action>,
}

impl Bindings {
    /// Builds the table from the defaults plus the config; every bad entry becomes a
    /// diagnostic and is skipped (the rest still applies).
    pub fn from_config(config: &Config, path: &Path) -> (Bindings, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let default_prefix = Key::parse("C-b").unwrap_or_else(|_| unreachable_key());
        let prefix = match Key::parse(&config.prefix) {
            Ok(k) => k,
            Err(e) => {
                diags.push(Diagnostic {
                    path: path.to_path_buf(),
                    line: None,
                    key: Some("prefix".into()),
                    message: format!("{e}; using C-b"),
                });
                default_prefix
            }
        };
        let mut map = BTreeMap::new();
        for (k, a) in DEFAULTS {
            if let (Ok(k), Some(a)) = (Key::parse(k), Action::from_name(a)) {
                map.insert(k, a);
            }
        }
        for setting in &config.keys {
            let key = match Key::parse(&setting.key) {
                Ok(k) => k,
                Err(e) => {
                    diags.push(Diagnostic {
                        path: path.to_path_buf(),
                        line: Some(setting.line),
                        key: Some(format!("keys.{}", setting.key)),
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            if setting.action == "none" {
                map.remove(&key);
                continue;
            }
            match Action::from_name(&setting.action) {
                Some(a) => {
                    map.insert(key, a);
                }
                None => diags.push(Diagnostic {
                    path: path.to_path_buf(),
                    line: Some(setting.line),
                    key: Some(format!("keys.{}", setting.key)),
                    message: unknown_action(&setting.action),
                }),
            }
        }
        (Bindings { prefix, map }, diags)
    }

    pub fn lookup(&self, key: &Key) -> Option<Action> {
        self.map.get(key).copied()
    }

    /// (keys, what they do) rows for the help overlay, grouped by action in table
    /// order; the nine "go to tab N" keys share one row while they are the digits.
    pub fn help_rows(&self) -> Vec<(String, &'static str)> {
        let mut rows: Vec<(String, &'static str)> = Vec::new();
        let keys_of = |action: Action| -> Vec<String> {
            self.map
                .iter()
                .filter(|(_, a)| **a == action)
                .map(|(k, _)| k.to_string())
                .collect()
        };
        let digits = (1..=9u8).all(|n| keys_of(Action::SelectTab(n)) == [n.to_string()]);
        for (_, action, description) in ACTIONS {
            if let (Action::SelectTab(n), true) = (action, digits) {
                if *n == 1 {
                    rows.push(("1 … 9".into(), "go to tab N"));
                }
                continue;
            }
            let keys = keys_of(*action);
            if !keys.is_empty() {
                rows.push((keys.join(" "), description));
            }
        }
        rows.push((self.prefix.to_string(), Action::SendPrefix.description()));
        rows
    }
}

/// What is said of an action name that is not one: the closest action, and every one.
fn unknown_action(name: &str) -> String {
    let mut names: Vec<&str> = ACTIONS.iter().map(|(n, _, _)| *n).collect();
    names.push("none");
    let hint = did_you_mean(name, &names);
    names.pop();
    format!(
        "unknown action {name:?}{hint}; known actions: {}, or \"none\" to unbind",
        names.join(", ")
    )
}

/// The full commented default config (`herdr config default`): the schema's keys, and
/// under `[keys]` the default bindings, commented, each with what it does.
pub fn default_config_text() -> String {
    let width = DEFAULTS
        .iter()
        .map(|(k, a)| quoted(k).len() + quoted(a).len())
        .max();
    let width = width.unwrap_or(0) + 3;
    let mut body = String::from("# The defaults:\n");
    for (key, action) in DEFAULTS {
        let pair = format!("{} = {}", quoted(key), quoted(action));
        let what = Action::from_name(action).map_or("", Action::description);
        body.push_str(&format!("# {pair:<width$}  # {what}\n"));
    }
    crate::config::default_text(&body)
}

/// A string as TOML writes it.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn unreachable_key() -> Key {
    // C-b always parses; this only satisfies the type checker without a panic path.
    Key::parse("b").unwrap_or_else(|_| unreachable_key())
}

impl Default for Bindings {
    fn default() -> Self {
        Bindings::from_config(&Config::default(), Path::new("config.toml")).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_text_lists_every_default_binding_and_loads_as_the_defaults() {
        let text = default_config_text();
        let (config, diags) = crate::config::parse(&text, Path::new("config.toml"));
        assert!(diags.is_empty(), "{diags:#?}");
        assert_eq!(config, Config::default());
        for (key, action) in DEFAULTS {
            let pair = format!("# {} = {}", quoted(key), quoted(action));
            assert!(text.contains(&pair), "{pair} is missing:\n{text}");
        }
    }

    #[test]
    fn an_unknown_action_is_told_the_closest_one() {
        let config = Config {
            keys: vec![crate::config::KeySetting {
                key: "v".into(),
                action: "splt_right".into(),
                line: 3,
            }],
            ..Config::default()
        };
        let (bindings, diags) = Bindings::from_config(&config, Path::new("c.toml"));
        assert_eq!(diags.len(), 1);
        assert_eq!(
            (diags[0].line, diags[0].key.as_deref()),
            (Some(3), Some("keys.v"))
        );
        assert!(
            diags[0].message.contains("(did you mean `split_right`?)"),
            "{}",
            diags[0]
        );
        assert_eq!(
            Action::from_name("reload_config"),
            Some(Action::ReloadConfig)
        );
        let r = Key::parse("R").ok();
        assert_eq!(
            r.and_then(|k| bindings.lookup(&k)),
            Some(Action::ReloadConfig)
        );
    }
}
