//! `--ssh builtin`: herdr's own SSH client (russh), for machines without OpenSSH. It reads
//! Host/HostName/User/Port/IdentityFile/UserKnownHostsFile from `~/.ssh/config`,
//! authenticates with the SSH agent and then unencrypted key files, and checks the host
//! key strictly against known_hosts: an unknown host is asked about (only at a terminal),
//! a changed key is refused loudly.
//!
//! russh is async: its runtime lives on one worker thread of its own; the rest of herdr
//! sees blocking calls and, for the bridge, a plain socket.

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client;
use russh::keys::{self, PrivateKeyWithHashAlg, PublicKey};
use russh::ChannelMsg;

/// How long opening a channel on an established connection may take.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(20);
/// How long reaching the host (its TCP connection) may take.
const REACH_TIMEOUT: Duration = Duration::from_secs(2);

/// Where and as whom to connect, from the user's ssh config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub alias: String,
    pub host_name: String,
    pub port: u16,
    pub user: String,
    pub identities: Vec<PathBuf>,
    pub known_hosts: Vec<PathBuf>,
}

/// Whether `name` matches an ssh_config host pattern (`*` and `?` wildcards).
fn glob(pattern: &str, name: &str) -> bool {
    fn rec(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => rec(&p[1..], n) || (!n.is_empty() && rec(p, &n[1..])),
            (Some('?'), Some(_)) => rec(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => rec(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    rec(&p, &n)
}

/// A `Host` line's patterns against the alias: one must match, and no negated one.
fn host_matches(patterns: &[&str], alias: &str) -> bool {
    let negated = patterns
        .iter()
        .filter_map(|p| p.strip_prefix('!'))
        .any(|p| glob(p, alias));
    !negated
        && patterns
            .iter()
            .filter(|p| !p.starts_with('!'))
            .any(|p| glob(p, alias))
}

/// The values ssh_config gives `alias`, by lower-case keyword: the first value wins, as
/// in OpenSSH, except IdentityFile and UserKnownHostsFile, which add up. `Match` blocks
/// are not understood and are skipped.
pub fn config_values(text: &str, alias: &str) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    let mut active = true;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once(|c: char| c == '=' || c.is_whitespace()) {
            Some((k, v)) => (
                k.trim().to_ascii_lowercase(),
                v.trim().trim_start_matches('=').trim(),
            ),
            None => continue,
        };
        match key.as_str() {
            "host" => {
                let patterns: Vec<&str> = value.split_whitespace().collect();
                active = host_matches(&patterns, alias);
            }
            "match" => active = false,
            _ if active => {
                let value = value.trim_matches('"').to_string();
                let many = matches!(key.as_str(), "identityfile" | "userknownhostsfile");
                let slot = out.entry(key).or_default();
                if many {
                    slot.extend(value.split_whitespace().map(str::to_string));
                } else if slot.is_empty() {
                    slot.push(value);
                }
            }
            _ => {}
        }
    }
    out
}

fn expand(path: &str, home: &Path, host: &str, user: &str) -> PathBuf {
    let p = path
        .replace("%d", &home.display().to_string())
        .replace("%h", host)
        .replace("%r", user)
        .replace("%%", "%");
    match p.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if p == "~" => home.to_path_buf(),
        None => PathBuf::from(p),
    }
}

/// The connection target for `alias` from the config text (if any).
pub fn resolve(alias: &str, config: Option<&str>, home: &Path, local_user: &str) -> Target {
    // `user@host`: the config's Host patterns match the host part (as in OpenSSH).
    let (alias_user, alias_host) = match alias.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h.to_string()),
        None => (None, alias.to_string()),
    };
    let values = config
        .map(|t| config_values(t, &alias_host))
        .unwrap_or_default();
    let first = |k: &str| values.get(k).and_then(|v| v.first()).cloned();
    let host_name = first("hostname")
        .map(|h| h.replace("%h", &alias_host))
        .unwrap_or_else(|| alias_host.clone());
    let user = alias_user
        .or_else(|| first("user"))
        .unwrap_or_else(|| local_user.to_string());
    let port = first("port").and_then(|p| p.parse().ok()).unwrap_or(22);
    // Paths from the config, expanded; else OpenSSH's defaults.
    let paths = |key: &str, defaults: &[&str]| -> Vec<PathBuf> {
        match values.get(key).filter(|v| !v.is_empty()) {
            Some(v) => v
                .iter()
                .map(|p| expand(p, home, &host_name, &user))
                .collect(),
            None => defaults.iter().map(|n| home.join(".ssh").join(n)).collect(),
        }
    };
    let identities = paths("identityfile", &["id_ed25519", "id_ecdsa", "id_rsa"]);
    let known_hosts = paths("userknownhostsfile", &["known_hosts"]);
    Target {
        alias: alias.to_string(),
        host_name,
        port,
        user,
        identities,
        known_hosts,
    }
}

