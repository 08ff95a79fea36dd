//! The `herdr` binary: parse arguments, dispatch, map errors to exit codes.

use clap::Parser;

fn main() {
    let cli = herdr::cli::Cli::parse();
    let code = match herdr::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (e.g. `herdr server status | head -0`) is not an error.
            if e.downcast_ref::<std::io::Error>().map(|io| io.kind())
                == Some(std::io::ErrorKind::BrokenPipe)
            {
                0
            } else {
                eprintln!("herdr: {e:#}");
                1
            }
        }
    };
    std::process::exit(code);
}
