//! The remote session's server: started if none runs, reused if it speaks our protocol,
//! and — when an older build runs — handed live to this version with `--handoff`, or
//! restarted only after the user chose to lose its programs.

use super::{Error, RemoteArgs, Ssh};
use crate::protocol::exit;
use crate::protocol::{version, PROTOCOL_VERSION};

/// `server status --json` of the session, with its exit code first.
const STATUS: &str = r#"out=$("$1" --session "$2" server status --json 2>&1); rc=$?
printf 'herdr-status %s\n%s\n' "$rc" "$out""#;

/// What runs on the host now.
#[derive(Debug, PartialEq, Eq)]
pub enum Running {
    Nothing,
    Server { version: String, protocol: u32 },
}

/// What to do about it.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    Start,
    Reuse,
    /// Same protocol, another version: attach works; say that `--handoff` would upgrade.
    ReuseOlder(String),
    HandOff,
    /// Not attachable and no `--handoff`: the user must choose.
    Choose {
        version: String,
        protocol: u32,
    },
}

pub fn parse_status(out: &str) -> Result<Running, Error> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with("herdr-status "));
    let rc: i32 = lines
        .next()
        .and_then(|l| l.strip_prefix("herdr-status "))
        .and_then(|c| c.trim().parse().ok())
        .ok_or(Error::NoStatus)?;
    let rest: Vec<&str> = lines.collect();
    let text = rest.join("\n");
    if rc == exit::NO_SERVER {
        return Ok(Running::Nothing);
    }
    // A server of another protocol refuses our status request's hello, and says who it is.
    let mismatch = regex_lite::Regex::new(r"this server \(herdr ([^)\s]+)\) speaks protocol (\d+)")
        .ok()
        .and_then(|re| {
            re.captures(&text)
                .map(|c| (c[1].to_string(), c[2].to_string()))
        });
    if let Some((version, protocol)) = mismatch {
        return Ok(Running::Server {
            version,
            protocol: protocol.parse().unwrap_or(0),
        });
    }
    if rc != 0 {
        return Err(Error::StatusFailed(text.trim().into()));
    }
    let v: serde_json::Value = serde_json::from_str(text.trim()).map_err(Error::StatusNotJson)?;
    Ok(Running::Server {
        version: v["version"].as_str().unwrap_or("unknown").to_string(),
        protocol: v["protocol"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0),
    })
}

pub fn plan(running: Running, handoff: bool) -> Plan {
    match running {
        Running::Nothing => Plan::Start,
        Running::Server { version: v, .. } if v == version() => Plan::Reuse,
        Running::Server { .. } if handoff => Plan::HandOff,
        Running::Server {
            version: v,
            protocol,
        } if protocol == PROTOCOL_VERSION => Plan::ReuseOlder(v),
        Running::Server { version, protocol } => Plan::Choose { version, protocol },
    }
}

/// Makes sure the session's server on the host runs a protocol this client speaks.
pub(super) fn ensure_server(ssh: &Ssh, binary: &str, args: &RemoteArgs) -> Result<(), Error> {
    let session = args.session.as_str();
    let out = ssh.run(STATUS, &[binary, session], None)?;
    let running = parse_status(&out).map_err(|e| Error::On {
        host: args.host.clone(),
        source: Box::new(e),
    })?;
    let v = version();
    let start = || {
        ssh.run(
            r#"exec "$1" --session "$2" server start"#,
            &[binary, session],
            None,
        )
        .map_err(|e| Error::StartFailed {
            host: args.host.clone(),
            source: Box::new(e),
        })
        .map(drop)
    };
    let hand_off = || {
        let protocol = PROTOCOL_VERSION.to_string();
        ssh.run(
            r#"exec "$1" --session "$2" server handoff --binary "$1" --expect-version "$3" --expect-protocol "$4""#,
            &[binary, session, v, &protocol],
            None,
        )
        .map_err(|e| Error::HandoffFailed {
            host: args.host.clone(),
            source: Box::new(e),
        })
        .map(|said| eprintln!("{}", said.trim()))
    };
    match plan(running, args.handoff) {
        Plan::Start => start(),
        Plan::Reuse => Ok(()),
        Plan::ReuseOlder(old) => {
            eprintln!(
                "note: {} runs herdr {old}; attaching to it (add --handoff to move its session to herdr {v} live)",
                args.host
            );
            Ok(())
        }
        Plan::HandOff => hand_off(),
        Plan::Choose {
            version: old,
            protocol,
        } => {
            let explain = format!(
                "{} runs herdr {old} (protocol {protocol}), which this herdr {v} (protocol {PROTOCOL_VERSION}) cannot attach to",
                args.host
            );
            if !crate::sys::tty::is_tty(std::os::fd::AsFd::as_fd(&std::io::stdin())) {
                return Err(Error::Incompatible {
                    explain,
                    version: v,
                    reattach: super::reattach_command(args),
                    stop: format!(
                        "ssh {} {} --session {session} server stop",
                        args.host,
                        super::quote(binary)
                    ),
                });
            }
            eprintln!("{explain}.");
            if super::install::confirm(&format!(
                "Hand its session to herdr {v} live (every program keeps running)?"
            )) {
                return hand_off();
            }
            if super::install::confirm("Restart it instead? Every program running there ends.") {
                ssh.run(
                    r#"exec "$1" --session "$2" server stop"#,
                    &[binary, session],
                    None,
                )?;
                return start();
            }
            Err(Error::Unchanged(args.host.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_answers_parse() {
        assert_eq!(
            parse_status("motd\nherdr-status 3\nherdr: no server\n").unwrap(),
            Running::Nothing
        );
        assert_eq!(
            parse_status("herdr-status 0\n{\"version\":\"0.0.9\",\"protocol\":1}\n").unwrap(),
            Running::Server {
                version: "0.0.9".into(),
                protocol: 1
            }
        );
        assert_eq!(
            parse_status(
                "herdr-status 1\nherdr: protocol mismatch: this server (herdr 0.0.3) speaks protocol 7, the client (herdr 0.1.0) speaks 1; use the same\n"
            )
            .unwrap(),
            Running::Server {
                version: "0.0.3".into(),
                protocol: 7
            },
            "an older protocol's refusal says who it is"
        );
        assert!(parse_status("herdr-status 1\nboom\n")
            .unwrap_err()
            .to_string()
            .contains("boom"));
        assert!(parse_status("sh: not found").is_err());
    }

    #[test]
    fn plans_follow_version_protocol_and_handoff() {
        let server = |v: &str, p: u32| Running::Server {
            version: v.into(),
            protocol: p,
        };
        assert_eq!(plan(Running::Nothing, true), Plan::Start);
        assert_eq!(plan(server(version(), PROTOCOL_VERSION), true), Plan::Reuse);
        assert_eq!(plan(server("0.0.1", PROTOCOL_VERSION), true), Plan::HandOff);
        assert_eq!(
            plan(server("0.0.1", PROTOCOL_VERSION), false),
            Plan::ReuseOlder("0.0.1".into())
        );
        assert_eq!(
            plan(server("0.0.1", PROTOCOL_VERSION + 1), true),
            Plan::HandOff
        );
        assert_eq!(
            plan(server("0.0.1", PROTOCOL_VERSION + 1), false),
            Plan::Choose {
                version: "0.0.1".into(),
                protocol: PROTOCOL_VERSION + 1
            }
        );
    }
}
