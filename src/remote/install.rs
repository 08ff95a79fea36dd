//! Putting this herdr on a remote host: this very binary streamed over SSH where it runs,
//! otherwise the release build for the host's platform, which the host downloads itself
//! (curl or wget) from the configured release manifest. Either way the SHA-256 is checked
//! ON THE HOST before the file is made executable, and it lands in a versioned place with
//! an atomic rename.

use std::path::Path;
use std::time::Duration;

use super::probe::{self, Probe};
use super::{Error, RemoteArgs, Ssh};
use crate::protocol::version;
use crate::update::manifest::Manifest;

/// Installs a file as $1 after checking it against $2 (SHA-256): mode `upload` reads it
/// from stdin, `download` fetches $4. Nothing is executable before the check passed; a
/// failed or interrupted install leaves nothing behind. Links ~/.local/bin/herdr when that
/// is free or already one of herdr's links (never a package manager's herdr).
pub const INSTALL: &str = r#"b=$1; want=$2; mode=$3; url=$4
d=$(dirname "$b"); mkdir -p "$d" || exit 2
t="$d/.herdr.part.$$"
trap 'rm -f "$t"' HUP INT TERM
case "$mode" in
upload) cat > "$t" || { rm -f "$t"; exit 2; } ;;
download)
  if command -v curl >/dev/null 2>&1; then curl -fsSL --proto '=http,https' -o "$t" "$url"
  elif command -v wget >/dev/null 2>&1; then wget -q -O "$t" "$url"
  else echo "neither curl nor wget is installed" >&2; exit 4; fi
  [ $? -eq 0 ] || { rm -f "$t"; echo "downloading $url failed" >&2; exit 4; } ;;
