//! End-to-end: the real binary in a PTY, as a user at a terminal sees it.

mod support;

use support::{ok, pid_alive, wait_until, Env, PROMPT};

#[test]
fn starts_server_shows_shell_and_runs_commands() {
    let env = Env::new("start");
    let mut t = env.client(120, 36);
    t.wait_text(PROMPT);
    t.line("echo hello-$((6*7))");
    t.wait_text("hello-42");
    // The sidebar names the session; the status line shows the prefix hint.
    assert!(t.contents().contains(&format!("herdr · {}", env.session)));
    assert!(t.contents().contains("C-b ? help"));
}

#[test]
fn split_and_output_lands_in_the_right_pane_only() {
    let env = Env::new("split");
    let mut t = env.client(120, 36);
    t.wait_text(PROMPT);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.line("echo only-in-right");
    // The command line and its output: both must be there before looking.
    t.wait("the output", |t| t.count("only-in-right") == 2);
    // The new (right) pane is focused: the text is right of the vertical divider.
    let divider_col = t.with_screen(|s| {
        (0..120).find(|&c| {
            s.cell(10, c)
                .map(|cell| cell.contents() == "│")
                .unwrap_or(false)
                && c > 30
        })
    });
    let divider_col = divider_col.expect("a vertical divider");
    let row = t
        .rows()
        .into_iter()
        .find(|r| r.contains("only-in-right"))
        .unwrap();
    let col = row.find("only-in-right").unwrap();
    // Compare by characters: the sidebar has multi-byte box-drawing characters.
    let col_chars = row[..col].chars().count() as u16;
    assert!(
        col_chars > divider_col,
        "text at {col_chars}, divider at {divider_col}:\n{}",
        t.contents()
    );
    assert_eq!(
        t.count("only-in-right"),
        2,
        "command line + output, once each:\n{}",
        t.contents()
    );
}

#[test]
fn detach_and_reattach_shows_output_made_while_detached() {
    let env = Env::new("detach");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    t.line("sleep 1; echo made-while-$((1+1))-away");
    t.prefix(b"d");
    assert_eq!(t.wait_exit(), 0);
    t.wait_eof();
    let out = String::from_utf8_lossy(&t.raw_output()).to_string();
    assert!(out.contains("detached"), "{out}");
    // The server keeps running while nobody is attached.
    let pid = env.server_pid().expect("server still running");
    assert!(pid_alive(pid));
    let t2 = env.client(100, 30);
    t2.wait_text("made-while-2-away");
}

