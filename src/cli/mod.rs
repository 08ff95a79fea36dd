//! Command-line interface: argument parsing and one small module per subcommand group.

pub mod agent;
pub mod config;
pub mod control;
mod control_args;
#[cfg(test)]
mod help_tests;
pub mod machine;
pub mod manual;
mod pretty;
pub mod server;
pub mod session;
pub mod worktree;

use clap::{Parser, Subcommand};

use crate::paths::SessionName;

#[derive(Debug, Parser)]
#[command(
    name = "herdr",
    version,
    about = "A terminal multiplexer that coding agents live in: a background server owns every pane, clients attach and detach.",
    after_help = "With no command, attaches to the session (starting its server if needed)."
)]
pub struct Cli {
    /// Session name (default: "default"); each session has its own server, socket and state.
    #[arg(long, short = 's', global = true, value_name = "NAME", add = manual::session_names())]
    pub session: Option<String>,

    /// Run the command against a saved machine's server (`herdr machine add`), through
    /// the local server's link to it: `herdr --machine gpu pane list`.
    #[arg(long, global = true, value_name = "NAME")]
    pub machine: Option<String>,

    /// Attach to the session on HOST over SSH (installing herdr there if needed, with its
    /// checksum verified on HOST). Arguments after `--` go to ssh.
    #[arg(long, value_name = "HOST")]
    pub remote: Option<String>,

    /// With --remote: install without asking.
    #[arg(long, requires = "remote")]
    pub yes: bool,

    /// With --remote: if the host's server runs another herdr version, hand its session
    /// to this version live (every program keeps running).
    #[arg(long, requires = "remote")]
    pub handoff: bool,

    /// With --remote: whose key bindings the session uses: `server` (the host's config,
    /// the default) or `local` (this machine's prefix and [keys]).
    #[arg(long, value_enum, requires = "remote", value_name = "local|server")]
    pub remote_keybindings: Option<crate::remote::Keybindings>,

    /// With --remote: the SSH client: `system` (OpenSSH, the default) or `builtin`
    /// (herdr's own; reads ~/.ssh/config, uses ssh-agent and key files, strict
    /// known_hosts). Default from `[remote] ssh` in config.toml.
    #[arg(long, value_enum, requires = "remote", value_name = "system|builtin")]
    pub ssh: Option<crate::remote::SshClient>,

