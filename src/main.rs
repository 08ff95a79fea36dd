//! The `herdr` binary: parse arguments, dispatch, map errors to exit codes.

use clap::{CommandFactory, FromArgMatches};

fn main() {
    // The relocations the loader applied are never read again: their pages leave this
    // process's memory (servers and clients run for days).
    herdr::sys::startup::release_relocations();
    // Linked statically: host and user lookups use only what is linked in.
    herdr::sys::startup::builtin_name_services();
    // A shell asking for completions gets them and nothing else runs.
    herdr::cli::manual::complete_if_asked();
    // A server started by a client is run without the CLI parser (see the function).
    if let Some(code) = herdr::cli::server::run_if_server_start() {
        std::process::exit(code);
    }
    // `--version` reports the version stamped into this binary by a release.
    let matches = match herdr::cli::Cli::command()
        .version(herdr::protocol::version())
        .try_get_matches()
    {
        Ok(m) => m,
        Err(e) => {
            // A mistyped command at the top meets the SSH-arguments positional first, so
            // clap does not suggest one there: we do.
            if let Some(tip) = herdr::cli::command_tip(&e) {
                let _ = e.print();
                eprintln!("\n  tip: {tip}");
                std::process::exit(e.exit_code());
            }
            e.exit()
        }
    };
    let cli = match herdr::cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let code = match herdr::cli::run(cli) {
        Ok(code) => code,
        // The reader of our output has gone (`herdr … | head`): nothing is wrong.
        Err(e) if broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("herdr: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

/// A broken pipe that is our own output's (not, say, a connection to a server).
fn broken_pipe(e: &anyhow::Error) -> bool {
    use std::os::fd::AsFd;
    herdr::sys::reader_gone(std::io::stdout().as_fd())
        && e.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        })
}
