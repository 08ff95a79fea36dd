//! Feeds a file to one pane's emulator, as a pane's I/O thread does, and prints how fast
//! it went: the emulator's cost alone, without PTYs, threads or frames. Line feeds become
//! CR LF first, as a terminal's output processing makes them.
//!
//! `cargo build --release --example parse && target/*/release/examples/parse FILE [BYTES]`
//! (docs/benchmarks.md says where a FILE like the benchmark's comes from; BYTES takes
//! only the start of it, for a run under callgrind).

use std::time::Instant;

/// What one read of a PTY master returns at most (the line discipline's buffer).
const READ: usize = 4096;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: parse FILE [BYTES]")?;
    let mut data = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    if let Some(n) = args.next() {
        data.truncate(n.parse().map_err(|e| format!("BYTES {n:?}: {e}"))?);
    }
    let mut output = Vec::with_capacity(data.len() + data.len() / 32);
    for &b in &data {
        if b == b'\n' {
            output.push(b'\r');
        }
        output.push(b);
    }
    let mut emulator = herdr::term::Emulator::new(47, 160, 10_000);
    let start = Instant::now();
    for slice in output.chunks(READ) {
        emulator.process(slice);
    }
    let took = start.elapsed();
    let mib = output.len() as f64 / f64::from(1 << 20);
    println!(
        "{mib:.1} MiB in {:.3} s: {:.1} MiB/s",
        took.as_secs_f64(),
        mib / took.as_secs_f64()
    );
    Ok(())
}