    /// With --remote: extra arguments for ssh (after `--`).
    #[arg(last = true, value_name = "SSH ARGS", requires = "remote")]
    pub ssh_args: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, attach to, stop, rename and delete sessions.
    Session {
        #[command(subcommand)]
        command: session::SessionCommand,
    },
    /// List the sessions (same as `herdr session list`).
    Ls {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Attach to a session (same as `herdr session attach`).
    Attach {
        /// The session (default: the one attached to last).
        #[arg(add = manual::session_names())]
        name: Option<String>,
    },
    /// Paste what copy mode copied last into a pane (same as `herdr pane paste`).
    Paste {
        #[command(flatten)]
        target: control_args::Target,
    },
    /// Manage the session's background server.
    Server {
        #[command(subcommand)]
        command: ServerCommand,
    },
    /// List, create, close, rename and focus workspaces.
    Workspace {
        #[command(subcommand)]
        command: control::WorkspaceCommand,
    },
    /// List, create, close, rename and focus tabs.
    Tab {
        #[command(subcommand)]
        command: control::TabCommand,
    },
    /// Drive panes: split, close, focus, zoom, resize, rename, send input, read, wait.
    Pane {
        #[command(subcommand)]
        command: control::PaneCommand,
    },
    /// Git worktrees, one per agent, each in a workspace: create, list, open, remove.
    Worktree {
        #[command(subcommand)]
        command: worktree::WorktreeCommand,
    },
    /// List the coding agents in the panes and their states; report an agent's state.
    Agent {
        #[command(subcommand)]
        command: agent::AgentCommand,
    },
    /// Other machines shown beside this one: add, list, rename, remove, enable, disable,
    /// reconnect.
    Machine {
        #[command(subcommand)]
        command: machine::MachineCommand,
    },
    /// Install, remove or check herdr's hooks in an agent's own settings.
    Integration {
        #[command(subcommand)]
        command: agent::IntegrationCommand,
    },
    /// Check config.toml, or print the default one.
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Print the session's events as they happen (created, closed, focused, output, …).
    Events {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Copy bytes between stdio and the session's server (runs on the remote end of
    /// `herdr --remote`).
    #[command(hide = true)]
    RemoteBridge {
        /// Say `herdr-bridge-ready` on a line once connected to the server, before any
        /// byte is copied (a client racing several connections picks the first ready).
        #[arg(long)]
        ready: bool,
    },
    /// Install the newest herdr of your channel (checksum verified), then move running
    /// servers to it.
    Update {
        /// Hand every running server to the new binary live (no program stops).
        #[arg(long)]
        handoff: bool,
        /// Only say whether an update is available; change nothing.
        #[arg(long, conflicts_with = "rollback")]
        check: bool,
        /// Install without asking.
        #[arg(long)]
        yes: bool,
        /// Put the binary the last update replaced back in place.
        #[arg(long)]
        rollback: bool,
    },
    /// Show or choose the release channel `herdr update` follows.
    Channel {
        #[command(subcommand)]
        command: ChannelCommand,
    },
    /// Print the shell's completion hook (session names complete too).
    ///
    /// Put it in the shell's start-up file: `source <(herdr completion bash)` in ~/.bashrc,
    /// `source <(herdr completion zsh)` in ~/.zshrc, `herdr completion fish | source` in
    /// config.fish.
    Completion {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; read it with `herdr man | man -l -`).
    #[command(hide = true)]
    Man,
}

#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Print the channel, this binary's version and the manifest `herdr update` reads.
    Show,
    /// Follow `stable` (releases) or `preview` (builds between releases).
    Set {
        /// `stable` or `preview`.
        channel: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Start the server in the background (no-op if it runs).
    Start,
    /// Stop the server and every program in its panes; removes its socket.
    Stop,
    /// Show version, protocol, pid, uptime, panes and attached clients.
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Replace the running server with a new binary, live: every program in every pane
    /// keeps running, clients reconnect by themselves.
    Handoff {
        /// The new herdr binary (default: the file now at the server's own path, e.g.
        /// after an update replaced it).
        #[arg(long, value_name = "PATH")]
        binary: Option<std::path::PathBuf>,
        /// Refuse unless the new binary reports this version.
        #[arg(long, value_name = "VERSION")]
        expect_version: Option<String>,
        /// Refuse unless the new binary speaks this client protocol.
        #[arg(long, value_name = "N")]
        expect_protocol: Option<u32>,
    },
    /// Re-read the config file and apply it (key bindings, prefix, sidebar, notifications,
    /// …) without restarting anything; prints what changed and every problem.
    ReloadConfig,
    /// Run the server in this process (used by `start`; not needed by hand).
    #[command(hide = true)]
    Run {
        /// An inherited pipe to write one byte to once the socket listens (how the
        /// process that started us learns it can connect).
        #[arg(long, value_name = "FD")]
        ready_fd: Option<i32>,
    },
    /// Take a session over from a running server (started by it during a handoff).
    #[command(hide = true)]
    Import {
        /// The old server's handoff socket.
        #[arg(long, value_name = "SOCKET")]
        from: std::path::PathBuf,
    },
}

impl Cli {
    /// The session: `--session`, else the one this command runs inside (a pane's
    /// `HERDR_SESSION`), else the default.
    pub fn session(&self) -> anyhow::Result<SessionName> {
        match &self.session {
            Some(name) => Ok(SessionName::parse(name)?),
            None => match std::env::var("HERDR_SESSION") {
                Ok(name) if !name.is_empty() => Ok(SessionName::parse(&name)?),
                _ => Ok(SessionName::default_session()),
            },
        }
    }
}

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let session = cli.session()?;
    if let Some(name) = &cli.machine {
        if cli.remote.is_some() {
            anyhow::bail!("--machine and --remote do not go together: pick one");
        }
        through_machine(name, cli.command.as_ref())?;
    }
    match cli.command {
        None => match cli.remote {
            Some(host) => Ok(crate::remote::attach(crate::remote::RemoteArgs {
                host,
                session,
                yes: cli.yes,
                handoff: cli.handoff,
                keybindings: cli.remote_keybindings.unwrap_or_default(),
                ssh: cli.ssh.unwrap_or_else(crate::remote::configured_ssh_client),
                ssh_args: cli.ssh_args,
            })?),
            None => Ok(crate::client::attach(&session)?),
        },
        Some(Command::RemoteBridge { ready }) => Ok(crate::remote::bridge::run(&session, ready)?),
        Some(Command::Session { command }) => session::run(command),
        Some(Command::Paste { target }) => {
            control::pane(&session, control::PaneCommand::Paste { target })
        }
        Some(Command::Ls { json }) => session::run(session::SessionCommand::List { json }),
        Some(Command::Attach { name }) => session::run(session::SessionCommand::Attach { name }),
        Some(Command::Server { command }) => server::run(&session, command),
        Some(Command::Workspace { command }) => control::workspace(&session, command),
        Some(Command::Tab { command }) => control::tab(&session, command),
        Some(Command::Pane { command }) => control::pane(&session, command),
        Some(Command::Worktree { command }) => worktree::run(&session, command),
        Some(Command::Config { command }) => config::run(command),
        Some(Command::Events { json }) => match &cli.machine {
            Some(machine) => control::machine_events(machine, json),
            None => control::events(&session, json),
        },
        Some(Command::Agent { command }) => agent::agent(&session, command),
        Some(Command::Integration { command }) => agent::integration(command),
        Some(Command::Machine { command }) => machine::run(command, &session, cli.session),
        Some(Command::Update {
            handoff,
            check,
            yes,
            rollback,
        }) => Ok(crate::update::run(crate::update::UpdateArgs {
            handoff,
            check,
            yes,
            rollback,
        })?),
        Some(Command::Channel { command }) => Ok(match command {
            ChannelCommand::Show => crate::update::channel_show(),
            ChannelCommand::Set { channel } => crate::update::channel_set(&channel),
        }?),
        Some(Command::Completion { shell }) => print(&manual::completion(shell)),
        Some(Command::Man) => print(&manual::man_page()?),
    }
}

/// `--machine NAME`: the saved machine must exist, and the command be one that talks to
/// a server; from then on its requests go through that machine's link.
fn through_machine(name: &str, command: Option<&Command>) -> anyhow::Result<()> {
    crate::machine::load()?.get(name)?;
    let what = match command {
        None => Some("attaching (use `herdr --remote HOST`)"),
        Some(
            Command::Session { .. }
            | Command::Ls { .. }
            | Command::Attach { .. }
            | Command::Machine { .. }
            | Command::Config { .. }
            | Command::Integration { .. }
            | Command::Update { .. }
            | Command::Channel { .. }
            | Command::Completion { .. }
            | Command::Man
            | Command::Worktree { .. }
            | Command::RemoteBridge { .. },
        ) => Some("this command (it does not talk to one server)"),
        Some(Command::Server {
            command:
                ServerCommand::Start
                | ServerCommand::Run { .. }
                | ServerCommand::Handoff { .. }
                | ServerCommand::Import { .. },
        }) => Some("starting or replacing a server (run it on the machine)"),
        _ => None,
    };
    if let Some(what) = what {
        anyhow::bail!(
            "--machine runs commands that talk to a server (pane, tab, workspace, agent, server, paste); not {what}"
        );
    }
    crate::client::api::use_machine(name.to_string());
    Ok(())
}

/// For a top-level word clap did not know: the command it most likely meant.
pub fn command_tip(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if word.starts_with('-') {
        return None;
    }
    let cmd = <Cli as clap::CommandFactory>::command();
    let names: Vec<&str> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_visible_aliases()))
        .collect();
    let best = crate::suggest::closest(word, &names)?;
    Some(format!("a similar command exists: '{best}'"))
}

/// Writes generated text to stdout (a reader that has gone ends the command quietly: see
/// `main`).
fn print(text: &[u8]) -> anyhow::Result<i32> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text).and_then(|_| out.flush())?;
    Ok(0)
}
