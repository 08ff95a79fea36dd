//! `herdr config check|default`, and `herdr server reload-config`'s report: the config
//! file as the server reads it, without a server, and what a running one made of it.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::Value;

use crate::client::api::ApiClient;
use crate::paths::SessionName;
use crate::protocol::api::{NoParams, Request};

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file: print every problem (file:line: key: message) and exit
    /// non-zero if there is one, else say "ok". Needs no server.
    Check {
        /// The file to check (default: the config file in force,
        /// $XDG_CONFIG_HOME/herdr/config.toml).
        file: Option<PathBuf>,
    },
    /// Print the default config: every key with its default value and what it does.
    ///
    /// For example: `herdr config default > ~/.config/herdr/config.toml`.
    Default,
}

pub fn run(command: ConfigCommand) -> anyhow::Result<i32> {
    match command {
        ConfigCommand::Check { file } => check(file),
        ConfigCommand::Default => super::print(crate::bindings::default_config_text().as_bytes()),
    }
}

/// Every problem the server would report for the file, on stdout; a summary on stderr.
fn check(file: Option<PathBuf>) -> anyhow::Result<i32> {
    let given = file.is_some();
    let path = file.unwrap_or_else(crate::server::config_path);
    if !path.exists() {
        if given {
            anyhow::bail!("cannot read {}: no such file", path.display());
        }
        crate::say!("ok: {} does not exist; the defaults apply", path.display());
        return Ok(0);
    }
    let problems = crate::server::load_config_at(&path).diags;
    for d in &problems {
        crate::say!("{d}");
    }
    match problems.len() {
        0 => {
            crate::say!("ok: {}", path.display());
            Ok(0)
        }
        n => {
            let plural = if n == 1 { "" } else { "s" };
            eprintln!("herdr: {n} problem{plural} in {}", path.display());
            Ok(1)
        }
    }
}

/// `herdr server reload-config`: asks the server to re-read its config file and prints
/// what it applied, what it could not apply now, and every problem (then exits 1).
pub fn reload(session: &SessionName) -> anyhow::Result<i32> {
    let Some(mut api) = ApiClient::connect(session)? else {
        eprintln!("herdr: no herdr server is running for session {session}; nothing to reload");
        return Ok(crate::protocol::exit::NO_SERVER);
    };
    let reply = api.request(&Request::ReloadConfig(NoParams {}))?;
    let list = |key: &str| -> Vec<String> {
        reply
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let path = reply.get("path").and_then(Value::as_str).unwrap_or("");
    let (applied, later, problems) = (list("applied"), list("not_applied"), list("problems"));
    crate::say!("reloaded {path}");
    match applied.is_empty() {
        true => crate::say!("applied: nothing changed"),
        false => applied.iter().for_each(|a| crate::say!("applied: {a}")),
    }
    for l in &later {
        crate::say!("not applied now: {l}");
    }
    for p in &problems {
        crate::say!("{p}");
    }
    if problems.is_empty() {
        return Ok(0);
    }
    let n = problems.len();
    let plural = if n == 1 { "" } else { "s" };
    eprintln!("herdr: {n} problem{plural} in the config; those entries use their defaults");
    Ok(1)
}
