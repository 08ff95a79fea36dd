//! Saved machines for the tests: each a real OpenSSH server ([`super::sshd`]) added with
//! `herdr machine add`, and commands run on it with `--machine`.

use std::time::{Duration, Instant};

use super::sshd::{Sshd, HOST};
use super::{ok, Env};

/// Generous: a machine's first link installs nothing (added with --yes before) but
/// starts its server; a cut link is given up after ~6 s of silence.
pub const LINKED: Duration = Duration::from_secs(60);

pub fn add(env: &Env, name: &str, sshd: &Sshd) {
    let config = sshd.config().display().to_string();
    ok(env.herdr(&[
        "machine", "add", name, "--host", HOST, "--yes", "--", "-F", &config,
    ]));
}

/// Runs `herdr --machine NAME ARGS…`.
pub fn on(env: &Env, machine: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--machine", machine];
    all.extend_from_slice(args);
    env.herdr(&all)
}

/// Waits until `pane` on `machine` shows `text` (read through `--machine`, once the
/// machine's link is up).
pub fn wait_pane(env: &Env, machine: &str, pane: &str, text: &str) {
    let deadline = Instant::now() + LINKED;
    loop {
        let out = on(env, machine, &["pane", "read", "--pane", pane]);
        let screen = String::from_utf8_lossy(&out.stdout).to_string();
        if screen.contains(text) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{machine} {pane} never showed {text:?}; it shows:\n{screen}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Types `text` and Enter into `pane` on `machine` (`pane submit` through `--machine`).
pub fn submit(env: &Env, machine: &str, pane: &str, text: &str) {
    ok(on(env, machine, &["pane", "submit", "--pane", pane, text]));
}

/// A fake agent for `sshd`'s host: it reports itself blocked from inside its pane, as
/// an agent's hook would, then waits.
pub fn blocked_agent(sshd: &Sshd) -> String {
    let bin = sshd.remote_home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // (Named as the agent: what runs in front in the pane is taken for it.)
    let path = bin.join("claude");
    std::fs::write(
        &path,
        format!(
            "#!/bin/bash\n{} agent report --source herdr:claude --agent claude --state blocked && echo agent-reported\nwhile read -r line; do :; done\n",
            super::BIN
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Starts `herdr --machine NAME ARGS…` in this session, its output piped, without
/// waiting for it.
pub fn spawn_on(env: &Env, machine: &str, args: &[&str]) -> std::process::Child {
    let mut all = vec!["--session", env.session.as_str(), "--machine", machine];
    all.extend_from_slice(args);
    env.command(super::BIN, &all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}
