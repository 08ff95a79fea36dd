//! End-to-end over a real OpenSSH server: install, attach, reconnect after the link drops.

mod support;

use support::sshd::{MuxGuard, Sshd, HOST};
use support::{Env, PROMPT};

fn sha256(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn remote_install_attach_reconnect_and_reattach() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote");
    let _mux = MuxGuard(&env);
    let config = sshd.config().display().to_string();
    let args = ["--remote", HOST, "--yes", "--", "-F", &config];
    let mut t = env.client_with_args(120, 36, &args);
    t.wait_text(PROMPT);
    t.line("echo remote-$((40+2)) in $HOME");
    t.wait_text(&format!("remote-42 in {}", sshd.remote_home().display()));

    // This very binary was installed, in the versioned place, with its checksum.
    let installed = sshd.remote_home().join(format!(
        ".local/share/herdr/bin/{}/herdr",
        env!("CARGO_PKG_VERSION")
    ));
    assert_eq!(
        sha256(&installed),
        sha256(std::path::Path::new(support::BIN))
    );
    let installed_at = std::fs::metadata(&installed).unwrap().modified().unwrap();

    // Cut the link the way a dead network ends ssh; the program keeps running remotely.
    t.line("sleep 2; echo while-$((1+1))-cut");
    // (Keys still on their way when the link dies are lost, as with any ssh session.)
    t.wait_text("sleep 2; echo while-$((1+1))-cut");
    sshd.kill_ssh_clients();
    t.wait_text("reconnecting to");
    t.wait_text("while-2-cut");
    t.wait("the reconnect note is gone", |t| {
        !t.contents().contains("reconnecting to")
    });
    t.line("echo after-$((2+3))");
    t.wait_text("after-5");

    // Detach: the exact command to come back is printed.
    t.prefix(b"d");
    assert_eq!(t.wait_exit(), 0);
    t.wait_eof();
    let out = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(
        out.contains(&format!(
            "reattach with: herdr --remote {HOST} --session {}",
            env.session
        )),
        "{out}"
    );

    // A second connect reuses the installed binary and the running server.
    let mut t = env.client_with_args(120, 36, &args);
    t.wait_text("after-5");
    assert_eq!(
        std::fs::metadata(&installed).unwrap().modified().unwrap(),
        installed_at
    );

    // The session picker lists the host's sessions, and Enter moves this client to
    // another one over a new bridge.
    t.line(&format!(
        "{} --session zz-two server start",
        installed.display()
    ));
    t.wait_text("started the herdr server for session zz-two");
    t.prefix(b"s");
    t.wait("zz-two in the picker", |t| {
        t.contents()
            .lines()
            .any(|l| l.contains("zz-two") && l.contains("running"))
    });
    t.send(b"G");
    t.send(b"\r");
    t.wait_text("[zz-two]");
    t.wait_text(PROMPT);
    t.line("echo in-$((2*11))");
    t.wait_text("in-22");
}

/// A link that ends (ssh killed): the server parks the client's screen, and the client
/// that comes back is sent only the rows that changed meanwhile.
#[test]
fn a_client_back_after_its_link_ended_is_sent_only_what_changed() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-resume");
    let _mux = MuxGuard(&env);
    let end = || sshd.kill_ssh_clients();
    support::resume::back_after(&env, &sshd, end, "back after the link ended");
}

#[test]
fn a_remote_without_herdr_and_no_yes_is_not_touched() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-ask");
    let _mux = MuxGuard(&env);
    let config = sshd.config().display().to_string();
    // Not interactive (no terminal on stdin) and no --yes: refused with the command to run.
    let out = std::process::Command::new(support::BIN)
        .env_clear()
        .envs(env.vars())
        .args(["--remote", HOST, "--", "-F", &config])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") || err.contains("--yes"),
        "{err}"
    );
    assert!(!sshd.remote_home().join(".local/share/herdr").exists());
    // A session name that would run something in a shell is refused before ssh runs
    // (and everything that reaches the remote shell is quoted anyway).
    let marker = env.dir.path().join("pwned-session");
    let out = std::process::Command::new(support::BIN)
        .env_clear()
        .envs(env.vars())
        .args(["--remote", HOST, "--session"])
        .arg(format!("a b;touch {}", marker.display()))
        .args(["--", "-F", &config])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not allowed"), "{err}");
    assert!(!marker.exists());
    // A host that looks like an option is refused before ssh runs.
    let marker = env.dir.path().join("pwned");
    let out = env.herdr(&[
        "--remote",
        &format!("-oProxyCommand=touch {}", marker.display()),
    ]);
    assert!(!out.status.success());
    assert!(!marker.exists());
}

