//! `herdr --remote HOST`: make sure the remote host has this herdr and a running server,
//! then attach to it through `herdr remote-bridge` over SSH — the ordinary client, with a
//! transport that reconnects by itself when the link drops (laptop sleep, Wi-Fi change).
//!
//! Everything sent to the remote shell is a fixed `sh -c` script with the variable parts
//! single-quoted; nothing the user or the remote supplies is ever spliced in unquoted.
//! A binary is made executable on the remote only after its SHA-256 matched there.

pub mod bridge;
mod builtin;
mod error;
mod host;
mod install;
mod link;
pub mod machine_events;
pub mod machine_link;
pub mod machine_view;
pub mod probe;
pub mod server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use error::Error;

use crate::client::{self, Transport};
use crate::paths::{self, SessionName};

pub struct RemoteArgs {
    pub host: String,
    pub session: SessionName,
    pub yes: bool,
    /// Hand an older remote server's session to this version live.
    pub handoff: bool,
    /// Whose key bindings the remote session uses: this machine's or the host's.
    pub keybindings: Keybindings,
    /// OpenSSH or herdr's own client.
    pub ssh: SshClient,
    pub ssh_args: Vec<String>,
}

/// `--remote-keybindings`: `server` (the host's config, the default) or `local` (this
/// machine's `[keys]` and prefix, sent with the hello).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Keybindings {
    Local,
    #[default]
    Server,
}

/// Quotes a word for a POSIX shell (and for fish, which shares the `'…'\''…'` form).
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The SSH connection to the host: the user's OpenSSH client (the default) or herdr's
/// built-in one. Either runs fixed scripts with quoted arguments, and the bridge.
struct Ssh {
    host: String,
    how: How,
}

enum How {
    /// OpenSSH with connection sharing (probe, install and bridge authenticate once) and
    /// keepalives (a dead link is noticed within seconds) — each only where the user's own
    /// ssh config does not set it already: theirs wins.
    System {
        extra: Vec<String>,
        /// herdr's `-o` options the user's config leaves at OpenSSH's defaults.
        options: Vec<String>,
        /// The bridge's ssh while it runs, and those racing it while a link is made
        /// (kept, not reaped, while they may be killed: their pids cannot be reused).
        children: std::sync::Mutex<Vec<Child>>,
        /// Set when a link over the shared connection went silent: that connection may
        /// be frozen, so later bridges connect on their own.
        unshared: Arc<AtomicBool>,
    },
    Builtin(Box<std::sync::Mutex<builtin::Session>>),
}

/// A running remote command's stdio, as the bridge uses it.
struct Pipe {
    reader: Box<dyn ReadFd>,
    writer: Box<dyn WriteFd>,
    /// Ends it (its ssh killed, its channel closed).
    kill: Box<dyn Fn() + Send>,
}

trait ReadFd: std::io::Read + std::os::fd::AsFd + Send {}
impl<T: std::io::Read + std::os::fd::AsFd + Send> ReadFd for T {}
trait WriteFd: Write + std::os::fd::AsFd + Send {}
impl<T: Write + std::os::fd::AsFd + Send> WriteFd for T {}

/// Which SSH client `--remote` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SshClient {
    /// The user's OpenSSH client.
    #[default]
    System,
    /// herdr's own (for machines without OpenSSH).
    Builtin,
}

/// Where the shared connections' sockets live: `<runtime dir>/ssh`, or — when that path is
/// too long for a socket name with the 40-character `%C` and the 17 characters ssh adds
/// while creating it — a private folder under /tmp.
fn control_dir() -> Result<PathBuf, Error> {
    /// sun_path holds 108 bytes on Linux, 104 on the BSDs: the folder, a `/`, the 40 of
    /// `%C`, the 17 ssh adds while creating it, and the final NUL.
    const ROOM: usize = 104 - 1 - 1 - 40 - 17;
    let preferred = paths::runtime_dir().join("ssh");
    let dir = if preferred.as_os_str().len() <= ROOM {
        preferred
    } else {
        PathBuf::from(format!("/tmp/herdr-ssh-{}", nix::unistd::getuid()))
    };
    paths::ensure_private_dir(&dir)?;
    Ok(dir)
}

