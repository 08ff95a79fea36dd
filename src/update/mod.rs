//! `herdr update` and `herdr channel`: install a newer release of this binary from the
//! channel's manifest (verified by SHA-256 before it is made executable or run), keep the
//! previous one for `--rollback`, then move running servers to it (live, with
//! `--handoff`). See docs/releases.md.

pub mod download;
pub mod install;
pub mod manifest;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::api::ApiClient;
use crate::client::handoff::{hand_off, HandedOff};
use crate::protocol::api::{NoParams, Request};
use crate::protocol::version;
use download::{DownloadError, Http};
use install::{InstallError, Staged};
use manifest::{Channel, Manifest, ManifestError, Version};

/// Why `herdr update` or `herdr channel` did nothing. Each message is whole: it says what
/// was refused or failed, why, and what was (not) changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown channel {0:?}; the channels are stable and preview")]
    UnknownChannel(String),
    #[error("cannot find the config folder (set HOME or XDG_CONFIG_HOME)")]
    NoConfigFolder,
    #[error("cannot save the channel in {}: {error}", .file.display())]
    SaveChannel {
        file: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    NoBinary(#[from] crate::paths::NoBinary),
    #[error(
        "you are inside a herdr pane; updating from here would replace the server under your feet. \
         Detach first (prefix + d), then run `herdr update` in a plain terminal"
    )]
    InsidePane,
    #[error("{} is managed by a package manager, not by herdr update. {advice}", .binary.display())]
    PackageManaged { binary: PathBuf, advice: String },
    #[error(transparent)]
    Download(#[from] DownloadError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error("{url}: {error}")]
    Manifest { url: String, error: ManifestError },
    #[error(transparent)]
    Artifact(ManifestError),
    #[error("bad version")]
    BadVersion,
    #[error("herdr {offered} is available (installed: {installed}); not asking without a terminal: run `herdr update --yes`")]
    NotAsking { offered: String, installed: String },
    #[error("the download's SHA-256 is {got}, the manifest says {want}; refusing it (nothing was changed)")]
    Checksum { got: String, want: String },
    #[error("cannot make the download executable to check it: {0}")]
    NotExecutable(std::io::Error),
    #[error("the downloaded binary does not run here ({0}); nothing was changed")]
    DoesNotRun(std::io::Error),
    #[error(
        "the downloaded binary says {said:?}, not herdr {want}; refusing it (nothing was changed)"
    )]
    WrongBinary { said: String, want: String },
}

pub struct UpdateArgs {
    pub handoff: bool,
    pub check: bool,
    pub yes: bool,
    pub rollback: bool,
}

/// The file holding the chosen channel (beside config.toml).
fn channel_file() -> Option<PathBuf> {
    crate::config::default_path().and_then(|p| p.parent().map(|d| d.join("channel")))
}

/// The chosen channel: the file, else the channel of this binary's version.
pub fn current_channel() -> Channel {
    channel_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| Channel::parse(&s))
        .unwrap_or_else(|| {
            Version::parse(version())
                .map(|v| v.channel())
                .unwrap_or(Channel::Stable)
        })
}

/// `HERDR_RELEASES_URL`, else `[update] releases_url`, else the official location.
fn releases_url(config: &crate::config::Config) -> String {
    std::env::var("HERDR_RELEASES_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| config.releases_url.clone())
}

pub fn manifest_url(config: &crate::config::Config, channel: Channel) -> String {
    format!(
        "{}/{channel}.json",
        releases_url(config).trim_end_matches('/')
    )
}

fn config() -> crate::config::Config {
    crate::config::current()
}

pub fn channel_show() -> Result<i32, Error> {
    let channel = current_channel();
    crate::say!("channel:  {channel}");
    crate::say!("version:  {}", version());
    crate::say!("manifest: {}", manifest_url(&config(), channel));
    Ok(0)
}

pub fn channel_set(name: &str) -> Result<i32, Error> {
    let Some(channel) = Channel::parse(name) else {
        return Err(Error::UnknownChannel(name.into()));
    };
    let file = channel_file().ok_or(Error::NoConfigFolder)?;
    let written = match file.parent() {
        Some(dir) => std::fs::create_dir_all(dir),
        None => Ok(()),
    }
    .and_then(|_| std::fs::write(&file, format!("{channel}\n")));
    if let Err(error) = written {
        return Err(Error::SaveChannel { file, error });
    }
    crate::say!(
        "channel set to {channel}; `herdr update` now follows {}",
        manifest_url(&config(), channel)
    );
    Ok(0)
}

pub fn run(args: UpdateArgs) -> Result<i32, Error> {
    // The file itself, not a link to it: a package manager's link is recognised by where
    // it points, and a link must not be replaced by a copy.
    let binary = crate::paths::own_binary()?;
    let binary = std::fs::canonicalize(&binary).unwrap_or(binary);
    if std::env::var_os("HERDR_PANE").is_some() {
        return Err(Error::InsidePane);
    }
    if let Some(advice) = install::package_manager(&binary) {
        return Err(Error::PackageManaged { binary, advice });
    }
    if args.rollback {
        install::rollback(&binary)?;
        let now = std::process::Command::new(&binary)
            .arg("--version")
            .output();
        let now = now
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        crate::say!(
            "rolled back {}: now {now} (the replaced one is kept as {})",
            binary.display(),
            install::previous_of(&binary).display()
        );
        return Ok(0);
    }
    let config = config();
    let channel = current_channel();
    let url = manifest_url(&config, channel);
    let http = Http::new(Duration::from_secs(config.download_timeout_secs))?;
    let manifest =
        Manifest::parse(&http.fetch(&url)?, channel).map_err(|error| Error::Manifest {
            url: url.clone(),
            error,
        })?;
    let installed = Version::parse(version());
    let offered = Version::parse(&manifest.version).ok_or(Error::BadVersion)?;
    let newer = installed.is_none_or(|i| offered.newer_than(&i));
    if !newer {
        crate::say!(
            "herdr {} is up to date ({channel} channel offers {})",
            version(),
            manifest.version
        );
        return Ok(0);
    }
    let platform = manifest::platform();
    let artifact = manifest.artifact(&platform).map_err(Error::Artifact)?;
    if args.check {
        crate::say!(
            "herdr {} is available on the {channel} channel (installed: {}); run `herdr update` to install it",
            manifest.version,
            version()
        );
        if !manifest.notes.is_empty() {
            crate::say!("{}", manifest.notes);
        }
        return Ok(0);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::NotAsking {
                offered: manifest.version,
                installed: version().into(),
            });
        }
        if !confirm(&format!(
            "Update herdr {} to {}?",
            version(),
            manifest.version
        )) {
            crate::say!("nothing was changed");
            return Ok(0);
        }
    }

    // Download beside the binary, verify, check it runs as the version it claims, install.
    let mut staged = Staged::create(&binary)?;
    let label = format!("herdr {}", manifest.version);
    let started = std::time::Instant::now();
    let file = staged.file()?;
    let sha = http.download(&artifact.url, artifact.size, file, &label)?;
    staged.close();
    if !sha.eq_ignore_ascii_case(&artifact.sha256) {
        return Err(Error::Checksum {
            got: sha,
            want: artifact.sha256.clone(),
        });
    }
    let took = started.elapsed();
    check_runs(staged.path(), &manifest.version)?;
    staged.install(&binary)?;
    crate::say!(
        "updated {} from {} to {} ({:.1} MB in {:.1} s); the previous binary is kept for `herdr update --rollback`",
        binary.display(),
        version(),
        manifest.version,
        artifact.size as f64 / 1e6,
        took.as_secs_f64()
    );
    Ok(move_servers(&binary, &manifest, args.handoff))
}

