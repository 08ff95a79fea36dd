//! What an interactive client tells the server about the user's terminal in its hello:
//! which key reporting it turned on there, and the colours the terminal reported (which
//! answer the colour queries of the programs in panes).
//!
//! Invariant: what a hello brings is checked here before anything uses it: a colour is
//! an X11 `rgb:` spec of at most 4 hex digits a channel, at most 256 palette entries.

use serde::{Deserialize, Serialize};

/// How the user's terminal reports keys, as the client set it up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyProtocol {
    /// Plain bytes, as terminals send them by default.
    #[default]
    Legacy,
    /// xterm's modifyOtherKeys level 2 (`CSI 27 ; mod ; code ~`).
    ModifyOtherKeys,
    /// The kitty keyboard protocol, with the flags the client pushed.
    Kitty,
}

/// The user's terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalInfo {
    #[serde(default)]
    pub keys: KeyProtocol,
    /// The kitty flags pushed (with `keys` Kitty).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kitty_flags: u8,
    /// The terminal sends focus reports (`CSI I` / `CSI O`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
    #[serde(default, skip_serializing_if = "Colors::is_empty")]
    pub colors: Colors,
    /// How the terminal shows a desktop notification, as the client judged it (absent
    /// from older clients: the server rings the bell for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<Notify>,
    /// The terminal's modifyOtherKeys level before the client changed it, when it said
    /// (the client's own business: not sent).
    #[serde(skip)]
    pub modify_other_keys_before: Option<u8>,
}

/// How a desktop notification reaches the user through their terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// `OSC 9 ; text ST` (iTerm2's; kitty, ghostty, WezTerm, …).
    Osc9,
    /// `OSC 777 ; notify ; title ; body ST` (urxvt's; VTE, foot, Windows Terminal, …).
    Osc777,
    /// A bell: the terminal beeps, flashes or marks its window.
    Bell,
    /// Nothing: the user turned them off.
    Off,
    /// A word a newer client knows and this server does not (it rings the bell).
    #[serde(other)]
    Unknown,
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// Colours as the terminal reported them, each an X11 spec such as `rgb:ffff/ffff/dddd`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Colors {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreground: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Palette entries that are known, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub palette: Vec<(u8, String)>,
}

impl Colors {
    pub fn is_empty(&self) -> bool {
        self.foreground.is_none()
            && self.background.is_none()
            && self.cursor.is_none()
            && self.palette.is_empty()
    }

    /// Only what is well formed, each palette index once.
    pub fn checked(self) -> Colors {
        let ok = |c: Option<String>| c.filter(|c| is_color_spec(c));
        let mut palette: Vec<(u8, String)> = Vec::new();
        for (i, c) in self.palette.into_iter().take(256) {
            if is_color_spec(&c) && !palette.iter().any(|(j, _)| *j == i) {
                palette.push((i, c));
            }
        }
        Colors {
            foreground: ok(self.foreground),
            background: ok(self.background),
            cursor: ok(self.cursor),
            palette,
        }
    }

    pub fn palette_entry(&self, i: u8) -> Option<&str> {
        self.palette
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, c)| c.as_str())
    }
}

/// `rgb:R/G/B` with 1 to 4 hex digits a channel.
pub fn is_color_spec(spec: &str) -> bool {
    let Some(rest) = spec.strip_prefix("rgb:") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| (1..=4).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_colours_are_kept() {
        assert!(is_color_spec("rgb:ffff/ffff/dddd"));
        assert!(is_color_spec("rgb:f/0/ab"));
        for bad in [
            "",
            "rgb:",
            "rgb:ff/ff",
            "rgb:fffff/0/0",
            "rgb:gg/0/0",
            "#ffffff",
            "rgb:1/2/3\x1b",
        ] {
            assert!(!is_color_spec(bad), "{bad:?}");
        }
        let c = Colors {
            foreground: Some("rgb:0/0/0".into()),
            background: Some("rgb:0/0/0\x07".into()),
            cursor: None,
            palette: (0..600)
                .map(|i| ((i % 256) as u8, "rgb:1/2/3".into()))
                .collect(),
        }
        .checked();
        assert_eq!(c.foreground.as_deref(), Some("rgb:0/0/0"));
        assert_eq!(c.background, None);
        assert_eq!(c.palette.len(), 256);
    }

    #[test]
    fn terminal_info_round_trips_and_defaults() {
        let info = TerminalInfo {
            keys: KeyProtocol::Kitty,
            kitty_flags: 31,
            focus: true,
            colors: Colors {
                background: Some("rgb:ffff/ffff/ffff".into()),
                ..Colors::default()
            },
            notify: None,
            modify_other_keys_before: None,
        };
        let line = serde_json::to_string(&info).unwrap();
        assert_eq!(
            line,
            r#"{"keys":"kitty","kitty_flags":31,"focus":true,"colors":{"background":"rgb:ffff/ffff/ffff"}}"#
        );
        assert_eq!(serde_json::from_str::<TerminalInfo>(&line).unwrap(), info);
        assert_eq!(
            serde_json::from_str::<TerminalInfo>("{}").unwrap(),
            TerminalInfo::default()
        );
    }

    #[test]
    fn notify_words_round_trip_and_unknown_ones_are_tolerated() {
        let info: TerminalInfo = serde_json::from_str(r#"{"notify":"osc777"}"#).unwrap();
        assert_eq!(info.notify, Some(Notify::Osc777));
        assert_eq!(
            serde_json::to_string(&info).unwrap(),
            r#"{"keys":"legacy","notify":"osc777"}"#
        );
        let info: TerminalInfo = serde_json::from_str(r#"{"notify":"osc99"}"#).unwrap();
        assert_eq!(info.notify, Some(Notify::Unknown));
    }
}