/// How long one connection attempt may take to reach the host (TCP and ssh's banner).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// herdr's ssh options: the `ssh -G` key, OpenSSH's default for it (as `ssh -G` prints it;
/// `None` when it prints nothing), and the option herdr passes.
fn our_options(control_dir: &Path) -> Vec<(&'static str, Option<&'static str>, String)> {
    vec![
        ("controlmaster", Some("false"), "ControlMaster=auto".into()),
        ("controlpersist", Some("no"), "ControlPersist=60".into()),
        (
            "controlpath",
            None,
            format!("ControlPath={}/%C", control_dir.display()),
        ),
        (
            "serveraliveinterval",
            Some("0"),
            "ServerAliveInterval=2".into(),
        ),
        // A connection attempt into a network that drops everything gives up soon, so the
        // next one (which may find the network back) comes soon.
        (
            "connecttimeout",
            Some("none"),
            format!("ConnectTimeout={}", CONNECT_TIMEOUT.as_secs()),
        ),
    ]
}

/// The options herdr adds, given what `ssh -G` says the user's config sets: an option
/// the user set to anything but OpenSSH's default is theirs.
fn options_to_add(control_dir: &Path, effective: Option<&str>) -> Vec<String> {
    let set: std::collections::HashMap<&str, &str> = effective
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.split_once(' '))
        .collect();
    let mut out: Vec<String> = our_options(control_dir)
        .into_iter()
        .filter(|(key, default, _)| effective.is_none() || set.get(key).copied() == *default)
        .map(|(_, _, opt)| opt)
        .collect();
    let count_unset = effective.is_none() || set.get("serveralivecountmax") == Some(&"3");
    if count_unset && out.iter().any(|o| o.starts_with("ServerAliveInterval")) {
        out.push("ServerAliveCountMax=3".into());
    }
    out
}