#[test]
fn server_stop_leaves_no_process_behind() {
    let env = Env::new("stop");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    let shell_pid = support::shell_pid(&env, &mut t);
    let server_pid = env.server_pid().unwrap();
    let out = env.herdr(&["server", "stop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!pid_alive(server_pid), "server still alive");
    wait_until("the shell to be gone", || !pid_alive(shell_pid));
    assert!(!env.socket().exists(), "socket left behind");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let env = Env::new("sigterm");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    let shell_pid = support::shell_pid(&env, &mut t);
    let server_pid = env.server_pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server_pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(t.wait_exit(), 0);
    wait_until("server and shell gone", || {
        !pid_alive(server_pid) && !pid_alive(shell_pid)
    });
    assert!(!env.socket().exists(), "socket left behind");
}

#[test]
fn losing_the_server_restores_the_terminal_and_says_why() {
    let env = Env::new("lost");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    let pid = env.server_pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(t.wait_exit(), 1);
    t.wait_eof();
    let out = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(out.contains("lost the connection to the server"), "{out}");
    // Raw mode and the alternate screen were left: the last thing written turns them off.
    assert!(out.contains("\x1b[?1049l"));
}

/// A client whose environment has `extra` on top of the test's.
fn client_with(env: &Env, extra: &[(&str, &str)]) -> support::Term {
    let mut cmd = portable_pty::CommandBuilder::new(support::BIN);
    cmd.env_clear();
    for (k, v) in env.vars() {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.args(["--session", &env.session]);
    cmd.cwd(env.home());
    support::Term::spawn(cmd, 120, 30)
}

#[test]
fn each_attach_repoints_the_panes_ssh_agent() {
    let env = Env::new("agent");
    let client_with_agent = |agent: &str| client_with(&env, &[("SSH_AUTH_SOCK", agent)]);
    let mut t = client_with_agent("/tmp/agent-one.sock");
    t.wait_text(PROMPT);
    t.line("echo sock=$SSH_AUTH_SOCK; echo now=$(readlink $SSH_AUTH_SOCK)");
    t.wait_text("now=/tmp/agent-one.sock");
    assert!(t.contents().contains(".ssh-agent"), "{}", t.contents());
    t.prefix(b"d");
    t.wait_exit();
    // A later attach from another connection: the same pane now reaches the new agent.
    let mut t = client_with_agent("/tmp/agent-two.sock");
    t.wait_text(PROMPT);
    t.line("echo again=$(readlink $SSH_AUTH_SOCK)");
    t.wait_text("again=/tmp/agent-two.sock");
}

#[test]
fn new_panes_get_the_display_of_the_latest_attach() {
    let env = Env::new("display");
    let mut t = client_with(&env, &[("DISPLAY", ":7")]);
    t.wait_text(PROMPT);
    let p2 = ok(env.herdr(&["pane", "split"]));
    support::prompt(&env, &p2);
    support::submit(&env, &p2, "echo D=[$DISPLAY]");
    support::wait_output(&env, &p2, r"D=\[:7\]");
    t.prefix(b"d");
    t.wait_exit();
    // From another display: panes started from now on use it; running ones keep theirs.
    let t = client_with(&env, &[("DISPLAY", ":9")]);
    t.wait_text(PROMPT);
    let p3 = ok(env.herdr(&["pane", "split"]));
    support::prompt(&env, &p3);
    support::submit(&env, &p3, "echo D=[$DISPLAY]");
    support::wait_output(&env, &p3, r"D=\[:9\]");
    support::submit(&env, &p2, "echo again D=[$DISPLAY]");
    support::wait_output(&env, &p2, r"again D=\[:7\]");
    drop(t);
    // A client without a display: new panes get none (not a stale one).
    let t = client_with(&env, &[]);
    t.wait_text(PROMPT);
    let p4 = ok(env.herdr(&["pane", "split"]));
    support::prompt(&env, &p4);
    support::submit(&env, &p4, "echo D=[$DISPLAY]");
    support::wait_output(&env, &p4, r"D=\[\]");
}

#[test]
fn the_server_reads_keys_from_the_terminal_and_draws_on_it_itself() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let env = Env::new("tty");
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    // With the client stopped, nothing could pass through it: keys and frames go
    // between the terminal and the server directly.
    let client = Pid::from_raw(t.pid());
    kill(client, Signal::SIGSTOP).unwrap();
    t.line("echo direct-$((40+2))");
    t.wait_text("direct-42");
    kill(client, Signal::SIGCONT).unwrap();
    // Size changes still come from the client; detaching hands the terminal back.
    t.resize(90, 28);
    t.line("tput cols");
    t.wait("the new width in the pane", |t| t.has_line("66"));
    t.prefix(b"q");
    assert_eq!(t.wait_exit(), 0);
    t.wait_text("[detached");
}

#[test]
fn a_client_that_leaves_in_the_middle_of_a_paste_leaves_it_closed() {
    // The program asked for paste markers; the client sends the start marker and 3 MiB,
    // then is gone before the end marker. The end marker must still reach the program,
    // or everything typed later would be taken as pasted text.
    let env = Env::new("paste-left");
    let got = env.home().join("got");
    let program = format!(
        "import os, sys, tty\n\
         tty.setraw(0)\n\
         os.write(1, b'\\x1b[?2004hREADY\\r\\n')\n\
         out = open({:?}, 'wb')\n\
         while True:\n\
         \x20   data = os.read(0, 1 << 16)\n\
         \x20   out.write(data)\n\
         \x20   out.flush()\n",
        got.display().to_string()
    );
    std::fs::write(env.home().join("reader.py"), program).unwrap();
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    t.line("python3 reader.py");
    t.wait_text("READY");
    let mut paste = b"\x1b[200~".to_vec();
    paste.resize(3 << 20, b'p');
    t.send(&paste);
    wait_until("the first pieces of the paste arrived", || {
        std::fs::metadata(&got).is_ok_and(|m| m.len() >= 1 << 20)
    });
    let client = t.pid();
    drop(t);
    wait_until("the client is gone", || !pid_alive(client));
    wait_until("the paste was closed", || {
        std::fs::read(&got).is_ok_and(|b| b.ends_with(b"\x1b[201~"))
    });
    let got = std::fs::read(&got).unwrap();
    assert!(got.starts_with(b"\x1b[200~"), "opened");
    assert_eq!(
        got.iter().filter(|&&b| b == 0x1b).count(),
        2,
        "one start, one end"
    );
}