*) exit 2 ;;
esac
if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum "$t" | cut -d' ' -f1); else h=$(shasum -a 256 "$t" | cut -d' ' -f1); fi
if [ "$h" != "$want" ]; then rm -f "$t"; echo "checksum mismatch: expected $want, got $h" >&2; exit 3; fi
chmod 755 "$t" && mv -f "$t" "$b" || { rm -f "$t"; exit 2; }
l="$HOME/.local/bin/herdr"
mkdir -p "$HOME/.local/bin"
if [ ! -e "$l" ] && [ ! -L "$l" ]; then ln -s "$b" "$l"
elif [ -L "$l" ]; then case "$(readlink "$l")" in */.local/share/herdr/bin/*) ln -sfn "$b" "$l";; esac; fi
echo "herdr-installed $("$b" --version 2>&1)""#;

/// How a binary gets to the host.
enum Source {
    /// This very binary, over the SSH connection.
    Upload,
    /// The release build for the host's platform, fetched by the host.
    Download { url: String, sha256: String },
}

fn sha256_file(path: &Path) -> Result<String, Error> {
    let bytes = read(path)?;
    Ok(crate::update::download::hex(&sha2::Digest::finalize(
        <sha2::Sha256 as sha2::Digest>::new_with_prefix(&bytes),
    )))
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Read {
        path: path.into(),
        source,
    })
}

pub(super) use crate::say::confirm;

/// The release build of this very version for `platform`, from the configured manifest.
fn release_for(platform: &str, host: &str) -> Result<Source, Error> {
    let config = crate::config::current();
    let channel = crate::update::current_channel();
    let url = crate::update::manifest_url(&config, channel);
    let http =
        crate::update::download::Http::new(Duration::from_secs(config.download_timeout_secs))
            .map_err(Error::Http)?;
    let bytes = http.fetch(&url).map_err(|error| Error::ManifestUnread {
        url: url.clone(),
        error,
    })?;
    let manifest = Manifest::parse(&bytes, channel).map_err(|error| Error::ManifestInvalid {
        url: url.clone(),
        error,
    })?;
    if manifest.version != version() {
        return Err(Error::ReleaseIsOther {
            host: host.into(),
            platform: platform.into(),
            version: version(),
            url,
            offered: manifest.version,
        });
    }
    let a = manifest
        .artifact(platform)
        .map_err(|error| Error::NoArtifact {
            url: url.clone(),
            error,
        })?;
    Ok(Source::Download {
        url: a.url.clone(),
        // sha256sum prints lower case; a manifest may not.
        sha256: a.sha256.to_ascii_lowercase(),
    })
}

/// Makes sure the remote has this version of herdr; returns its path there.
pub(super) fn ensure_installed(ssh: &Ssh, args: &RemoteArgs) -> Result<String, Error> {
    let v = version();
    let out = ssh.run(probe::PROBE, &[v], None)?;
    let probe: Probe = probe::parse(&out).ok_or_else(|| Error::Probe {
        host: args.host.clone(),
        said: out.trim().into(),
    })?;
    if let Some(found) = probe.found {
        return Ok(found);
    }
    let Some(platform) = probe.platform() else {
        return Err(Error::Unsupported {
            host: args.host.clone(),
            os: probe.os,
            arch: probe.arch,
        });
    };
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        doing: "cannot find this herdr binary",
        source,
    })?;
    let own = read(&exe)?;
    let why_not = probe::cannot_run_here(&probe, &own);
    let how = crate::config::current().remote_install;
    let source = match (how.as_str(), why_not) {
        ("upload", Some(why)) => {
            return Err(Error::CannotRunThere {
                host: args.host.clone(),
                why,
                platform,
            })
        }
        ("upload", None) | ("auto", None) => Source::Upload,
        (_, _) => {
            if probe.fetch.is_empty() {
                return Err(Error::NoDownloader {
                    host: args.host.clone(),
                    platform,
                    version: v,
                });
            }
            release_for(&platform, &args.host)?
        }
    };
    let what = match &source {
        Source::Upload => format!("Install herdr {v} on {} at {}?", args.host, probe.target),
        Source::Download { url, .. } => format!(
            "Install herdr {v} on {} at {} (the {platform} build, downloaded there from {url})?",
            args.host, probe.target
        ),
    };
    if !args.yes {
        if !crate::sys::tty::is_tty(std::os::fd::AsFd::as_fd(&std::io::stdin())) {
            return Err(Error::NotInstalled {
                version: v,
                host: args.host.clone(),
                target: probe.target,
            });
        }
        if !confirm(&what) {
            return Err(Error::InstallDeclined(args.host.clone()));
        }
    }
    let failed = |e| Error::InstallFailed {
        host: args.host.clone(),
        source: Box::new(e),
    };
    let out = match &source {
        Source::Upload => {
            let sum = sha256_file(&exe)?;
            ssh.run(INSTALL, &[&probe.target, &sum, "upload"], Some(&exe))
                .map_err(failed)?
        }
        Source::Download { url, sha256 } => ssh
            .run(INSTALL, &[&probe.target, sha256, "download", url], None)
            .map_err(failed)?,
    };
    let expected = format!("herdr-installed herdr {v}");
    if !out.lines().any(|l| l.trim() == expected) {
        return Err(Error::InstallUnconfirmed {
            host: args.host.clone(),
            version: v,
            said: out.trim().into(),
        });
    }
    Ok(probe.target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Stdio;

    #[test]
    fn the_install_script_refuses_a_wrong_checksum_and_leaves_nothing_executable() {
        let home = tempfile::tempdir().unwrap();
        let target = home.path().join(".local/share/herdr/bin/9/herdr");
        let body = b"#!/bin/sh\necho herdr 9\n";
        let run = |sum: &str| {
            let mut child = std::process::Command::new("sh")
                .args(["-c", INSTALL, "herdr-remote", target.to_str().unwrap(), sum])
                .arg("upload")
                .env("HOME", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(body).unwrap();
            child.wait_with_output().unwrap()
        };
        let out = run(&"0".repeat(64));
        assert_eq!(out.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"));
        let dir = target.parent().unwrap();
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            0,
            "nothing left behind"
        );
        let good = crate::update::download::hex(&sha2::Digest::finalize(
            <sha2::Sha256 as sha2::Digest>::new_with_prefix(body),
        ));
        let out = run(&good);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("herdr-installed herdr 9"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert!(
            std::fs::symlink_metadata(home.path().join(".local/bin/herdr"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_failed_download_leaves_nothing() {
        let home = tempfile::tempdir().unwrap();
        let target = home.path().join("bin/9/herdr");
        let out = std::process::Command::new("sh")
            .args(["-c", INSTALL, "herdr-remote", target.to_str().unwrap()])
            .args([
                &"0".repeat(64),
                "download",
                "http://127.0.0.1:9/nothing-here",
            ])
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{out:?}");
        assert_eq!(
            std::fs::read_dir(target.parent().unwrap()).unwrap().count(),
            0
        );
    }
}