/// What known_hosts says about a host key.
#[derive(Debug, Clone)]
pub enum Verdict {
    Known,
    Unknown(PublicKey),
    Changed { file: PathBuf, line: usize },
}

pub fn verdict(host: &str, port: u16, key: &PublicKey, files: &[PathBuf]) -> Verdict {
    for file in files {
        match keys::check_known_hosts_path(host, port, key, file) {
            Ok(true) => return Verdict::Known,
            Err(keys::Error::KeyChanged { line }) => {
                return Verdict::Changed {
                    file: file.clone(),
                    line,
                }
            }
            _ => {}
        }
    }
    Verdict::Unknown(key.clone())
}

/// Checks the server's key against known_hosts and remembers what it found.
struct Checker {
    host: String,
    port: u16,
    files: Vec<PathBuf>,
    found: Arc<Mutex<Option<Verdict>>>,
}

impl client::Handler for Checker {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &keys::PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let v = verdict(&self.host, self.port, &key.public_key(), &self.files);
        let known = matches!(v, Verdict::Known);
        *self.found.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        Ok(known)
    }
}

/// Why the built-in client could not connect, trust the host, or run a command there.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start the built-in ssh client")]
    Runtime(#[source] std::io::Error),
    #[error("no connection")]
    NoConnection,
    #[error("the host key of {alias} ({fingerprint}) is no longer in known_hosts; not asking while reconnecting — connect again to decide")]
    KeyGone { alias: String, fingerprint: String },
    #[error("{what}; refusing to connect without a terminal to ask at. Check the fingerprint with the host's administrator and add the key to {}", .file.display())]
    UnknownKey { what: String, file: PathBuf },
    #[error("not connected: the host key of {0} was not trusted")]
    NotTrusted(String),
    #[error("cannot write {}", .file.display())]
    KnownHosts { file: PathBuf, source: keys::Error },
    #[error("the host key of {0} changed while connecting")]
    ChangedWhileConnecting(String),
    #[error("WARNING: THE HOST KEY OF {alias} ({host}:{port}) HAS CHANGED since it was recorded in {} line {line}. \
             Someone may be intercepting the connection, or the host was reinstalled. Refusing to connect; \
             if the change is expected, remove that line and connect again.", .file.display())]
    KeyChanged {
        alias: String,
        host: String,
        port: u16,
        file: PathBuf,
        line: usize,
    },
    #[error("connecting to {host}:{port} timed out")]
    ConnectTimeout { host: String, port: u16 },
    #[error("cannot connect to {host}:{port}: {error}")]
    Connect {
        host: String,
        port: u16,
        error: russh::Error,
    },
    #[error("{0} sent no host key")]
    NoHostKey(String),
    #[error("{user}@{host} accepted none of the keys tried: {tried}")]
    NoKeyAccepted {
        user: String,
        host: String,
        tried: String,
    },
    #[error("the host did not open a channel in time")]
    ChannelTimeout,
    /// The SSH library's own words.
    #[error(transparent)]
    Ssh(#[from] russh::Error),
    #[error(transparent)]
    Os(#[from] std::io::Error),
}

/// Ends a command started with [`Session::stream`].
pub type Stop = Box<dyn Fn() + Send>;

/// An authenticated connection, and the runtime that drives it.
pub struct Session {
    target: Target,
    rt: tokio::runtime::Runtime,
    handle: Option<client::Handle<Checker>>,
    /// Set when a stream over the connection was given up (herdr's keepalive found the
    /// link silent, or a bridge did not answer): the connection may be as dead, though it
    /// has not noticed yet (the laptop's address changed), so the next one is made anew.
    stale: Arc<std::sync::atomic::AtomicBool>,
    /// A connection was made before: a host key not known now is not asked about.
    connected_before: bool,
}

fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(keys::HashAlg::Sha256).to_string()
}

impl Session {
    pub fn new(alias: &str) -> Result<Session, Error> {
        let home = crate::paths::home();
        let config = std::fs::read_to_string(home.join(".ssh").join("config")).ok();
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::getuid())
                    .ok()
                    .flatten()
                    .map(|u| u.name)
            })
            .unwrap_or_else(|| "root".into());
        let target = resolve(alias, config.as_deref(), &home, &user);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("herdr-ssh")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        Ok(Session {
            target,
            rt,
            handle: None,
            stale: Arc::default(),
            connected_before: false,
        })
    }

    /// Connects and authenticates, unless a live connection is there already.
    fn connection(&mut self) -> Result<&client::Handle<Checker>, Error> {
        let stale = self.stale.swap(false, std::sync::atomic::Ordering::AcqRel);
        if !stale && self.handle.as_ref().is_some_and(|h| !h.is_closed()) {
            return self.handle.as_ref().ok_or(Error::NoConnection);
        }
        if stale {
            // (Dropping the handle ends that connection's task.)
            self.handle = None;
        }
        let t = self.target.clone();
        let reconnecting = self.connected_before;
        let handle = match self.rt.block_on(connect(&t))? {
            Ok(h) => h,
            Err(key) if reconnecting => {
                return Err(Error::KeyGone {
                    alias: t.alias,
                    fingerprint: fingerprint(&key),
                })
            }
            Err(key) => {
                // An unknown host: only a person at a terminal may trust it.
                let interactive =
                    crate::sys::tty::is_tty(std::os::fd::AsFd::as_fd(&std::io::stdin()));
                let file = &t.known_hosts[0];
                let what = format!(
                    "the host key of {} ({}:{}) is not known: {} {}",
                    t.alias,
                    t.host_name,
                    t.port,
                    key.algorithm(),
                    fingerprint(&key)
                );
                if !interactive {
                    return Err(Error::UnknownKey {
                        what,
                        file: file.clone(),
                    });
                }
                eprint!(
                    "{what}.\r\nTrust it and remember it in {}? [y/N] ",
                    file.display()
                );
                let mut answer = String::new();
                let _ = std::io::stdin().read_line(&mut answer);
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    return Err(Error::NotTrusted(t.alias));
                }
                keys::known_hosts::learn_known_hosts_path(&t.host_name, t.port, &key, file)
                    .map_err(|source| Error::KnownHosts {
                        file: file.clone(),
                        source,
                    })?;
                match self.rt.block_on(connect(&t))? {
                    Ok(h) => h,
                    Err(_) => return Err(Error::ChangedWhileConnecting(t.alias)),
                }
            }
        };
        self.handle = Some(handle);
        self.connected_before = true;
        self.handle.as_ref().ok_or(Error::NoConnection)
    }

    /// Runs a command; its exit status, stdout and stderr. `input` is sent as its stdin.
    pub fn run(
        &mut self,
        command: &str,
        input: Option<&[u8]>,
    ) -> Result<(u32, Vec<u8>, Vec<u8>), Error> {
        let command = command.to_string();
        let input = input.map(<[u8]>::to_vec);
        self.connection()?;
        let handle = self.handle.as_ref().ok_or(Error::NoConnection)?;
        self.rt.block_on(async {
            let mut ch = tokio::time::timeout(CHANNEL_TIMEOUT, handle.channel_open_session())
                .await
                .map_err(|_| Error::ChannelTimeout)??;
            ch.exec(true, command).await?;
            if let Some(data) = input {
                ch.data(&data[..]).await?;
            }
            ch.eof().await?;
            let (mut out, mut err, mut status) = (Vec::new(), Vec::new(), None);
            while let Some(msg) = ch.wait().await {
                match msg {
                    ChannelMsg::Data { data } => out.extend_from_slice(&data),
                    ChannelMsg::ExtendedData { data, .. } => err.extend_from_slice(&data),
                    ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                    _ => {}
                }
            }
            Ok::<_, Error>((status.unwrap_or(255), out, err))
        })
    }

    /// Starts a command whose stdin and stdout are the returned socket (for the bridge);
    /// the closure ends it.
    pub fn stream(&mut self, command: &str) -> Result<(UnixStream, Stop), Error> {
        let command = command.to_string();
        self.connection()?;
        let handle = self.handle.as_ref().ok_or(Error::NoConnection)?;
        let ch = self.rt.block_on(async {
            let ch = tokio::time::timeout(CHANNEL_TIMEOUT, handle.channel_open_session())
                .await
                .map_err(|_| Error::ChannelTimeout)??;
            ch.exec(true, command).await?;
            Ok::<_, Error>(ch)
        })?;
        let (mine, theirs) = UnixStream::pair()?;
        theirs.set_nonblocking(true)?;
        let task = self.rt.spawn(async move {
            let Ok(mut sock) = tokio::net::UnixStream::from_std(theirs) else {
                return;
            };
            let mut chan = ch.into_stream();
            let _ = tokio::io::copy_bidirectional(&mut chan, &mut sock).await;
        });
        let abort = task.abort_handle();
        let stale = self.stale.clone();
        Ok((
            mine,
            Box::new(move || {
                stale.store(true, std::sync::atomic::Ordering::Release);
                abort.abort();
            }),
        ))
    }
}