#[test]
fn another_build_at_the_versioned_path_is_replaced() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-mismatch");
    let _mux = MuxGuard(&env);
    let dir = sshd.remote_home().join(format!(
        ".local/share/herdr/bin/{}",
        env!("CARGO_PKG_VERSION")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    // Something that answers to another version sits where ours belongs.
    std::fs::write(dir.join("herdr"), "#!/bin/sh\necho herdr 0.0.1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("herdr"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = sshd.config().display().to_string();
    let t = env.client_with_args(100, 30, &["--remote", HOST, "--yes", "--", "-F", &config]);
    t.wait_text(PROMPT);
    assert_eq!(
        sha256(&dir.join("herdr")),
        sha256(std::path::Path::new(support::BIN))
    );
}

#[test]
fn a_herdr_on_the_login_shells_path_is_used_as_it_is() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-login-path");
    let _mux = MuxGuard(&env);
    // herdr is installed where only a login shell looks (its profile extends PATH).
    let tools = sshd.remote_home().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::os::unix::fs::symlink(support::BIN, tools.join("herdr")).unwrap();
    let profile = sshd.remote_home().join(".bash_profile");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(&profile, format!("{text}PATH=\"$HOME/tools:$PATH\"\n")).unwrap();
    let config = sshd.config().display().to_string();
    // No --yes: an install would have to ask, and the prompt would never come.
    let t = env.client_with_args(100, 30, &["--remote", HOST, "--", "-F", &config]);
    t.wait_text(PROMPT);
    assert!(
        !sshd.remote_home().join(".local/share/herdr/bin").exists(),
        "nothing was installed"
    );
}

/// The SHA-256 the release manifest in `releases` gives for this machine's platform.
fn manifest_sha(releases: &std::path::Path) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(releases.join("stable.json")).unwrap()).unwrap();
    let platform = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
    m["platforms"][platform]["sha256"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_host_can_download_the_release_build_which_it_checks_first() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-download");
    let _mux = MuxGuard(&env);
    let releases = env.dir.path().join("releases");
    std::fs::create_dir_all(&releases).unwrap();
    let http = support::http::HttpServer::start(releases.clone());
    let version = env!("CARGO_PKG_VERSION");
    support::release::release(&releases, &http.url(), "stable", version, None);
    std::fs::write(
        env.config_file(),
        format!(
            "[update]\nreleases_url = \"{}\"\n\n[remote]\ninstall = \"download\"\n",
            http.url()
        ),
    )
    .unwrap();
    let config = sshd.config().display().to_string();
    let args = ["--remote", HOST, "--yes", "--", "-F", &config];
    let target = sshd
        .remote_home()
        .join(format!(".local/share/herdr/bin/{version}/herdr"));

    // A manifest whose checksum does not match what the host downloads: refused there,
    // and nothing executable is left.
    let good = manifest_sha(&releases);
    let manifest = std::fs::read_to_string(releases.join("stable.json")).unwrap();
    std::fs::write(
        releases.join("stable.json"),
        manifest.replace(&good, &"0".repeat(64)),
    )
    .unwrap();
    let mut t = env.client_with_args(100, 30, &args);
    assert_ne!(t.wait_exit(), 0);
    let said = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(said.contains("checksum mismatch"), "{said}");
    assert!(!target.exists());
    assert_eq!(
        std::fs::read_dir(target.parent().unwrap()).unwrap().count(),
        0,
        "no partial download left"
    );

    // The right one is installed, and it is the release build, not an upload.
    std::fs::write(releases.join("stable.json"), manifest).unwrap();
    let t = env.client_with_args(100, 30, &args);
    t.wait_text(PROMPT);
    assert_eq!(sha256(&target), good);
}

