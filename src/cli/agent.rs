//! `herdr agent report|hook` and `herdr integration install|uninstall|status`: how agents
//! tell herdr what they are doing (see docs/agents.md).

use clap::Subcommand;
use serde_json::Value;

use super::control::{call, nothing, rows, s, target, Output, Target};
use crate::client::api::ApiClient;
use crate::paths::SessionName;
use crate::protocol::api::{AgentList, AgentReport, Request};
use crate::protocol::exit;

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// List every pane an agent runs in: its state and since when, its session, where it is.
    List {
        /// Only the agents in this state (blocked: waiting for the user).
        #[arg(long, value_parser = ["working", "blocked", "idle", "done"])]
        state: Option<String>,
        /// The saved machines' agents too (`herdr machine list`), each shown with its
        /// machine: `gpu:p3`.
        #[arg(long)]
        all_machines: bool,
        #[command(flatten)]
        out: Output,
    },
    /// Tell herdr what the agent in this pane is doing (called by the agent's hooks).
    Report {
        #[command(flatten)]
        target: Target,
        /// Who reports: `herdr:<agent>` for herdr's own integrations.
        #[arg(long)]
        source: String,
        /// The agent that runs in the pane (claude, codex, …; see docs/agents.md).
        #[arg(long, value_name = "NAME")]
        agent: String,
        /// The agent's session id: what resumes its conversation after a restart.
        #[arg(long, value_name = "ID", conflicts_with = "session_path")]
        session_id: Option<String>,
        /// The agent's session file, for agents that name sessions by file (absolute).
        #[arg(long, value_name = "PATH")]
        session_path: Option<String>,
        /// What the agent does now (blocked: it waits for the user).
        #[arg(long, value_parser = ["working", "blocked", "idle", "done"])]
        state: Option<String>,
        /// What went wrong, when an error ended the agent's turn (shown by `pane get`
        /// until its next turn).
        #[arg(long, value_name = "TEXT")]
        error: Option<String>,
        /// Increasing per source; an older report never overrides a newer one.
        #[arg(long, value_name = "N")]
        seq: Option<u64>,
    },
    /// Run by the agents' hooks (installed with `herdr integration install AGENT`): reads
    /// what the hook tells (Claude Code: JSON on stdin; Codex: JSON as the last argument)
    /// and reports it. Never fails the agent: exits 0 regardless.
    #[command(hide = true)]
    Hook {
        /// The agent whose hook this is (claude, codex).
        agent: String,
        /// The hook event (claude: SessionStart, UserPromptSubmit, PreToolUse,
        /// PermissionRequest, PostToolUse, PostToolUseFailure, Notification, Stop,
        /// StopFailure, SessionEnd; codex: notify).
        event: String,
        /// codex: the user's own notify command to run afterwards, then Codex's JSON.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum IntegrationCommand {
    /// Add herdr's hooks to the agent's own settings (idempotent; keeps a backup).
    Install {
        /// The agent: claude or codex.
        agent: String,
    },
    /// Remove exactly the hooks install added.
    Uninstall {
        /// The agent: claude or codex.
        agent: String,
    },
    /// Say whether the hooks are installed.
    Status {
        /// The agent: claude or codex.
        agent: String,
    },
}

type Action = fn(&std::path::Path) -> Result<String, crate::agent::IntegrationError>;

pub fn integration(cmd: IntegrationCommand) -> anyhow::Result<i32> {
    use crate::agent::{codex, integration as claude};
    let (agent, index) = match &cmd {
        IntegrationCommand::Install { agent } => (agent, 0),
        IntegrationCommand::Uninstall { agent } => (agent, 1),
        IntegrationCommand::Status { agent } => (agent, 2),
    };
    let (path, actions): (_, [Action; 3]) = match crate::agent::by_name(agent).map(|a| a.name) {
        Some("claude") => (
            claude::claude_settings_path(),
            [claude::install, claude::uninstall, claude::status],
        ),
        Some("codex") => (
            codex::config_path(),
            [codex::install, codex::uninstall, codex::status],
        ),
        Some(other) => anyhow::bail!("no integration for {other} yet (supported: claude, codex); its state can still be reported with `herdr agent report`"),
        None => anyhow::bail!("unknown agent {agent:?}; see docs/agents.md"),
    };
    crate::say!("{}", actions[index](&path)?);
    Ok(0)
}