/// Connects and authenticates; `Ok(Err(key))` for a host whose key known_hosts does not
/// have (the caller may ask and retry).
async fn connect(t: &Target) -> Result<Result<client::Handle<Checker>, PublicKey>, Error> {
    let found = Arc::new(Mutex::new(None));
    let checker = Checker {
        host: t.host_name.clone(),
        port: t.port,
        files: t.known_hosts.clone(),
        found: found.clone(),
    };
    let config = Arc::new(client::Config {
        // A dead link is noticed by the connection itself too.
        keepalive_interval: Some(Duration::from_secs(2)),
        keepalive_max: 3,
        inactivity_timeout: None,
        ..Default::default()
    });
    let timed_out = || Error::ConnectTimeout {
        host: t.host_name.clone(),
        port: t.port,
    };
    // Reaching the host is bounded on its own, as OpenSSH's ConnectTimeout: an attempt
    // into a network that drops everything gives up soon, and the next one may find the
    // network back.
    let reached = tokio::time::timeout(
        REACH_TIMEOUT,
        tokio::net::TcpStream::connect((t.host_name.as_str(), t.port)),
    )
    .await
    .map_err(|_| timed_out())?;
    let connected = match reached {
        Ok(socket) => tokio::time::timeout(
            Duration::from_secs(20),
            client::connect_stream(config, socket, checker),
        )
        .await
        .map_err(|_| timed_out())?,
        Err(e) => Err(russh::Error::IO(e)),
    };
    let verdict = found.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut handle = match (connected, verdict) {
        (Ok(h), Some(Verdict::Known)) => h,
        (_, Some(Verdict::Unknown(key))) => return Ok(Err(key)),
        (_, Some(Verdict::Changed { file, line })) => {
            return Err(Error::KeyChanged {
                alias: t.alias.clone(),
                host: t.host_name.clone(),
                port: t.port,
                file,
                line,
            })
        }
        (Err(error), _) => {
            return Err(Error::Connect {
                host: t.host_name.clone(),
                port: t.port,
                error,
            })
        }
        (Ok(_), None) => return Err(Error::NoHostKey(t.alias.clone())),
    };
    authenticate(&mut handle, t).await?;
    Ok(Ok(handle))
}

