//! The `herdr` binary: parse arguments, dispatch, map errors to exit codes.

use clap::Parser;

fn main() {
    let cli = herdr::cli::Cli::parse();
    let code = match herdr::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("herdr: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
