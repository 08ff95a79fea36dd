//! Typing over a slow link (a relay adding 150 ms to each round trip between the client's
//! ssh and a real sshd): keys typed at the prompt show at once, underlined, and the host's
//! echo confirms them about a round trip later; a password prompt (`read -s`) never shows
//! a character; with `[remote] predict = "never"` each key waits for its echo.

mod support;

use std::time::{Duration, Instant};

use support::relay::Relay;
use support::sshd::{MuxGuard, Sshd, HOST};
use support::{Env, Term, PROMPT};

const RTT: Duration = Duration::from_millis(150);

/// A client attached over the slow link, at a prompt; `predict` set in its config.
fn slow_client(name: &str, predict: &str) -> Option<(Sshd, Relay, Env, Term)> {
    let sshd = Sshd::start()?;
    let relay = Relay::start(sshd.addr, RTT);
    // This very herdr is installed on the host already: 200 MB of a debug build would
    // take long over the slow link.
    let installed = sshd.remote_home().join(format!(
        ".local/share/herdr/bin/{}",
        env!("CARGO_PKG_VERSION")
    ));
    std::fs::create_dir_all(&installed).unwrap();
    support::copy_executable(support::BIN, installed.join("herdr"));
    let env = Env::new(name);
    std::fs::create_dir_all(env.config_file().parent().unwrap()).unwrap();
    std::fs::write(
        env.config_file(),
        format!("[remote]\npredict = \"{predict}\"\n"),
    )
    .unwrap();
    let mut args = vec![
        "--remote".to_string(),
        HOST.into(),
        "--yes".into(),
        "--".into(),
    ];
    args.extend(sshd.through(&relay));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let t = env.client_with_args(100, 30, &args);
    t.wait_text(PROMPT);
    Some((sshd, relay, env, t))
}

/// What the cell at (row, col) shows, and whether it is underlined.
fn cell(t: &Term, (row, col): (u16, u16)) -> (String, bool) {
    t.with_screen(|s| {
        let c = s.cell(row, col).expect("a cell");
        (c.contents().to_string(), c.underline())
    })
}

/// Types `c` at the cursor; how long until it showed, and whether it showed as a guess
/// (underlined) — then, for a guess, how long until the echo replaced it.
fn type_char(t: &mut Term, c: char) -> (Duration, bool, Option<Duration>) {
    let at = t.with_screen(|s| s.cursor_position());
    let typed = Instant::now();
    t.send(c.to_string().as_bytes());
    let deadline = typed + support::WAIT;
    let (shown, guessed) = loop {
        let (text, underlined) = cell(t, at);
        if text == c.to_string() {
            break (typed.elapsed(), underlined);
        }
        assert!(
            Instant::now() < deadline,
            "{c:?} never showed:\n{}",
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    if !guessed {
        return (shown, false, None);
    }
    loop {
        let (text, underlined) = cell(t, at);
        if text == c.to_string() && !underlined {
            return (shown, true, Some(typed.elapsed()));
        }
        assert!(
            Instant::now() < deadline,
            "{c:?} never confirmed:\n{}",
            t.contents()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn keys_show_at_once_over_a_slow_link_and_a_password_never_does() {
    let Some((_sshd, _relay, env, mut t)) = slow_client("predict-on", "auto") else {
        return;
    };
    let _mux = MuxGuard(&env);
    // The first key after the prompt came up waits for its echo (nothing seen yet)...
    let (first, guessed, _) = type_char(&mut t, 'e');
    assert!(!guessed, "the first key is not guessed");
    // ... the next ones show at once, underlined, and the echo confirms each.
    let (mut shown, mut confirmed) = (Vec::new(), Vec::new());
    for c in "cho${IFS}predicted".chars() {
        let (s, guessed, conf) = type_char(&mut t, c);
        assert!(guessed, "{c:?} was not shown ahead of its echo");
        shown.push(s);
        confirmed.extend(conf);
    }
    eprintln!(
        "FIGURE over a {RTT:?} round trip with prediction: a key shows after {:?} (median of {}), \
         confirmed after {:?}; the first key after the prompt {first:?}",
        median(shown.clone()),
        shown.len(),
        median(confirmed)
    );
    t.send(b"\r");
    t.wait("the command's output", |t| t.has_line("predicted"));

    // A password prompt: nothing typed is ever shown.
    t.line("read -s pw; echo \"got:${#pw}\"");
    t.wait_text("read -s pw; echo");
    let mark = t.raw_output().len();
    for c in "hunter2".chars() {
        t.send(c.to_string().as_bytes());
        std::thread::sleep(Duration::from_millis(30));
    }
    t.send(b"\r");
    t.wait_text("got:7");
    let after = String::from_utf8_lossy(&t.raw_output()[mark..]).into_owned();
    assert!(!after.contains("\x1b[4m"), "a guess was drawn: {after:?}");
    assert!(!t.contents().contains("hunter"), "{}", t.contents());
}

#[test]
fn without_prediction_each_key_waits_for_its_echo() {
    let Some((_sshd, _relay, env, mut t)) = slow_client("predict-off", "never") else {
        return;
    };
    let _mux = MuxGuard(&env);
    let mut shown = Vec::new();
    for c in "echo${IFS}plain".chars() {
        let (s, guessed, _) = type_char(&mut t, c);
        assert!(!guessed, "{c:?} was guessed with prediction off");
        assert!(
            s >= RTT,
            "{c:?} showed after {s:?}, before its echo could come"
        );
        shown.push(s);
    }
    eprintln!(
        "FIGURE over a {RTT:?} round trip without prediction: a key shows after {:?} (median of {})",
        median(shown.clone()),
        shown.len()
    );
}