async fn rsa_hash(handle: &client::Handle<Checker>, key: &PublicKey) -> Option<keys::HashAlg> {
    if key.algorithm().is_rsa() {
        handle
            .best_supported_rsa_hash()
            .await
            .ok()
            .flatten()
            .flatten()
    } else {
        None
    }
}

/// The SSH agent's keys first, then the identity files.
async fn authenticate(handle: &mut client::Handle<Checker>, t: &Target) -> Result<(), Error> {
    let mut tried = Vec::new();
    if let Ok(mut agent) = keys::agent::client::AgentClient::connect_env().await {
        if let Ok(identities) = agent.request_identities().await {
            for id in identities {
                let key = id.public_key().into_owned();
                let hash = rsa_hash(handle, &key).await;
                if let Ok(r) = handle
                    .authenticate_publickey_with(&t.user, key, hash, &mut agent)
                    .await
                {
                    if r.success() {
                        return Ok(());
                    }
                }
            }
            tried.push("the keys of the SSH agent".to_string());
        }
    }
    for path in t.identities.iter().filter(|p| p.exists()) {
        match keys::load_secret_key(path, None) {
            Ok(key) => {
                let hash = rsa_hash(handle, key.public_key()).await;
                let r = handle
                    .authenticate_publickey(
                        &t.user,
                        PrivateKeyWithHashAlg::new(Arc::new(key), hash),
                    )
                    .await?;
                if r.success() {
                    return Ok(());
                }
                tried.push(path.display().to_string());
            }
            Err(e) => tried.push(format!(
                "{} (not usable: {e}; an encrypted key must be loaded into ssh-agent)",
                path.display()
            )),
        }
    }
    Err(Error::NoKeyAccepted {
        user: t.user.clone(),
        host: t.host_name.clone(),
        tried: if tried.is_empty() {
            "no agent and no key files".to_string()
        } else {
            tried.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "\
# mine
ServerAliveInterval 30

Host devbox dev
    HostName 10.0.0.7
    User alice
    Port 2222
    IdentityFile ~/.ssh/work_ed25519

Host *.internal !secret.internal
    User bob
    IdentityFile=%d/.ssh/internal

Match host foo
    User nobody

Host *
    User fallback
    IdentityFile ~/.ssh/id_ed25519
";

    #[test]
    fn the_first_value_wins_and_identities_add_up() {
        let home = Path::new("/home/u");
        let t = resolve("devbox", Some(CONFIG), home, "me");
        assert_eq!(t.host_name, "10.0.0.7");
        assert_eq!((t.user.as_str(), t.port), ("alice", 2222));
        assert_eq!(
            t.identities,
            [
                PathBuf::from("/home/u/.ssh/work_ed25519"),
                PathBuf::from("/home/u/.ssh/id_ed25519")
            ]
        );
        assert_eq!(t.known_hosts, [PathBuf::from("/home/u/.ssh/known_hosts")]);
        let t = resolve("db.internal", Some(CONFIG), home, "me");
        assert_eq!(
            (t.host_name.as_str(), t.user.as_str()),
            ("db.internal", "bob")
        );
        assert_eq!(t.identities[0], PathBuf::from("/home/u/.ssh/internal"));
        let t = resolve("secret.internal", Some(CONFIG), home, "me");
        assert_eq!(t.user, "fallback", "a negated pattern excludes");
        let t = resolve("carol@devbox", Some(CONFIG), home, "me");
        assert_eq!(
            (t.host_name.as_str(), t.user.as_str(), t.port),
            ("10.0.0.7", "carol", 2222)
        );
        let t = resolve("carol@other", None, home, "me");
        assert_eq!(
            (t.host_name.as_str(), t.user.as_str(), t.port),
            ("other", "carol", 22)
        );
        assert_eq!(t.identities.len(), 3);
    }

    #[test]
    fn host_keys_are_known_unknown_or_changed() {
        let dir = tempfile::tempdir().unwrap();
        let kh = dir.path().join("known_hosts");
        let key = |name: &str| {
            let path = dir.path().join(name);
            let ok = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&path)
                .status()
                .unwrap()
                .success();
            assert!(ok);
            let text = std::fs::read_to_string(path.with_extension("pub")).unwrap();
            // As a server sends it: without the comment.
            let bare: Vec<&str> = text.split_whitespace().take(2).collect();
            PublicKey::from_openssh(&bare.join(" ")).unwrap()
        };
        let (a, b) = (key("a"), key("b"));
        let files = [kh.clone()];
        assert!(matches!(
            verdict("h", 2222, &a, &files),
            Verdict::Unknown(_)
        ));
        keys::known_hosts::learn_known_hosts_path("h", 2222, &a, &kh).unwrap();
        assert!(matches!(verdict("h", 2222, &a, &files), Verdict::Known));
        assert!(matches!(
            verdict("h", 2222, &b, &files),
            Verdict::Changed { .. }
        ));
        assert!(
            matches!(verdict("h", 22, &a, &files), Verdict::Unknown(_)),
            "another port"
        );
    }
}
