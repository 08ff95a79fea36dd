//! `herdr --remote HOST`: make sure the remote host has this herdr and a running server,
//! then attach to it through `herdr remote-bridge` over SSH — the ordinary client, with a
//! transport that reconnects by itself when the link drops (laptop sleep, Wi-Fi change).
//!
//! Everything sent to the remote shell is a fixed `sh -c` script with the variable parts
//! single-quoted; nothing the user or the remote supplies is ever spliced in unquoted.
//! A binary is made executable on the remote only after its SHA-256 matched there.

pub mod bridge;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::client::{self, Link, Transport};
use crate::paths::{self, SessionName};
use crate::protocol::{version, Hello, Role};

pub struct RemoteArgs {
    pub host: String,
    pub session: SessionName,
    pub yes: bool,
    pub ssh_args: Vec<String>,
}

/// Quotes a word for a POSIX shell (and for fish, which shares the `'…'\''…'` form).
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The user's OpenSSH client with connection sharing (probe, install and bridge
/// authenticate once) and keepalives (a dead link is noticed within seconds).
struct Ssh {
    host: String,
    extra: Vec<String>,
    control_dir: PathBuf,
}

impl Ssh {
    fn new(host: &str, extra: &[String]) -> anyhow::Result<Ssh> {
        let control_dir = paths::runtime_dir().join("ssh");
        paths::ensure_private_dir(&paths::runtime_dir())?;
        paths::ensure_private_dir(&control_dir)?;
        Ok(Ssh {
            host: host.to_string(),
            extra: extra.to_vec(),
            control_dir,
        })
    }

    /// `ssh … HOST sh -c SCRIPT ARGS…`: the script is fixed text, the arguments quoted.
    fn command(&self, script: &str, args: &[&str]) -> Command {
        let mut remote = format!("sh -c {} herdr-remote", quote(script));
        for a in args {
            remote.push(' ');
            remote.push_str(&quote(a));
        }
        let mut cmd = Command::new("ssh");
        cmd.args(&self.extra)
            .args([
                "-T",
                "-o",
                "ControlMaster=auto",
                "-o",
                "ControlPersist=60",
                "-o",
                "ServerAliveInterval=2",
                "-o",
                "ServerAliveCountMax=3",
            ])
            .arg("-o")
            .arg(format!("ControlPath={}/%C", self.control_dir.display()))
            .arg("--")
            .arg(&self.host)
            .arg(remote);
        cmd
    }