#[test]
fn the_remote_session_can_use_this_machines_key_bindings() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-keys");
    let _mux = MuxGuard(&env);
    // Here the prefix is ctrl-a; the host keeps the default ctrl-b.
    std::fs::write(env.config_file(), "prefix = \"C-a\"\n").unwrap();
    let config = sshd.config().display().to_string();
    let local = [
        "--remote",
        HOST,
        "--yes",
        "--remote-keybindings",
        "local",
        "--",
        "-F",
        &config,
    ];
    let mut t = env.client_with_args(100, 30, &local);
    t.wait_text(PROMPT);
    t.send(b"\x01?");
    t.wait_text("Press C-a then:");
    t.send(b"q");
    t.wait("the help closed", |t| !t.contents().contains("Press C-a"));
    t.send(b"\x01d");
    t.wait_exit();
    let out = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(
        out.contains("--remote-keybindings local"),
        "the reattach command keeps the choice: {out}"
    );

    // By default the host's bindings apply: ctrl-b is its prefix.
    let mut t = env.client_with_args(100, 30, &["--remote", HOST, "--", "-F", &config]);
    t.wait_text(PROMPT);
    t.send(b"\x02?");
    t.wait_text("Press C-b then:");
    drop(t);

    // Without --remote the option makes no sense, and says so.
    let out = env.herdr(&["--remote-keybindings", "local"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--remote"));
}

#[test]
fn an_older_remote_server_is_reused_or_handed_over_live() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-handoff");
    let _mux = MuxGuard(&env);
    // An older herdr runs the session on the host, with a program in its pane.
    let releases = env.dir.path().join("releases");
    std::fs::create_dir_all(&releases).unwrap();
    support::release::release(&releases, "http://127.0.0.1:1", "stable", "0.0.9", None);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(releases.join("stable.json")).unwrap()).unwrap();
    let platform = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
    let file = m["platforms"][platform]["url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let old = sshd.remote_home().join("old-herdr");
    support::copy_executable(releases.join(file), &old);
    let on_host = |bin: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(bin)
            .env_clear()
            .envs(sshd.remote_vars())
            .env("SHELL", "/bin/bash")
            .arg("--session")
            .arg(&env.session)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    on_host(&old, &["server", "start"]);
    let status = |bin: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&on_host(bin, &["server", "status", "--json"])).unwrap()
    };
    assert_eq!(status(&old)["version"], "0.0.9");
    let pid = |bin: &std::path::Path| -> serde_json::Value {
        let list: serde_json::Value =
            serde_json::from_str(&on_host(bin, &["pane", "list", "--json"])).unwrap();
        list[0]["pid"].clone()
    };
    let before = pid(&old);

    // Without --handoff, the older server (same protocol) is attached to as it is.
    let config = sshd.config().display().to_string();
    let t = env.client_with_args(100, 30, &["--remote", HOST, "--yes", "--", "-F", &config]);
    t.wait_text(PROMPT);
    drop(t);
    assert_eq!(status(&old)["version"], "0.0.9");

    // With --handoff, its session moves to this version; the pane's program lives on.
    let args = ["--remote", HOST, "--yes", "--handoff", "--", "-F", &config];
    let t = env.client_with_args(100, 30, &args);
    t.wait_text(PROMPT);
    let ours = std::path::Path::new(support::BIN);
    assert_eq!(status(ours)["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(pid(ours), before, "the same program, not a restart");
}

#[test]
fn remote_panes_get_the_hosts_display_and_the_users_ssh_config_wins() {
    let Some(sshd) = Sshd::start() else { return };
    let mut env = Env::new("remote-display");
    env.extra_vars.push(("DISPLAY".into(), ":7".into()));
    let mux = MuxGuard(&env);
    // The user's own ssh config sets a keepalive: theirs is used, not herdr's.
    let user_config = env.dir.path().join("user_ssh_config");
    std::fs::write(
        &user_config,
        format!(
            "ServerAliveInterval 17\nInclude {}\n",
            sshd.config().display()
        ),
    )
    .unwrap();
    let config = user_config.display().to_string();
    let attach = |display: &str| {
        let set = format!("SetEnv=DISPLAY={display}");
        let args = ["--remote", HOST, "--yes", "--", "-F", &config, "-o", &set];
        env.client_with_args(120, 30, &args)
    };
    let mut t = attach("remote:1");
    t.wait_text(PROMPT);
    t.prefix(b"%");
    t.wait("a second pane", |t| {
        t.contents().matches(PROMPT).count() >= 2
    });
    t.line("echo D=[$DISPLAY]");
    t.wait_text("D=[remote:1]");
    let ssh_lines: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with("ssh ") && c.contains(&config))
        .collect();
    assert!(!ssh_lines.is_empty());
    for l in &ssh_lines {
        assert!(!l.contains("ServerAliveInterval=2"), "{l}");
        assert!(l.contains("ControlMaster=auto"), "{l}");
    }
    t.prefix(b"d");
    t.wait_exit();
    // A new connection (the shared one is gone, as after a sleep) with another forwarded
    // display: panes started from now on use that one.
    mux.end();
    sshd.kill_ssh_clients();
    let mut t = attach("remote:2");
    t.wait_text("D=[remote:1]");
    t.prefix(b"%");
    t.wait("a third pane", |t| {
        t.contents().matches(PROMPT).count() >= 3
    });
    t.line("echo E=[$DISPLAY]");
    t.wait_text("E=[remote:2]");
}

