//! End-to-end: the conversation with the user's terminal. The harness plays a terminal
//! that speaks the kitty keyboard protocol, xterm (modifyOtherKeys) or neither; a small
//! program in a pane asks for its own key encoding and prints every read it gets, in
//! hex. Keys arrive the way each pane asked (Shift+Enter as `CSI 13 ; 2 u` to a pane that
//! pushed kitty flags, `\r` to one that did not), focus reports reach mode-1004 panes,
//! colour queries get the user's terminal's colours, and the terminal is put back.

mod support;

use support::{Env, Outer, Term, PROMPT};

/// Puts its terminal in raw mode, writes the bytes given in hex (a mode request or a
/// query), then prints `NAME:<hex>` for every read; `p` pops one kitty flags entry,
/// `x` ends it.
const KEYS_PY: &str = r#"
import os, sys, termios, tty
name, setup = sys.argv[1], bytes.fromhex(sys.argv[2] if len(sys.argv) > 2 else "")
fd = 0
saved = termios.tcgetattr(fd)
tty.setraw(fd)
os.write(1, setup + f"{name} READY\r\n".encode())
while True:
    data = os.read(fd, 4096)
    if data == b"x":
        break
    if data == b"p":
        os.write(1, f"\x1b[<u{name} POPPED\r\n".encode())
        continue
    os.write(1, f"{name}:{data.hex()}\r\n".encode())
termios.tcsetattr(fd, termios.TCSADRAIN, saved)
"#;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_program(dir: &std::path::Path) {
    std::fs::write(dir.join("keys.py"), KEYS_PY).expect("write keys.py");
}

/// A client in `outer` with the program running in its pane, having asked for `setup`.
fn program_in(env: &Env, outer: Outer, name: &str, setup: &[u8]) -> Term {
    write_program(&env.home());
    let mut t = env.client_in(outer, 160, 40, &[]);
    t.wait_text(PROMPT);
    t.line(&format!("python3 keys.py {name} {}", hex(setup)));
    t.wait_text(&format!("{name} READY"));
    t
}

/// Waits until the pane printed that it read `bytes`.
fn read(t: &Term, name: &str, bytes: &[u8]) {
    t.wait_text(&format!("{name}:{}", hex(bytes)));
}

/// The reads the pane printed, oldest first.
fn reads(t: &Term, name: &str) -> Vec<String> {
    let tag = format!("{name}:");
    t.rows()
        .iter()
        .flat_map(|r| r.split('│'))
        .map(str::trim)
        .filter(|l| l.starts_with(&tag))
        .map(|l| l[tag.len()..].to_string())
        .collect()
}

fn count_reads(t: &Term, name: &str) -> usize {
    reads(t, name).len()
}

/// Sends `key` and waits for the pane's next read, which must be `want` alone (a read
/// more shows up at the next key).
fn key(t: &mut Term, name: &str, key: &[u8], want: &[u8]) {
    let before = count_reads(t, name);
    t.send(key);
    t.wait(&format!("a read after {key:?}"), |t| {
        count_reads(t, name) > before
    });
    let got = reads(t, name);
    assert_eq!(got[before..], [hex(want)], "{key:?}:\n{}", t.contents());
}