pub fn agent(session: &SessionName, cmd: AgentCommand) -> anyhow::Result<i32> {
    match cmd {
        AgentCommand::List {
            state,
            all_machines,
            out,
        } => call(
            session,
            Request::AgentList(AgentList {
                state,
                all_machines: all_machines.then_some(true),
            }),
            out.json,
            |v| rows(v, agent_row),
        ),
        AgentCommand::Report {
            target: t,
            source,
            agent,
            session_id,
            session_path,
            state,
            error,
            seq,
        } => {
            let report = AgentReport {
                pane: target(&t)?,
                source,
                agent,
                session_id,
                session_path,
                state,
                error,
                seq,
                cwd: None,
                prompt: None,
            };
            call(session, Request::AgentReport(report), false, nothing)
        }
        AgentCommand::Hook { agent, event, rest } => {
            // Outside a herdr pane, or on any problem: stay silent and let the agent go on.
            // Codex: the user's own notify command, run after herdr heard of the turn.
            let mut chained: Option<(&[String], &str)> = None;
            let stdin = || {
                let mut input = String::new();
                let _ = std::io::Read::read_to_string(
                    &mut std::io::Read::take(std::io::stdin(), 1 << 20),
                    &mut input,
                );
                input
            };
            let report = match agent.as_str() {
                // Its lifecycle hooks (hooks.json), each event's JSON on stdin.
                "codex" if event != "notify" => {
                    crate::agent::codex_hooks::hook_report(&event, &stdin())
                }
                "codex" => {
                    let (chain, payload) = match rest.split_last() {
                        Some((json, chain)) => (chain, json.as_str()),
                        None => (&[][..], ""),
                    };
                    chained = Some((chain, payload));
                    crate::agent::codex::own_hook_report(payload)
                }
                "claude" => crate::agent::claude::hook_report(&event, &stdin()).ok(),
                _ => None,
            };
            // In a pane, or from an agent's server shared by its panes (which may have
            // been started outside herdr): that report names the turn it is about, or
            // (Codex's) the session, which the server routes by.
            let routable = |r: &crate::agent::HookReport| {
                std::env::var_os("HERDR_PANE").is_some()
                    || r.route.is_some()
                    || (agent == "codex" && r.session.is_some())
            };
            if let Some(report) = report.filter(routable) {
                send_hook_report(session, &agent, report);
            }
            if let Some((chain, payload)) = chained {
                run_chained(chain, payload);
            }
            Ok(0)
        }
    }
}

/// One line of `agent list`: `p3  claude  blocked  for 2m05s  w1/t2  /src/x  session 0b1c…`,
/// with what is unknown left out.
fn agent_row(a: &Value) -> String {
    let pane = match a["machine"].as_str() {
        Some(m) => format!("{m}:{}", s(a, "pane")),
        None => s(a, "pane").to_string(),
    };
    let mut line = format!("{:<4} {:<12} {:<8}", pane, s(a, "agent"), s(a, "state"));
    if let Some(secs) = a["for_secs"].as_u64() {
        line.push_str(&format!(" for {:<8}", duration(secs)));
    }
    line.push_str(&format!(" {}/{}", s(a, "workspace"), s(a, "tab")));
    for (key, label) in [
        ("cwd", ""),
        ("session_id", "session "),
        ("session_path", "session "),
    ] {
        if let Some(v) = a[key].as_str() {
            line.push_str(&format!("  {label}{v}"));
        }
    }
    if let Some(e) = a["error"].as_str() {
        line.push_str(&format!("  error: {e}"));
    }
    line
}

/// A duration as a person reads it: `45s`, `2m05s`, `3h07m`, `2d04h`.
pub(super) fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86400 => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d{:02}h", secs / 86400, secs % 86400 / 3600),
    }
}

/// Reports what a hook said, quietly: a hook never fails its agent.
fn send_hook_report(session: &SessionName, agent: &str, report: crate::agent::HookReport) {
    // A $HERDR_PANE that names no pane: the server could not take the report either.
    let Ok(pane) = target(&Target { pane: None }) else {
        return;
    };
    // Hooks of one agent run one after another: wall-clock nanoseconds order them.
    let seq = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let (cwd, prompt) = report.route.map(|r| (r.cwd, r.prompt)).unzip();
    let request = Request::AgentReport(AgentReport {
        pane,
        source: format!("herdr:{agent}"),
        agent: agent.to_string(),
        session_id: report.session,
        session_path: None,
        state: report.state.map(str::to_string),
        error: report.error,
        seq: Some(seq),
        cwd,
        prompt,
    });
    if let Ok(Ok(mut api)) = connect_quiet(session) {
        let _ = api.request(&request);
    }
}

/// The user's own notify command that herdr's hook replaced, run as Codex would have.
fn run_chained(chain: &[String], payload: &str) {
    if let Some((program, args)) = chain.split_first() {
        let _ = std::process::Command::new(program)
            .args(args)
            .arg(payload)
            .status();
    }
}

fn connect_quiet(session: &SessionName) -> anyhow::Result<Result<ApiClient, i32>> {
    Ok(ApiClient::connect(session)?.ok_or(exit::NO_SERVER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_read_as_people_say_them() {
        let cases = [
            (0, "0s"),
            (59, "59s"),
            (60, "1m00s"),
            (125, "2m05s"),
            (3599, "59m59s"),
            (3600, "1h00m"),
            (11_220, "3h07m"),
            (86_400, "1d00h"),
            (187_200, "2d04h"),
        ];
        for (secs, text) in cases {
            assert_eq!(duration(secs), text, "{secs}");
        }
    }

    #[test]
    fn a_row_names_what_is_known_and_leaves_out_the_rest() {
        let a = json!({"pane": "p3", "agent": "claude", "state": "blocked", "for_secs": 125,
            "tab": "t2", "workspace": "w1", "cwd": "/src/x", "session_id": "abc",
            "session_path": null, "error": null});
        let row = agent_row(&a);
        for part in [
            "p3",
            "claude",
            "blocked",
            "for 2m05s",
            "w1/t2",
            "/src/x",
            "session abc",
        ] {
            assert!(row.contains(part), "{part:?} missing from {row:?}");
        }
        assert!(!row.contains("error"), "{row}");
        let bare = agent_row(&json!({"pane": "p1", "agent": "codex", "state": null,
            "tab": "t1", "workspace": "w1"}));
        assert!(!bare.contains("for") && !bare.contains("session"), "{bare}");
    }
}