/// Processes whose command line contains all of `parts`.
fn pids_with(parts: &[&str]) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            parts.iter().all(|p| cmd.contains(p)).then_some(pid)
        })
        .collect()
}

#[test]
fn a_link_that_goes_silent_is_noticed_by_the_client_itself() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-silent");
    let _mux = MuxGuard(&env);
    let config = sshd.config().display().to_string();
    let mut t = env.client_with_args(100, 30, &["--remote", HOST, "--yes", "--", "-F", &config]);
    t.wait_text(PROMPT);
    t.line("while sleep 0.5; do echo tick-$((n=n+1)); done");
    t.wait_text("tick-2");
    // The shared ssh connection freezes, as a link that stops carrying anything does:
    // no end-of-file, no error — only silence.
    let control = env.dir.path().join("run/herdr/ssh");
    let master = pids_with(&["ssh: ", control.to_str().unwrap()]);
    assert_eq!(master.len(), 1, "{master:?}");
    let master = nix::unistd::Pid::from_raw(master[0]);
    use nix::sys::signal::{kill, Signal};
    kill(master, Signal::SIGSTOP).unwrap();
    let frozen = std::time::Instant::now();
    t.wait_text("reconnecting to");
    let noticed = frozen.elapsed();
    assert!(
        noticed >= std::time::Duration::from_secs(5),
        "not before it was silent for a while: {noticed:?}"
    );
    let ticks_then = t.contents().matches("tick-").count();
    // The network comes back: the client is live again by itself, with what the program
    // printed meanwhile.
    kill(master, Signal::SIGCONT).unwrap();
    let back = std::time::Instant::now();
    t.wait("the live screen is back", |t| {
        !t.contents().contains("reconnecting to")
    });
    eprintln!("live again {:?} after the link came back", back.elapsed());
    t.wait("ticks printed meanwhile", |t| {
        t.contents().matches("tick-").count() > ticks_then
    });
    t.send(b"\x03");
    t.line("echo back-$((6*7))");
    // (Should the keys not arrive, what both ends logged says where they stopped.)
    let logs = [
        sshd.dir
            .path()
            .join("rstate/herdr/sessions")
            .join(&env.session)
            .join("server.log"),
        env.dir
            .path()
            .join(format!("run/herdr/ssh-{}.log", env.session)),
    ];
    let tail = |p: &std::path::Path| {
        let text = std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "\n{}:\n{}",
            p.display(),
            lines[lines.len().saturating_sub(40)..].join("\n")
        )
    };
    t.wait_or_tell(
        "the keys typed after the link came back (\"back-42\" on screen)",
        |t| t.contents().contains("back-42"),
        || logs.iter().map(|l| tail(l)).collect(),
    );
    assert!(
        logs.iter().all(|l| l.exists()),
        "the logs shown on a failure: {logs:?}"
    );
    // The link that came back is a connection of its own (the shared one had frozen).
    // Frozen again, and this time the user gives up while it is silent: ctrl-c ends the
    // client at once, with the command to come back.
    let own = pids_with(&["ssh ", &config, "ControlPath=none", "remote-bridge"]);
    assert_eq!(own.len(), 1, "{own:?}");
    let own = nix::unistd::Pid::from_raw(own[0]);
    kill(own, Signal::SIGSTOP).unwrap();
    t.wait_text("reconnecting to");
    t.send(b"\x03");
    t.wait_exit();
    let _ = kill(own, Signal::SIGKILL);
    let out = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(out.contains("reattach with: herdr --remote"), "{out}");
}