    /// Runs a script to completion; stdout on success, a clear error otherwise.
    fn run(&self, script: &str, args: &[&str], input: Option<&Path>) -> anyhow::Result<String> {
        let mut cmd = self.command(script, args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        match input {
            Some(file) => cmd.stdin(
                std::fs::File::open(file)
                    .with_context(|| format!("cannot read {}", file.display()))?,
            ),
            None => cmd.stdin(Stdio::null()),
        };
        let out = cmd
            .output()
            .context("cannot run ssh; is the OpenSSH client installed?")?;
        if !out.status.success() {
            anyhow::bail!(
                "ssh to {} failed ({}): {}",
                self.host,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// What the remote said about itself.
#[derive(Debug, PartialEq, Eq)]
pub struct Probe {
    pub installed: bool,
    pub os: String,
    pub arch: String,
    pub binary: String,
}

const PROBE: &str = r#"v=$1
b="$HOME/.local/share/herdr/bin/$v/herdr"
os=$(uname -s 2>/dev/null || echo unknown)
arch=$(uname -m 2>/dev/null || echo unknown)
s=missing
if [ -x "$b" ] && [ "$("$b" --version 2>/dev/null)" = "herdr $v" ]; then s=ok; fi
printf 'herdr-probe %s %s %s %s\n' "$s" "$os" "$arch" "$b""#;

/// Installs the uploaded file ($2: expected SHA-256) as $1, verifying on the remote before
/// anything is made executable; links ~/.local/bin/herdr when that is free or ours.
const INSTALL: &str = r#"b=$1; want=$2
d=$(dirname "$b"); mkdir -p "$d" || exit 2
t="$d/.herdr.part.$$"
cat > "$t" || { rm -f "$t"; exit 2; }
if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum "$t" | cut -d' ' -f1); else h=$(shasum -a 256 "$t" | cut -d' ' -f1); fi
if [ "$h" != "$want" ]; then rm -f "$t"; echo "checksum mismatch: expected $want, got $h" >&2; exit 3; fi
chmod 755 "$t" && mv -f "$t" "$b" || { rm -f "$t"; exit 2; }
l="$HOME/.local/bin/herdr"
mkdir -p "$HOME/.local/bin"
if [ ! -e "$l" ] && [ ! -L "$l" ]; then ln -s "$b" "$l"
elif [ -L "$l" ]; then case "$(readlink "$l")" in */.local/share/herdr/bin/*) ln -sfn "$b" "$l";; esac; fi
echo herdr-installed"#;

pub fn parse_probe(out: &str) -> Option<Probe> {
    let line = out.lines().find(|l| l.starts_with("herdr-probe "))?;
    let mut parts = line.splitn(5, ' ');
    parts.next();
    Some(Probe {
        installed: parts.next()? == "ok",
        os: parts.next()?.to_string(),
        arch: parts.next()?.to_string(),
        binary: parts.next()?.to_string(),
    })
}

/// `uname -s`/`-m` of this machine's build, to tell whether this very binary runs there.
fn local_platform() -> (&'static str, &'static str) {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "aarch64" if os == "Darwin" => "arm64",
        other => other,
    };
    (os, arch)
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn confirm(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
}

/// Makes sure the remote has this version of herdr; returns its path there.
fn ensure_installed(ssh: &Ssh, args: &RemoteArgs) -> anyhow::Result<String> {
    let version = version();
    let out = ssh.run(PROBE, &[version], None)?;
    let probe = parse_probe(&out).ok_or_else(|| {
        anyhow::anyhow!(
            "{} did not answer the probe like a POSIX system (Windows remotes are not supported); it said: {}",
            args.host,
            out.trim()
        )
    })?;
    if probe.installed {
        return Ok(probe.binary);
    }
    let (os, arch) = local_platform();
    if probe.os != os || probe.arch != arch {
        anyhow::bail!(
            "{} is {} {}, and this herdr is built for {os} {arch}; install herdr {version} there yourself \
             (downloading release builds is not available yet)",
            args.host,
            probe.os,
            probe.arch
        );
    }
    if !args.yes {
        if !crate::sys::tty::is_tty(std::os::fd::AsFd::as_fd(&std::io::stdin())) {
            anyhow::bail!(
                "herdr {version} is not installed on {}; to install it at {} run: herdr --remote {} --yes",
                args.host,
                probe.binary,
                args.host
            );
        }
        if !confirm(&format!(
            "Install herdr {version} on {} at {}?",
            args.host, probe.binary
        )) {
            anyhow::bail!("not installed; nothing was changed on {}", args.host);
        }
    }
    let exe = std::env::current_exe().context("cannot find this herdr binary")?;
    let sum = sha256_file(&exe)?;
    let out = ssh
        .run(INSTALL, &[&probe.binary, &sum], Some(&exe))
        .with_context(|| {
            format!(
                "installing herdr on {} failed; nothing executable was left there",
                args.host
            )
        })?;
    anyhow::ensure!(
        out.contains("herdr-installed"),
        "the install on {} did not confirm: {}",
        args.host,
        out.trim()
    );
    Ok(probe.binary)
}

/// The bridge as a transport: each `open` runs `herdr remote-bridge` over SSH.
struct Bridge {
    ssh: Ssh,
    binary: String,
    session: SessionName,
    child: Option<Child>,
    log: PathBuf,
}

impl Transport for Bridge {
    fn open(&mut self, size: (u16, u16)) -> anyhow::Result<Link> {
        if let Some(mut old) = self.child.take() {
            let _ = old.kill();
            let _ = old.wait();
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut child = self
            .ssh
            .command(
                r#"exec "$1" --session "$2" remote-bridge"#,
                &[&self.binary, self.session.as_str()],
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .context("cannot run ssh")?;
        let (Some(mut writer), Some(mut reader)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("ssh gave no pipes");
        };
        self.child = Some(child);
        let mut line = serde_json::to_string(&Hello::new(Role::Client, Some(size)))?;
        line.push('\n');
        writer
            .write_all(line.as_bytes())
            .context("the bridge closed before the hello")?;
        writer.flush()?;
        crate::client::connect::read_hello_reply(
            &mut reader,
            &format!("the bridge (see {})", self.log.display()),
        )?;
        Ok(Link {
            reader: Box::new(reader),
            writer: Box::new(writer),
        })
    }

    fn reconnects(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("{} (session {})", self.ssh.host, self.session)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The command that attaches again, as the user would type it.
fn reattach_command(args: &RemoteArgs) -> String {
    let mut c = format!("herdr --remote {}", quote_if_needed(&args.host));
    if !args.session.is_default() {
        c.push_str(&format!(" --session {}", args.session));
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

pub fn attach(args: RemoteArgs) -> anyhow::Result<i32> {
    if args.host.is_empty() || args.host.starts_with('-') {
        anyhow::bail!("{:?} is not a host name (a host may not start with '-'); usage: herdr --remote HOST [-- SSH ARGS]", args.host);
    }
    client::check_terminal()?;
    let ssh = Ssh::new(&args.host, &args.ssh_args)?;
    let binary = ensure_installed(&ssh, &args)?;
    ssh.run(
        r#"exec "$1" --session "$2" server start"#,
        &[&binary, args.session.as_str()],
        None,
    )
    .with_context(|| format!("cannot start the herdr server on {}", args.host))?;
    let log = paths::runtime_dir().join(format!("ssh-{}.log", args.session));
    let mut bridge = Bridge {
        ssh,
        binary,
        session: args.session.clone(),
        child: None,
        log,
    };
    let first = bridge.open(client::terminal_size())?;
    let outcome = client::run(&mut bridge, first)?;
    client::report(outcome, &bridge.describe(), Some(&reattach_command(&args)))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn probe_lines_parse() {
        let p = parse_probe(
            "motd\nherdr-probe ok Linux x86_64 /home/a b/.local/share/herdr/bin/0.1.0/herdr\n",
        )
        .unwrap();
        assert!(p.installed);
        assert_eq!((p.os.as_str(), p.arch.as_str()), ("Linux", "x86_64"));
        assert_eq!(p.binary, "/home/a b/.local/share/herdr/bin/0.1.0/herdr");
        assert!(parse_probe("'uname' is not recognized").is_none());
    }

    #[test]
    fn the_probe_script_runs_under_sh() {
        let home = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", PROBE, "herdr-remote", version()])
            .env("HOME", home.path())
            .output()
            .unwrap();
        let p = parse_probe(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert!(!p.installed);
        assert_eq!((p.os.as_str(), p.arch.as_str()), local_platform());
    }

    #[test]
    fn the_install_script_refuses_a_wrong_checksum_and_leaves_nothing_executable() {
        let home = tempfile::tempdir().unwrap();
        let target = home.path().join(".local/share/herdr/bin/9/herdr");
        let run = |sum: &str| {
            let mut child = std::process::Command::new("sh")
                .args(["-c", INSTALL, "herdr-remote", target.to_str().unwrap(), sum])
                .env("HOME", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"#!/bin/sh\necho fake\n")
                .unwrap();
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
        let good: String = Sha256::digest(b"#!/bin/sh\necho fake\n")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let out = run(&good);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
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
}
