//! The `herdr` binary: parse arguments, dispatch, map errors to exit codes.

use clap::{CommandFactory, FromArgMatches};

fn main() {
    // `--version` reports the version stamped into this binary by a release.
    let matches = herdr::cli::Cli::command()
        .version(herdr::protocol::version())
        .get_matches();
    let cli = match herdr::cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let code = match herdr::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("herdr: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