#[test]
fn shift_enter_reaches_a_kitty_pane_as_csi_u_and_enter_stays_enter() {
    let env = Env::new("kitty-keys");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[>1u");
    // The client asked the terminal for every kitty enhancement and focus reports.
    let out = t.raw_output();
    assert!(support::contains(&out, b"\x1b[>31u"), "flags pushed");
    assert!(support::contains(&out, b"\x1b[?1004h"), "focus reports");
    assert_eq!(
        support::server_status(&env)["client_keys"],
        serde_json::json!(["kitty"])
    );
    // What a kitty terminal sends with those flags on, and what the pane gets.
    key(&mut t, "A", b"\x1b[13;2u", b"\x1b[13;2u"); // Shift+Enter
    key(&mut t, "A", b"\x1b[13u", b"\r"); // Enter
    key(&mut t, "A", b"\x1b[97;;97u", b"a"); // a
    key(&mut t, "A", b"\x1b[97;2;65u", b"A"); // Shift+a
    key(&mut t, "A", b"\x1b[9;5u", b"\x1b[9;5u"); // Ctrl+Tab
    key(&mut t, "A", b"\x1b[99;5u", b"\x1b[99;5u"); // Ctrl+c
    key(&mut t, "A", b"\x1b[27u", b"\x1b[27u"); // Escape
                                                // Releases and modifier keys: the pane did not ask for them.
    t.send(b"\x1b[57441;2u\x1b[13;2:3u\x1b[57441;1:3u");
    key(&mut t, "A", b"\x1b[122;;122u", b"z");
    // The program pops its flags: legacy keys at once.
    t.send(b"\x1b[112;;112u");
    t.wait_text("A POPPED");
    key(&mut t, "A", b"\x1b[13;2u", b"\r");
    key(&mut t, "A", b"\x1b[99;5u", b"\x03");
    key(&mut t, "A", b"\x1b[27u", b"\x1b");
}

#[test]
fn the_prefix_and_bindings_work_with_every_key_reported() {
    let env = Env::new("kitty-prefix");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[>1u");
    // Ctrl+b, then Shift+5 (%): with every key reported, modifier presses and releases
    // come between.
    t.send(b"\x1b[57442;5u\x1b[98;5u\x1b[98;5:3u\x1b[57442;1:3u");
    t.send(b"\x1b[57441;2u\x1b[53:37;2;37u\x1b[53:37;2:3;37u\x1b[57441;1:3u");
    t.wait("a second pane", |t| {
        support::pane_list(&env).len() == 2 && t.count(PROMPT) >= 2
    });
    // Back to the first pane (prefix, Left): its program sees no key of all that.
    t.send(b"\x1b[98;5u\x1b[98;5:3u\x1b[1D\x1b[1;1:3D");
    t.wait("focus back on the program's pane", |_| {
        support::pane_list(&env)
            .iter()
            .any(|p| p["focused"] == true && p["id"] == "p1")
    });
    key(&mut t, "A", b"\x1b[13;2u", b"\x1b[13;2u");
    assert_eq!(count_reads(&t, "A"), 1, "{}", t.contents());
    // The prefix twice sends it to the pane, encoded as the pane asked.
    t.send(b"\x1b[98;5u\x1b[98;5u");
    read(&t, "A", b"\x1b[98;5u");
}

#[test]
fn a_legacy_terminal_still_gives_kitty_panes_what_can_be_known() {
    let env = Env::new("legacy-keys");
    let mut t = program_in(&env, Outer::legacy(), "A", b"\x1b[>1u");
    assert!(!support::contains(&t.raw_output(), b"\x1b[>31u"));
    assert_eq!(
        support::server_status(&env)["client_keys"],
        serde_json::json!(["legacy"])
    );
    key(&mut t, "A", b"\r", b"\r");
    key(&mut t, "A", b"\x01", b"\x1b[97;5u"); // Ctrl+a
    key(&mut t, "A", b"\x1bx", b"\x1b[120;3u"); // Alt+x
    key(&mut t, "A", b"\x1b[A", b"\x1b[A");
    key(&mut t, "A", b"\x1b[1;5C", b"\x1b[1;5C");
    key(&mut t, "A", b"\x1b[15~", b"\x1b[15~");
    key(&mut t, "A", b"\x1b[Z", b"\x1b[9;2u");
    key(&mut t, "A", b"a", b"a");
    // A lone Escape.
    key(&mut t, "A", b"\x1b", b"\x1b[27u");
}

#[test]
fn two_panes_side_by_side_each_get_their_own_encoding() {
    let env = Env::new("two-modes");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[>1u");
    t.send(b"\x1b[98;5u\x1b[53:37;2;37u");
    t.wait("a second pane", |t| t.count(PROMPT) >= 2);
    t.line("python3 keys.py B");
    t.wait_text("B READY");
    key(&mut t, "B", b"\x1b[13;2u", b"\r");
    key(&mut t, "B", b"\x1b[9;5u", b"\t");
    key(&mut t, "B", b"\x1b[98;5u\x1b[98;5u", b"\x02");
    t.send(b"\x1b[98;5u\x1b[1D");
    t.wait("focus on A", |_| {
        support::pane_list(&env)
            .iter()
            .any(|p| p["focused"] == true && p["id"] == "p1")
    });
    key(&mut t, "A", b"\x1b[13;2u", b"\x1b[13;2u");
}

#[test]
fn modify_other_keys_panes_get_csi_27() {
    let env = Env::new("mok-keys");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[>4;2m");
    key(&mut t, "A", b"\x1b[9;5u", b"\x1b[27;5;9~"); // Ctrl+Tab
    key(&mut t, "A", b"\x1b[13;2u", b"\x1b[27;2;13~"); // Shift+Enter
    key(&mut t, "A", b"\x1b[97;;97u", b"a");
    key(&mut t, "A", b"\x1b[1;5A", b"\x1b[1;5A");

    // xterm: the client turns modifyOtherKeys on, and what xterm sends reaches a kitty
    // pane in kitty's words.
    let env = Env::new("xterm-keys");
    let mut t = program_in(&env, Outer::xterm(), "K", b"\x1b[>1u");
    assert!(support::contains(&t.raw_output(), b"\x1b[>4;2m"));
    key(&mut t, "K", b"\x1b[27;5;9~", b"\x1b[9;5u");
    key(&mut t, "K", b"\x1b[27;2;13~", b"\x1b[13;2u");
    key(&mut t, "K", b"\x1b[27;5;98~\x1b[27;5;98~", b"\x1b[98;5u");
}

#[test]
fn focus_reports_reach_a_1004_pane_once_per_change() {
    let env = Env::new("focus");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[?1004h");
    // A new pane takes the focus.
    t.send(b"\x1b[98;5u\x1b[53:37;2;37u");
    read(&t, "A", b"\x1b[O");
    t.wait("a second pane", |t| t.count(PROMPT) >= 2);
    // Back (prefix, Left).
    t.send(b"\x1b[98;5u\x1b[1D");
    read(&t, "A", b"\x1b[I");
    // The user's window loses the focus, gets it back; a repeated report changes nothing.
    t.send(b"\x1b[O");
    t.wait("focus out", |t| count_reads(t, "A") == 3);
    t.send(b"\x1b[O\x1b[I\x1b[I");
    t.wait("focus in", |t| count_reads(t, "A") == 4);
    key(&mut t, "A", b"\x1b[122;;122u", b"z");
    assert_eq!(
        reads(&t, "A"),
        ["1b5b4f", "1b5b49", "1b5b4f", "1b5b49", "7a"]
    );
    // A new tab hides the pane: it is told.
    t.send(b"\x1b[98;5u\x1b[99;;99u");
    read(&t, "A", b"\x1b[O");
}

#[test]
fn colour_queries_get_the_users_terminal_colours() {
    // A light theme.
    let env = Env::new("colours");
    let outer = Outer::kitty().colors("rgb:1111/1111/1111", "rgb:ffff/ffff/eeee");
    let mut t = program_in(&env, outer, "A", b"\x1b]11;?\x07");
    read(&t, "A", b"\x1b]11;rgb:ffff/ffff/eeee\x07");
    t.send(b"\x1b[120;;120u");
    t.wait("the program ended", |t| t.count(PROMPT) >= 2);
    drop(t);
    let t = {
        let mut t = env.client_in(Outer::kitty(), 160, 40, &[]);
        t.wait_text(PROMPT);
        t.line(&format!("python3 keys.py B {}", hex(b"\x1b]10;?\x1b\\")));
        t
    };
    read(&t, "B", b"\x1b]10;rgb:1111/1111/1111\x1b\\");
    // A terminal that does not say: the defaults, as before.
    let env = Env::new("colours-default");
    let t = program_in(&env, Outer::legacy(), "C", b"\x1b]11;?\x07");
    read(&t, "C", b"\x1b]11;rgb:0000/0000/0000\x07");
}

#[test]
fn the_terminal_is_put_back_on_detach_and_on_sigterm() {
    let env = Env::new("restore");
    let mut t = env.client_in(Outer::kitty(), 120, 30, &[]);
    t.wait_text(PROMPT);
    t.send(b"\x1b[98;5u\x1b[100;;100u"); // prefix, d
    assert_eq!(t.wait_exit(), 0);
    let out = t.raw_output();
    let pushed = support::find(&out, b"\x1b[>31u").expect("pushed");
    let popped = support::find(&out, b"\x1b[<1u").expect("popped");
    let focus_off = support::find(&out, b"\x1b[?1004l").expect("focus reports off");
    let left = support::find(&out, b"\x1b[?1049l").expect("alternate screen left");
    assert!(pushed < popped && popped < left && focus_off < left);

    let mut t = env.client_in(Outer::kitty(), 120, 30, &[]);
    t.wait_text(PROMPT);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(t.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    t.wait_exit();
    let out = t.raw_output();
    let pushed = support::find(&out, b"\x1b[>31u").expect("pushed");
    let rest = &out[pushed..];
    for undo in [
        &b"\x1b[<1u"[..],
        b"\x1b[?1004l",
        b"\x1b[?1000l",
        b"\x1b[?1049l",
    ] {
        assert!(support::contains(rest, undo), "{undo:?} after SIGTERM");
    }
    // Raw mode is off again: the terminal echoes what is typed.
    assert!(t.echoes(), "the terminal is back in cooked mode");
}

/// The same through `herdr --remote` against a real sshd: the terminal's capabilities
/// and colours travel in the hello, and a link lost for good leaves the terminal as it
/// was when the user gives up.
#[test]
fn through_remote_keys_colours_and_the_restore_work_the_same() {
    use support::sshd::{MuxGuard, Sshd, HOST};
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-keys");
    let _mux = MuxGuard(&env);
    write_program(&sshd.remote_home());
    let config = sshd.config().display().to_string();
    let outer = Outer::kitty().colors("rgb:0000/0000/0000", "rgb:ffff/ffff/ffff");
    let args = ["--remote", HOST, "--yes", "--", "-F", &config];
    let mut t = env.client_in(outer, 160, 40, &args);
    t.wait_text(PROMPT);
    t.line(&format!(
        "python3 ~/keys.py R {}",
        hex(b"\x1b[>1u\x1b[?1004h\x1b]11;?\x07")
    ));
    t.wait_text("R READY");
    read(&t, "R", b"\x1b]11;rgb:ffff/ffff/ffff\x07");
    key(&mut t, "R", b"\x1b[13;2u", b"\x1b[13;2u");
    key(&mut t, "R", b"\x1b[13u", b"\r");
    key(&mut t, "R", b"\x1b[O", b"\x1b[O");
    key(&mut t, "R", b"\x1b[I", b"\x1b[I");
    // The prefix: a new tab hides the pane.
    t.send(b"\x1b[98;5u\x1b[98;5:3u\x1b[99;;99u");
    read(&t, "R", b"\x1b[O");

    // The link goes silent; the user gives up (ctrl-c, as the kitty terminal sends it).
    let control = env.dir.path().join("run/herdr/ssh");
    let out = std::process::Command::new("pgrep")
        .args(["-f", &format!("ssh: {}", control.display())])
        .output()
        .unwrap();
    let pid: i32 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the shared ssh connection");
    let pid = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    t.wait_text("reconnecting to");
    t.send(b"\x1b[99;5u");
    t.wait_exit();
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let out = t.raw_output();
    let pushed = support::find(&out, b"\x1b[>31u").expect("pushed");
    for undo in [&b"\x1b[<1u"[..], b"\x1b[?1004l", b"\x1b[?1049l"] {
        assert!(support::contains(&out[pushed..], undo), "{undo:?}");
    }
    assert!(t.echoes());
}

#[test]
fn a_panes_key_modes_move_with_it_in_a_live_handoff() {
    let env = Env::new("keys-handoff");
    let mut t = program_in(&env, Outer::kitty(), "A", b"\x1b[>1u\x1b[?1004h");
    key(&mut t, "A", b"\x1b[13;2u", b"\x1b[13;2u");
    let out = support::ok(env.herdr(&["server", "handoff"]));
    assert!(out.contains("now serving"), "{out}");
    // The client comes back by itself; the new server encodes for the pane as the old one.
    t.wait("the client is back", |t| {
        support::server_status(&env)["clients"] == 1 && t.contents().contains("A READY")
    });
    let reads = count_reads(&t, "A");
    t.send(b"\x1b[13;2u");
    t.wait("Shift+Enter after the handoff", |t| {
        reads_after(t, reads).contains(&hex(b"\x1b[13;2u"))
    });
    key(&mut t, "A", b"\x1b[13u", b"\r");
}

/// The reads printed after the first `n`.
fn reads_after(t: &Term, n: usize) -> Vec<String> {
    reads(t, "A").into_iter().skip(n).collect()
}
