//! Which desktop notification the user's terminal shows, judged where the client runs (in
//! that terminal, also with `--remote`): from its XTVERSION answer first (the terminal
//! itself speaks, through ssh and `su` alike), then from the environment it gave its
//! shell (TERM_PROGRAM, VTE_VERSION, KITTY_WINDOW_ID, …).
//!
//! Invariant: a terminal herdr does not recognise gets the bell, which every terminal
//! has; an OSC it does not know could be shown as text by some.

use crate::protocol::terminal::Notify;

/// What the user's `[notify] terminal` setting makes of the terminal found: `auto` takes
/// it, the other words force their style.
pub fn choose(setting: &str, found: Notify) -> Notify {
    match setting {
        "osc9" => Notify::Osc9,
        "osc777" => Notify::Osc777,
        "bell" => Notify::Bell,
        "off" => Notify::Off,
        _ => found,
    }
}

/// The style for this terminal: `version` is its XTVERSION answer, `env` looks a variable
/// up in the client's environment.
pub fn detect(env: &dyn Fn(&str) -> Option<String>, version: Option<&str>) -> Notify {
    if let Some(found) = version.and_then(by_version) {
        return found;
    }
    by_env(env).unwrap_or(Notify::Bell)
}

/// From the terminal's own name and version (XTVERSION), where it says.
fn by_version(version: &str) -> Option<Notify> {
    let name = version.to_ascii_lowercase();
    let starts = |p: &str| name.starts_with(p);
    if starts("kitty") || starts("ghostty") || starts("wezterm") || starts("iterm2") {
        Some(Notify::Osc9)
    } else if starts("foot") || starts("vte") || starts("contour") {
        Some(Notify::Osc777)
    } else if starts("xterm") || starts("tmux") || starts("alacritty") {
        // Known to show neither (tmux passes neither through, but rings its client's bell).
        Some(Notify::Bell)
    } else {
        None
    }
}

/// From the environment the terminal gave its shell. A multiplexer between herdr and the
/// terminal (tmux, screen) swallows both OSCs, so it is looked for first: its client
/// still passes a bell on.
fn by_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Notify> {
    let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    let term = env("TERM").unwrap_or_default();
    let program = env("TERM_PROGRAM").unwrap_or_default();
    if set("TMUX") || set("STY") || term.starts_with("screen") || term.starts_with("tmux") {
        return Some(Notify::Bell);
    }
    let osc9 = ["iTerm.app", "WezTerm", "ghostty"].contains(&program.as_str())
        || set("KITTY_WINDOW_ID")
        || set("WEZTERM_EXECUTABLE")
        || set("GHOSTTY_RESOURCES_DIR")
        || term == "xterm-kitty"
        || term == "xterm-ghostty";
    let osc777 = set("VTE_VERSION")
        || set("WT_SESSION")
        || term.starts_with("foot")
        || term.starts_with("rxvt-unicode");
    if osc9 {
        Some(Notify::Osc9)
    } else if osc777 {
        Some(Notify::Osc777)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn terminals_by_their_environment() {
        let cases: &[(&[(&str, &str)], Notify)] = &[
            (
                &[("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")],
                Notify::Osc9,
            ),
            (&[("TERM_PROGRAM", "ghostty")], Notify::Osc9),
            (&[("TERM_PROGRAM", "iTerm.app")], Notify::Osc9),
            (
                &[("WEZTERM_EXECUTABLE", "/usr/bin/wezterm-gui")],
                Notify::Osc9,
            ),
            (
                &[("TERM", "xterm-256color"), ("VTE_VERSION", "7600")],
                Notify::Osc777,
            ),
            (&[("TERM", "foot")], Notify::Osc777),
            (&[("TERM", "rxvt-unicode-256color")], Notify::Osc777),
            (&[("WT_SESSION", "abc")], Notify::Osc777),
            (&[("TERM", "xterm-256color")], Notify::Bell),
            (&[("TERM_PROGRAM", "Apple_Terminal")], Notify::Bell),
            (&[("TERM", "linux")], Notify::Bell),
            (&[], Notify::Bell),
            // Inside tmux, whatever the terminal outside it: the bell.
            (
                &[("KITTY_WINDOW_ID", "1"), ("TMUX", "sock,1,0")],
                Notify::Bell,
            ),
            (
                &[("VTE_VERSION", "7600"), ("TERM", "screen-256color")],
                Notify::Bell,
            ),
            (&[("KITTY_WINDOW_ID", "")], Notify::Bell),
        ];
        for (vars, want) in cases {
            assert_eq!(detect(&env_of(vars), None), *want, "{vars:?}");
        }
    }

    #[test]
    fn the_terminals_own_answer_comes_first() {
        let vte = env_of(&[("VTE_VERSION", "7600")]);
        assert_eq!(detect(&vte, Some("kitty(0.35.2)")), Notify::Osc9);
        assert_eq!(detect(&vte, Some("ghostty 1.1.3")), Notify::Osc9);
        assert_eq!(detect(&vte, Some("WezTerm 20240203")), Notify::Osc9);
        assert_eq!(detect(&vte, Some("XTerm(390)")), Notify::Bell);
        assert_eq!(detect(&vte, Some("tmux 3.4")), Notify::Bell);
        let none = env_of(&[]);
        assert_eq!(detect(&none, Some("foot(1.16.2)")), Notify::Osc777);
        // A name herdr does not know: the environment decides.
        assert_eq!(detect(&vte, Some("SomeTerm 1.0")), Notify::Osc777);
        assert_eq!(detect(&none, Some("SomeTerm 1.0")), Notify::Bell);
    }

    #[test]
    fn the_setting_forces_a_style_or_takes_the_one_found() {
        assert_eq!(choose("auto", Notify::Osc777), Notify::Osc777);
        assert_eq!(choose("osc9", Notify::Bell), Notify::Osc9);
        assert_eq!(choose("osc777", Notify::Osc9), Notify::Osc777);
        assert_eq!(choose("bell", Notify::Osc9), Notify::Bell);
        assert_eq!(choose("off", Notify::Osc9), Notify::Off);
    }
}