/// Runs the verified download once, to be sure it is a herdr of the promised version
/// (only after its checksum matched).
fn check_runs(path: &Path, want: &str) -> Result<(), Error> {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .map_err(Error::NotExecutable)?;
    let out = std::process::Command::new(path)
        .arg("--version")
        .env_remove("HERDR_PANE")
        .output()
        .map_err(Error::DoesNotRun)?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if said != format!("herdr {want}") {
        return Err(Error::WrongBinary {
            said,
            want: want.into(),
        });
    }
    Ok(())
}

use crate::say::confirm;

/// After installing: each running server is told apart — already new, compatible, or in
/// need of the new binary — and with `--handoff` (or a yes on a terminal) moved to it
/// without stopping a program. Returns the exit code.
fn move_servers(binary: &Path, manifest: &Manifest, handoff: bool) -> i32 {
    let mut left = Vec::new();
    for session in crate::paths::socket_sessions() {
        let Ok(Some(mut api)) = ApiClient::connect(&session) else {
            continue;
        };
        let Ok(st) = api.request(&Request::ServerStatus(NoParams {})) else {
            continue;
        };
        drop(api);
        let running = st["version"].as_str().unwrap_or("?").to_string();
        let protocol = st["protocol"].as_u64().unwrap_or(0) as u32;
        let can = st["live_handoff"].as_bool().unwrap_or(false);
        if running == manifest.version {
            crate::say!("session {session}: already runs herdr {running}");
            continue;
        }
        let compatible = protocol == manifest.protocol;
        // On a terminal, a server that can move is offered the move.
        let accepted = !handoff
            && can
            && std::io::stdin().is_terminal()
            && confirm(&format!(
                "Hand session {session} (herdr {running}) to herdr {} now? No program stops.",
                manifest.version
            ));
        if !handoff && !accepted {
            let how = if can {
                format!("`herdr server handoff --session {session}` moves it to {} without stopping a program", manifest.version)
            } else {
                format!("it cannot be handed off live; `herdr server stop --session {session}` then `herdr --session {session}` restarts it (its programs end)")
            };
            if compatible {
                crate::say!("session {session}: still runs herdr {running} (compatible: clients of {} can attach); {how}", manifest.version);
            } else {
                crate::say!("session {session}: still runs herdr {running} (protocol {protocol}; the new herdr speaks {}, so new clients cannot attach); {how}", manifest.protocol);
                left.push(session);
            }
            continue;
        }
        if !can {
            crate::say!("session {session}: herdr {running} cannot be handed off live; `herdr server stop --session {session}` then `herdr --session {session}` restarts it (its programs end)");
            left.push(session);
            continue;
        }
        match hand_off(
            &session,
            Some(binary),
            Some(manifest.version.clone()),
            Some(manifest.protocol),
        ) {
            Ok(HandedOff::Done { report, serving }) => {
                crate::say!("{report}");
                match serving {
                    Some(s) => crate::say!("session {session}: now serving {s}"),
                    None => {
                        crate::say!("session {session}: the new server does not answer yet; check `herdr server status --session {session}`");
                        left.push(session);
                    }
                }
            }
            Ok(HandedOff::NoServer) => crate::say!("session {session}: no longer running"),
            Err(e) => {
                crate::say!("session {session}: the handoff failed, herdr {running} keeps serving with every program: {e:#}; retry with `herdr server handoff --session {session}`");
                left.push(session);
            }
        }
    }
    if left.is_empty() {
        0
    } else {
        crate::protocol::exit::SERVERS_LEFT
    }
}
