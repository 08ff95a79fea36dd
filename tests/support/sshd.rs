//! A real OpenSSH server on 127.0.0.1 for remote tests: its own host key, authorized key,
//! known_hosts and client config, and a separate HOME and XDG folders for the "remote"
//! side (set with sshd's SetEnv), so nothing touches the real home folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const HOST: &str = "herdr-test-remote";

pub struct Sshd {
    pub dir: tempfile::TempDir,
    child: Child,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a setup command");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Sshd {
    /// None (with the reason printed) where a test sshd cannot run: not root, or no sshd.
    pub fn start() -> Option<Sshd> {
        Sshd::start_at("127.0.0.1", None)
    }

    /// A server inside the devbox namespace of `net`, on its address (the client, here,
    /// reaches it over the veth pair, which the test can cut).
    pub fn start_in(net: &super::netns::Netns) -> Option<Sshd> {
        Sshd::start_at(&net.far_addr, Some(net))
    }

    fn start_at(addr: &str, net: Option<&super::netns::Netns>) -> Option<Sshd> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.exists() || !nix::unistd::getuid().is_root() {
            eprintln!("skipped: needs root and /usr/sbin/sshd (apt-get install openssh-server)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("herdr-sshd-")
            .tempdir()
            .unwrap();
        let p = |s: &str| dir.path().join(s);
        std::fs::create_dir_all("/run/sshd").unwrap();
        for d in ["rhome", "rstate", "rrun"] {
            std::fs::create_dir_all(p(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p("rrun"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(
            p("rhome/.bash_profile"),
            format!("PS1='{} '\n", super::PROMPT),
        )
        .unwrap();
        std::fs::write(p("rhome/.bashrc"), format!("PS1='{} '\n", super::PROMPT)).unwrap();
        for key in ["host_key", "user_key"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-f")
                .arg(p(key)));
        }
        std::fs::copy(p("user_key.pub"), p("authorized_keys")).unwrap();
        // A port is free when we look, but another test may take it before sshd binds it:
        // then our sshd exits, and a connection would reach the other test's server. So
        // readiness is proven with ssh itself (our host key, strictly checked), and a lost
        // port is retried with another.
        for _ in 0..5 {
            // (A namespace of its own has every port free.)
            let port = match net {
                Some(_) => 2222,
                None => std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port(),
            };
            Sshd::write_configs(dir.path(), addr, port);
            let mut command = match net {
                Some(net) => net.command(sshd.to_str().unwrap()),
                None => Command::new(sshd),
            };
            let mut child = command
                .args(["-D", "-f"])
                .arg(p("sshd_config"))
                .arg("-E")
                .arg(p("sshd.log"))
                .stdin(Stdio::null())
                // (Its sessions outlive it; none may hold the test's output open.)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start sshd");
            let deadline = std::time::Instant::now() + super::WAIT;
            let ready = loop {
                if child.try_wait().ok().flatten().is_some() {
                    break false;
                }
                let ok = Command::new("ssh")
                    .arg("-F")
                    .arg(p("ssh_config"))
                    .args([HOST, "true"])
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    break true;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "sshd never accepted us"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            };
            if ready {
                let addr = format!("{addr}:{port}").parse().expect("an address");
                return Some(Sshd { dir, child, addr });
            }
            let _ = child.wait();
        }
        panic!("could not start a test sshd on a free port");
    }

    fn write_configs(d: &Path, addr: &str, port: u16) {
        let p = |s: &str| d.join(s);
        let d = d.display();
        std::fs::write(
            p("sshd_config"),
            format!(
                "Port {port}\nListenAddress {addr}\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\n\
                 SetEnv HOME={d}/rhome XDG_RUNTIME_DIR={d}/rrun XDG_STATE_HOME={d}/rstate\nAcceptEnv DISPLAY\nLogLevel ERROR\n"
            ),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(p("host_key.pub")).unwrap();
        std::fs::write(p("known_hosts"), format!("[{addr}]:{port} {host_pub}")).unwrap();
        std::fs::write(
            p("ssh_config"),
            format!(
                "Host {HOST}\n  HostName {addr}\n  Port {port}\n  User root\n  IdentityFile {d}/user_key\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
            ),
        )
        .unwrap();
    }

    /// ssh arguments that reach this server through `relay` (its host key known under
    /// the name `herdr-relay`).
    pub fn through(&self, relay: &super::relay::Relay) -> Vec<String> {
        let key = std::fs::read_to_string(self.dir.path().join("host_key.pub")).unwrap();
        let known = self.dir.path().join("known_hosts");
        let mut text = std::fs::read_to_string(&known).unwrap();
        if !text.contains("herdr-relay") {
            text.push_str(&format!("herdr-relay {key}"));
            std::fs::write(&known, text).unwrap();
        }
        vec![
            "-F".into(),
            self.config().display().to_string(),
            "-p".into(),
            relay.port.to_string(),
            "-o".into(),
            "HostKeyAlias=herdr-relay".into(),
        ]
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    pub fn remote_home(&self) -> PathBuf {
        self.dir.path().join("rhome")
    }

    /// The environment the remote side runs with (for checks and cleanup from here).
    pub fn remote_vars(&self) -> Vec<(String, String)> {
        let d = self.dir.path();
        vec![
            ("HOME".into(), d.join("rhome").display().to_string()),
            (
                "XDG_RUNTIME_DIR".into(),
                d.join("rrun").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".into(),
                d.join("rstate").display().to_string(),
            ),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ]
    }

    pub fn port(&self) -> u16 {
        self.setting("Port ").parse().unwrap()
    }

    /// The address it listens on.
    pub fn addr(&self) -> String {
        self.setting("ListenAddress ")
    }

    fn setting(&self, prefix: &str) -> String {
        let config = std::fs::read_to_string(self.dir.path().join("sshd_config")).unwrap();
        config
            .lines()
            .find_map(|l| Some(l.strip_prefix(prefix)?.trim().to_string()))
            .unwrap()
    }

    /// Writes a client config for herdr's built-in ssh into `home/.ssh` (it reads
    /// `~/.ssh/config` through $HOME), with this server's host key known or not.
    pub fn builtin_client_config(&self, home: &Path, known: bool) {
        let ssh = home.join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(
            ssh.join("config"),
            format!(
                "Host {HOST}\n  HostName {}\n  Port {}\n  User root\n  IdentityFile {}\n",
                self.addr(),
                self.port(),
                self.dir.path().join("user_key").display()
            ),
        )
        .unwrap();
        if known {
            std::fs::copy(self.dir.path().join("known_hosts"), ssh.join("known_hosts")).unwrap();
        }
    }

    /// Ends every connection this server has open (its per-connection processes), as a
    /// dropped network would.
    pub fn drop_connections(&self) {
        let me = self.child.id().to_string();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1).map(str::to_string));
            if ppid.as_deref() == Some(me.as_str()) {
                let _ = Command::new("kill").arg("-9").arg(e.file_name()).status();
            }
        }
    }

    /// The ssh processes of a test (bridge, shared master): what a dropped link kills.
    pub fn kill_ssh_clients(&self) {
        let config = self.config().display().to_string();
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &format!("ssh .*{config}")])
            .status();
    }
}

/// Ends the shared SSH connections ("ssh: … [mux]", which outlive the test by
/// ControlPersist) of the client environment `env`.
pub struct MuxGuard<'a>(pub &'a super::Env);

impl MuxGuard<'_> {
    /// Ends the shared connection now: the next ssh makes a new one.
    pub fn end(&self) {
        let dir = self.0.dir.path().join("run/herdr/ssh");
        // KILL: a connection a test froze (SIGSTOP) would not act on TERM.
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &format!("ssh: {}", dir.display())])
            .status();
    }
}

impl Drop for MuxGuard<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill_ssh_clients();
        // Remote servers this test started run as us on this machine: stop them.
        if let Ok(entries) = std::fs::read_dir(self.dir.path().join("rrun/herdr")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if let Some(session) = name.strip_suffix(".sock") {
                    let _ = Command::new(super::BIN)
                        .env_clear()
                        .envs(self.remote_vars())
                        .args(["--session", session, "server", "stop"])
                        .output();
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