impl Ssh {
    fn new(host: &str, extra: &[String], client: SshClient) -> Result<Ssh, Error> {
        if client == SshClient::Builtin {
            if !extra.is_empty() {
                return Err(Error::ExtraArgsNeedOpenSsh);
            }
            return Ok(Ssh {
                host: host.to_string(),
                how: How::Builtin(Box::new(std::sync::Mutex::new(builtin::Session::new(
                    host,
                )?))),
            });
        }
        let control_dir = control_dir()?;
        // What the user's config (and extra arguments) make of this host, without
        // connecting.
        let effective = Command::new("ssh")
            .args(extra)
            .arg("-G")
            .arg("--")
            .arg(host)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        if effective
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Err(Error::NoSsh);
        }
        let effective = effective
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        Ok(Ssh {
            host: host.to_string(),
            how: How::System {
                extra: extra.to_vec(),
                options: options_to_add(&control_dir, effective.as_deref()),
                children: std::sync::Mutex::new(Vec::new()),
                unshared: Arc::new(AtomicBool::new(false)),
            },
        })
    }

    /// The command the remote shell runs: the fixed script, its arguments quoted.
    fn remote_command(script: &str, args: &[&str]) -> String {
        let mut remote = format!("sh -c {} herdr-remote", quote(script));
        for a in args {
            remote.push(' ');
            remote.push_str(&quote(a));
        }
        remote
    }

    /// `ssh … HOST sh -c SCRIPT ARGS…` with OpenSSH.
    fn command(host: &str, extra: &[String], options: &[String], remote: String) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(extra).arg("-T");
        for o in options {
            cmd.arg("-o").arg(o);
        }
        cmd.arg("--").arg(host).arg(remote);
        cmd
    }

    /// Runs a script to completion; stdout on success, a clear error otherwise.
    fn run(&self, script: &str, args: &[&str], input: Option<&Path>) -> Result<String, Error> {
        let remote = Self::remote_command(script, args);
        let (ok, status, out, err) = match &self.how {
            How::System { extra, options, .. } => {
                let mut cmd = Self::command(&self.host, extra, options, remote);
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                match input {
                    Some(file) => {
                        cmd.stdin(std::fs::File::open(file).map_err(|source| Error::Read {
                            path: file.into(),
                            source,
                        })?)
                    }
                    None => cmd.stdin(Stdio::null()),
                };
                let out = cmd.output().map_err(|source| Error::Io {
                    doing: "cannot run ssh; is the OpenSSH client installed?",
                    source,
                })?;
                (
                    out.status.success(),
                    out.status.to_string(),
                    out.stdout,
                    out.stderr,
                )
            }
            How::Builtin(session) => {
                let data = match input {
                    Some(file) => Some(std::fs::read(file).map_err(|source| Error::Read {
                        path: file.into(),
                        source,
                    })?),
                    None => None,
                };
                let mut session = session.lock().unwrap_or_else(|e| e.into_inner());
                let (code, out, err) = session.run(&remote, data.as_deref())?;
                (code == 0, format!("exit status: {code}"), out, err)
            }
        };
        if !ok {
            return Err(Error::SshFailed {
                host: self.host.clone(),
                status,
                stderr: String::from_utf8_lossy(&err).trim().into(),
            });
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Whether bridges are raced (`Bridge::race`): OpenSSH after a link went silent, when
    /// each bridge makes a connection of its own (the shared one may be frozen).
    fn races(&self) -> bool {
        matches!(&self.how, How::System { unshared, .. } if unshared.load(Ordering::Acquire))
    }

    /// Starts a script whose stdin and stdout stay connected (the bridge); ssh's own
    /// messages go to `log`. The bridges started before end, unless this one races them
    /// (`alongside`).
    fn stream(
        &self,
        script: &str,
        args: &[&str],
        log: &Path,
        alongside: bool,
    ) -> Result<Pipe, Error> {
        let remote = Self::remote_command(script, args);
        match &self.how {
            How::System {
                extra,
                options,
                children,
                unshared,
            } => {
                let mut slot = children.lock().unwrap_or_else(|e| e.into_inner());
                let own: Vec<String>;
                let options = if unshared.load(Ordering::Acquire) {
                    own = options
                        .iter()
                        .filter(|o| !o.starts_with("Control"))
                        .cloned()
                        .chain(["ControlMaster=no".into(), "ControlPath=none".into()])
                        // A racer beside the first never asks for a password: only one
                        // ssh may prompt on the terminal at a time.
                        .chain(alongside.then(|| "BatchMode=yes".into()))
                        .collect();
                    &own
                } else {
                    options
                };
                if !alongside {
                    for mut old in slot.drain(..) {
                        let _ = old.kill();
                        let _ = old.wait();
                    }
                }
                let log = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)?;
                let mut c = Self::command(&self.host, extra, options, remote)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(log)
                    .spawn()
                    .map_err(|source| Error::Io {
                        doing: "cannot run ssh",
                        source,
                    })?;
                let (Some(writer), Some(reader)) = (c.stdin.take(), c.stdout.take()) else {
                    return Err(Error::NoPipes);
                };
                let pid = nix::unistd::Pid::from_raw(c.id() as i32);
                // Kept (not reaped) while it may be killed: its pid cannot be reused.
                slot.push(c);
                let unshared = unshared.clone();
                Ok(Pipe {
                    reader: Box::new(reader),
                    writer: Box::new(writer),
                    kill: Box::new(move || {
                        unshared.store(true, Ordering::Release);
                        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                    }),
                })
            }
            How::Builtin(session) => {
                let mut session = session.lock().unwrap_or_else(|e| e.into_inner());
                let (sock, kill) = session.stream(&remote)?;
                Ok(Pipe {
                    reader: Box::new(sock.try_clone()?),
                    writer: Box::new(sock),
                    kill,
                })
            }
        }
    }
}

