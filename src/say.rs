//! Lines for people on stdout that survive a reader that has gone (`herdr … | head`):
//! every command, the CLI's and an update's, prints through [`say!`](crate::say!).

/// Writes a line to stdout as `println!` does, without its panic when the reader has gone
/// (`herdr … | head`): a line nobody can read is dropped and the command carries on (its
/// exit code still says how it went).
pub fn say_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args).and_then(|_| out.write_all(b"\n"));
}

/// `println!` for everything herdr prints: see [`say_line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::say_line(format_args!($($arg)*))
    };
}

/// Asks a yes/no question at the terminal (on stderr); anything but yes is no.
pub fn confirm(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
}
