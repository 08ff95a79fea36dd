//! Why `herdr --remote` (or the bridge on the host) stopped: ssh missing or failing with
//! its own stderr, the probe, the install and its checksum, the server's status, the
//! built-in client's host keys. Each message is the one users see; a failure underneath
//! is its `source()` only when the message does not already say it.

use std::path::PathBuf;

use crate::paths::SessionName;
use crate::update::download::DownloadError;
use crate::update::manifest::ManifestError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Machine(#[from] crate::machine::Error),
    #[error("{0:?} is not a host name (a host may not start with '-'); usage: herdr --remote HOST [-- SSH ARGS]")]
    NotAHost(String),
    #[error("extra ssh arguments (after --) need the OpenSSH client; drop them or --ssh builtin, and put the settings in ~/.ssh/config")]
    ExtraArgsNeedOpenSsh,
    #[error(
        "no OpenSSH client (ssh) is installed here; install it, or use herdr's own: --ssh builtin"
    )]
    NoSsh,
    #[error("ssh to {host} failed ({status}): {stderr}")]
    SshFailed {
        host: String,
        status: String,
        stderr: String,
    },
    #[error("ssh gave no pipes")]
    NoPipes,
    #[error("the bridge closed before the hello")]
    BridgeClosed(#[source] std::io::Error),
    #[error("cannot read {}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// What was being done (running ssh, finding this binary) when the system said no.
    #[error("{doing}")]
    Io {
        doing: &'static str,
        source: std::io::Error,
    },
    /// Reported by the system without more to say (a socket pair, a private folder).
    #[error(transparent)]
    Os(#[from] std::io::Error),

    #[error("{host} did not answer the probe like a POSIX system (Windows remotes are not supported); it said: {said}")]
    Probe { host: String, said: String },
    #[error("{host} is {os} {arch}: herdr does not run there (it runs on Linux and macOS, x86_64 and aarch64)")]
    Unsupported {
        host: String,
        os: String,
        arch: String,
    },
    #[error("this herdr cannot run on {host}: {why}; set [remote] install = \"auto\" to let it download the {platform} build")]
    CannotRunThere {
        host: String,
        why: String,
        platform: String,
    },
    #[error("{host} needs the {platform} build of herdr {version}, but has neither curl nor wget to download it; install one of them, or install herdr {version} there yourself")]
    NoDownloader {
        host: String,
        platform: String,
        version: &'static str,
    },
    #[error(transparent)]
    Http(DownloadError),
    #[error("cannot read the release manifest {url}: {error}")]
    ManifestUnread { url: String, error: DownloadError },
    #[error("the release manifest {url}: {error}")]
    ManifestInvalid { url: String, error: ManifestError },
    #[error("{error} (manifest {url})")]
    NoArtifact { url: String, error: ManifestError },
    #[error("{host} needs the {platform} build of herdr {version}, but {url} offers {offered}; update this herdr first (herdr update), or install herdr {version} on {host} yourself")]
    ReleaseIsOther {
        host: String,
        platform: String,
        version: &'static str,
        url: String,
        offered: String,
    },
    #[error("herdr {version} is not installed on {host}; to install it at {target} run: herdr --remote {host} --yes")]
    NotInstalled {
        version: &'static str,
        host: String,
        target: String,
    },
    #[error("not installed; nothing was changed on {0}")]
    InstallDeclined(String),
    #[error("installing herdr on {host} failed; nothing executable was left there")]
    InstallFailed { host: String, source: Box<Error> },
    #[error("the install on {host} did not confirm herdr {version}: {said}")]
    InstallUnconfirmed {
        host: String,
        version: &'static str,
        said: String,
    },

    #[error("the host did not answer the status check")]
    NoStatus,
    #[error("asking its herdr server for its status failed: {0}")]
    StatusFailed(String),
    #[error("its herdr server's status is not JSON")]
    StatusNotJson(#[source] serde_json::Error),
    #[error("on {host}")]
    On { host: String, source: Box<Error> },
    #[error("cannot start the herdr server on {host}")]
    StartFailed { host: String, source: Box<Error> },
    #[error(
        "the live handoff on {host} failed; its server keeps serving, with every program running"
    )]
    HandoffFailed { host: String, source: Box<Error> },
    /// An older server no client of ours can attach to, and no terminal to ask at.
    #[error("{explain}. Its programs keep running. To move them to herdr {version} live: {reattach} --handoff; \
             to restart it instead (its programs end): {stop}, then attach again")]
    Incompatible {
        explain: String,
        version: &'static str,
        reattach: String,
        /// The ssh command that stops it.
        stop: String,
    },
    #[error("nothing was changed on {0}")]
    Unchanged(String),

    #[error("the socket is served by uid {0}, not by you")]
    NotYourSocket(u32),
    #[error("the herdr server for session {session} failed to start ({status}); see {}", .log.display())]
    BridgeStartFailed {
        session: SessionName,
        status: std::process::ExitStatus,
        log: PathBuf,
    },
    #[error("the herdr server for session {0} did not start in time")]
    BridgeStartTimeout(SessionName),

    #[error(transparent)]
    Builtin(#[from] super::builtin::Error),
    #[error(transparent)]
    Client(#[from] crate::client::Error),
}

/// The bridge is the client's transport: what stopped it reaches the client as the
/// transport's error, in the same words.
impl From<Error> for crate::client::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Client(c) => c,
            other => crate::client::Error::Transport(Box::new(other)),
        }
    }
}