#[test]
fn the_builtin_ssh_client_attaches_and_reconnects() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-builtin");
    sshd.builtin_client_config(&env.home(), true);
    let args = ["--remote", HOST, "--yes", "--ssh", "builtin"];
    let mut t = env.client_with_args(100, 30, &args);
    t.wait_text(PROMPT);
    t.line("echo via-$((40+2))-builtin");
    t.wait_text("via-42-builtin");
    // The network drops every connection: the client reconnects by itself.
    t.line("sleep 2; echo while-$((1+1))-cut");
    t.wait_text("sleep 2; echo while-$((1+1))-cut");
    sshd.drop_connections();
    t.wait_text("reconnecting to");
    t.wait_text("while-2-cut");
    t.wait("the reconnect note is gone", |t| {
        !t.contents().contains("reconnecting to")
    });
    t.prefix(b"d");
    assert_eq!(t.wait_exit(), 0);
    let out = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(out.contains("--ssh builtin"), "{out}");
}

#[test]
fn the_builtin_ssh_client_asks_about_an_unknown_host_and_refuses_a_changed_key() {
    let Some(sshd) = Sshd::start() else { return };
    let env = Env::new("remote-hostkey");
    sshd.builtin_client_config(&env.home(), false);
    let known = env.home().join(".ssh/known_hosts");
    let args = ["--remote", HOST, "--yes", "--ssh", "builtin"];
    // Unknown: asked at the terminal; "no" connects nothing and remembers nothing.
    let mut t = env.client_with_args(100, 30, &args);
    t.wait_text("is not known");
    t.wait_text("Trust it and remember it");
    t.send(b"n\r");
    assert_ne!(t.wait_exit(), 0);
    assert!(String::from_utf8_lossy(&t.raw_output()).contains("was not trusted"));
    assert!(
        !known.exists()
            || !std::fs::read_to_string(&known)
                .unwrap()
                .contains("127.0.0.1")
    );
    // "yes" remembers it and connects.
    let mut t = env.client_with_args(100, 30, &args);
    t.wait_text("Trust it and remember it");
    t.send(b"y\r");
    t.wait_text(PROMPT);
    let recorded = std::fs::read_to_string(&known).unwrap();
    assert!(
        recorded.contains(&format!("[127.0.0.1]:{}", sshd.port())),
        "{recorded}"
    );
    t.prefix(b"d");
    t.wait_exit();

    // Changed: the recorded key is another one. Refused loudly, nothing asked.
    let other = env.dir.path().join("other_key");
    let ok = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    std::fs::write(&known, format!("[127.0.0.1]:{} {}", sshd.port(), other_pub)).unwrap();
    let mut t = env.client_with_args(100, 30, &args);
    assert_ne!(t.wait_exit(), 0);
    let said = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(said.contains("HAS CHANGED"), "{said}");
}
