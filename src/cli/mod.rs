//! Command-line interface: argument parsing and one small module per subcommand group.

pub mod api_client;
pub mod server;

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
    #[arg(long, short = 's', global = true, value_name = "NAME")]
    pub session: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage the session's background server.
    Server {
        #[command(subcommand)]
        command: ServerCommand,
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
    /// Run the server in this process (used by `start`; not needed by hand).
    #[command(hide = true)]
    Run,
}

impl Cli {
    pub fn session(&self) -> anyhow::Result<SessionName> {
        match &self.session {
            Some(name) => Ok(SessionName::parse(name)?),
            None => Ok(SessionName::default_session()),
        }
    }
}

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let session = cli.session()?;
    match cli.command {
        None => crate::client::attach(&session),
        Some(Command::Server { command }) => server::run(&session, command),
    }
}