impl Drop for Ssh {
    fn drop(&mut self) {
        if let How::System { children, .. } = &self.how {
            for mut c in children.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// `[remote] ssh` in config.toml (`system` unless it says `builtin`).
pub fn configured_ssh_client() -> SshClient {
    let config = crate::config::current();
    match config.remote_ssh.as_str() {
        "builtin" => SshClient::Builtin,
        _ => SshClient::System,
    }
}

/// This machine's prefix and `[keys]`, for a remote session that uses them.
fn local_keys() -> crate::protocol::ClientKeys {
    let path = crate::config::default_path().unwrap_or_default();
    let (config, diags) = crate::config::load(&path);
    for d in diags {
        eprintln!("config: {d}");
    }
    crate::protocol::ClientKeys {
        prefix: config.prefix,
        keys: config.keys.into_iter().map(|k| (k.key, k.action)).collect(),
    }
}

/// The command that attaches again, as the user would type it.
fn reattach_command(args: &RemoteArgs) -> String {
    let mut c = format!("herdr --remote {}", quote_if_needed(&args.host));
    if !args.session.is_default() {
        c.push_str(&format!(" --session {}", args.session));
    }
    if args.keybindings == Keybindings::Local {
        c.push_str(" --remote-keybindings local");
    }
    if args.handoff {
        c.push_str(" --handoff");
    }
    if args.ssh == SshClient::Builtin {
        c.push_str(" --ssh builtin");
    }
    if !args.ssh_args.is_empty() {
        c.push_str(" --");
        for a in &args.ssh_args {
            c.push(' ');
            c.push_str(&quote_if_needed(a));
        }
    }
    c
}

fn quote_if_needed(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c))
    {
        w.to_string()
    } else {
        quote(w)
    }
}

/// Makes `args.host` ready as `--remote` does before it attaches (herdr there, checked or
/// installed after asking; its server running a protocol this one speaks), without
/// attaching: `herdr machine add`. Returns herdr's path on the host.
pub fn bootstrap(args: &RemoteArgs) -> Result<String, Error> {
    prepare(args).map(|(_, binary)| binary)
}

/// A host name that ssh will not take for an option.
fn check_host(host: &str) -> Result<(), Error> {
    match host.is_empty() || host.starts_with('-') {
        true => Err(Error::NotAHost(host.to_string())),
        false => Ok(()),
    }
}

/// The SSH connection to `args.host` and herdr's path there, once herdr is there (checked
/// or installed) and its server runs a protocol this one speaks; the private runtime
/// folder (for ssh's log and shared connections) exists.
fn prepare(args: &RemoteArgs) -> Result<(Ssh, String), Error> {
    check_host(&args.host)?;
    let ssh = Ssh::new(&args.host, &args.ssh_args, args.ssh)?;
    let binary = install::ensure_installed(&ssh, args)?;
    server::ensure_server(&ssh, &binary, args)?;
    paths::ensure_private_dir(&paths::runtime_dir())?;
    Ok((ssh, binary))
}

impl RemoteArgs {
    /// How a saved machine is reached (a background link: nothing asked, nothing
    /// installed unless `yes`).
    pub fn for_machine(m: &crate::machine::Machine, yes: bool) -> Result<RemoteArgs, Error> {
        Ok(RemoteArgs {
            host: m.host.clone(),
            session: SessionName::parse(&m.session)
                .map_err(|e| Error::Machine(crate::machine::Error::BadSession(e)))?,
            yes,
            handoff: false,
            keybindings: Keybindings::Server,
            ssh: configured_ssh_client(),
            ssh_args: m.ssh_args.clone(),
        })
    }
}

pub fn attach(args: RemoteArgs) -> Result<i32, Error> {
    check_host(&args.host)?;
    client::check_terminal()?;
    // Asked before ssh may ask for a password: the terminal's answers must not be typed.
    let terminal = client::probe::probe();
    let (ssh, binary) = prepare(&args)?;
    let log = paths::runtime_dir().join(format!("ssh-{}.log", args.session));
    let keys = (args.keybindings == Keybindings::Local).then(local_keys);
    let mut bridge = link::Bridge {
        ssh,
        binary,
        session: args.session.clone(),
        keys,
        log,
        cancel: Arc::new(AtomicBool::new(false)),
        terminal: terminal.clone(),
    };
    let first = bridge.open(client::terminal_size(), None)?;
    let outcome = client::run(&mut bridge, first, &terminal)?;
    Ok(client::report(
        outcome,
        &bridge.describe(),
        Some(&reattach_command(&args)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_ssh_config_wins_where_it_sets_something() {
        let dir = Path::new("/run/h/ssh");
        let defaults = "user u\ncontrolmaster false\nserveralivecountmax 3\nserveraliveinterval 0\ncontrolpersist no\nconnecttimeout none\n";
        assert_eq!(
            options_to_add(dir, Some(defaults)),
            [
                "ControlMaster=auto",
                "ControlPersist=60",
                "ControlPath=/run/h/ssh/%C",
                "ServerAliveInterval=2",
                "ConnectTimeout=2",
                "ServerAliveCountMax=3"
            ]
        );
        let theirs = "controlmaster auto\ncontrolpath ~/.ssh/cm-%C\ncontrolpersist 600\nserveraliveinterval 15\nconnecttimeout 30\n";
        assert!(options_to_add(dir, Some(theirs)).is_empty());
        // Without `ssh -G` (an old OpenSSH), herdr's options all apply.
        assert_eq!(options_to_add(dir, None).len(), 6);
    }

    #[test]
    fn quoting_keeps_every_character_literal() {
        assert_eq!(
            quote("a b;touch /tmp/pwned-$$"),
            "'a b;touch /tmp/pwned-$$'"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote("x'$(echo no)`id`;\"y")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "x'$(echo no)`id`;\"y");
    }
}
