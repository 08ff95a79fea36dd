//! End-to-end: the status line shows what users look for — the session, this machine,
//! the focused tab's title, agents waiting, the time — as the config says; and tabs are
//! named after the program running in them (tmux's automatic-rename).

mod support;

use support::{Env, PROMPT};

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// Whether `text` holds a time of day, `HH:MM`.
fn has_clock(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(5).any(|w| {
        w[0].is_ascii_digit()
            && w[1].is_ascii_digit()
            && w[2] == b':'
            && w[3].is_ascii_digit()
            && w[4].is_ascii_digit()
    })
}

#[test]
fn the_status_line_shows_session_host_title_and_time_and_tabs_take_their_programs_name() {
    let env = Env::new("status");
    let mut t = env.client(160, 30);
    t.wait_text(PROMPT);
    let status = || t.row(29);
    t.wait("session, host, title and clock", |t| {
        let s = t.row(29);
        s.contains(&format!("[{}] {} · shell", env.session, host())) && has_clock(&s)
    });
    assert!(
        !status().contains(" w1 t1 p1"),
        "no internal ids: {}",
        status()
    );
    // A program started from the shell names the tab and the status line's title.
    t.line("sleep 60");
    t.wait("named after sleep", |t| {
        t.row(29).contains("· sleep") && t.contents().contains("1:sleep")
    });
    t.send(b"\x03");
    t.wait("back to the shell's name", |t| {
        t.row(29).contains("· shell")
    });
}

#[test]
fn the_status_line_shows_only_what_the_config_lists() {
    let env = Env::new("status-cfg");
    std::fs::write(env.config_file(), "status = [\"title\", \"session\"]\n").unwrap();
    let t = env.client(160, 30);
    t.wait_text(PROMPT);
    t.wait("title then session", |t| {
        t.row(29)
            .starts_with(&format!(" · shell [{}]", env.session))
    });
    let s = t.row(29);
    assert!(!has_clock(&s) && !s.contains(&host()), "{s}");
}
