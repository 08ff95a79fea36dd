//! `herdr agent report|hook` and `herdr integration install|uninstall|status`: how agents
//! tell herdr what they are doing (see docs/agents.md).

use clap::Subcommand;
use serde_json::{json, Value};

use super::api_client::ApiClient;
use super::control::{call, nothing, target, Target, EXIT_NO_SERVER};
use crate::paths::SessionName;

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Tell herdr what the agent in this pane is doing (called by the agent's hooks).
    Report {
        #[command(flatten)]
        target: Target,
        /// Who reports: `herdr:<agent>` for herdr's own integrations.
        #[arg(long)]
        source: String,
        #[arg(long)]
        agent: String,
        #[arg(long, conflicts_with = "session_path")]
        session_id: Option<String>,
        #[arg(long)]
        session_path: Option<String>,
        #[arg(long, value_parser = ["working", "blocked", "idle", "done"])]
        state: Option<String>,
        /// What went wrong, when an error ended the agent's turn (shown by `pane get`
        /// until its next turn).
        #[arg(long)]
        error: Option<String>,
        /// Increasing per source; an older report never overrides a newer one.
        #[arg(long)]
        seq: Option<u64>,
    },
    /// Run by the agents' hooks (installed with `herdr integration install AGENT`): reads
    /// what the hook tells (Claude Code: JSON on stdin; Codex: JSON as the last argument)
    /// and reports it. Never fails the agent: exits 0 regardless.
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
    Install { agent: String },
    /// Remove exactly the hooks install added.
    Uninstall { agent: String },
    /// Whether the hooks are installed.
    Status { agent: String },
}

type Action = fn(&std::path::Path) -> anyhow::Result<String>;

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
            let mut p = target(&t);
            p.insert("source".into(), json!(source));
            p.insert("agent".into(), json!(agent));
            for (k, v) in [
                ("session_id", session_id),
                ("session_path", session_path),
                ("state", state),
                ("error", error),
            ] {
                if let Some(v) = v {
                    p.insert(k.into(), json!(v));
                }
            }
            if let Some(n) = seq {
                p.insert("seq".into(), json!(n));
            }
            call(session, "agent.report", p, false, nothing)
        }
        AgentCommand::Hook { agent, event, rest } => {
            // Outside a herdr pane, or on any problem: stay silent and let the agent go on.
            // Codex: the user's own notify command, run after herdr heard of the turn.
            let mut chained: Option<(&[String], &str)> = None;
            let report = match agent.as_str() {
                "codex" => {
                    let (chain, payload) = match rest.split_last() {
                        Some((json, chain)) => (chain, json.as_str()),
                        None => (&[][..], ""),
                    };
                    chained = Some((chain, payload));
                    crate::agent::codex::own_hook_report(payload)
                }
                "claude" => {
                    let mut input = String::new();
                    let _ = std::io::Read::read_to_string(
                        &mut std::io::Read::take(std::io::stdin(), 1 << 20),
                        &mut input,
                    );
                    crate::agent::claude::hook_report(&event, &input).ok()
                }
                _ => None,
            };
            if let (Some(report), Some(_)) = (report, std::env::var_os("HERDR_PANE")) {
                send_hook_report(session, &agent, report);
            }
            if let Some((chain, payload)) = chained {
                run_chained(chain, payload);
            }
            Ok(0)
        }
    }
}

/// Reports what a hook said, quietly: a hook never fails its agent.
fn send_hook_report(session: &SessionName, agent: &str, report: crate::agent::HookReport) {
    let mut p = target(&Target { pane: None });
    p.insert("source".into(), json!(format!("herdr:{agent}")));
    p.insert("agent".into(), json!(agent));
    if let Some(state) = report.state {
        p.insert("state".into(), json!(state));
    }
    if let Some(id) = report.session {
        p.insert("session_id".into(), json!(id));
    }
    if let Some(error) = report.error {
        p.insert("error".into(), json!(error));
    }
    // Hooks of one agent run one after another: wall-clock nanoseconds order them.
    let seq = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    p.insert("seq".into(), json!(seq));
    if let Ok(Ok(mut api)) = connect_quiet(session) {
        let _ = api.call("agent.report", Value::Object(p));
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
    Ok(ApiClient::connect(session)?.ok_or(EXIT_NO_SERVER))
}
