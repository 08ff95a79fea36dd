//! The server's log: one line per record on standard error, which a server started in the
//! background has pointed at its session's `server.log`, rotated by size ([`file`]).
//!
//! ```text
//! 2025-06-01 14:03:07.412 +0200 WARN persistence: saving the session failed: …
//! ```
//!
//! The local time to the millisecond and its offset from UTC, the level, the part of the
//! server that speaks, the message. `HERDR_LOG` ([`ENV`]) picks the least severe level
//! written: `error`, `warn`, `info` (the default) or `debug`. A record is at most
//! [`MAX_LINE`] bytes (longer ones are cut, ending in `…`), control characters in it are
//! escaped so it stays one line, and it is formatted without allocating. Writing never
//! blocks the caller on a reader that does not read and never fails it: a line that
//! cannot be written is counted, and the count is logged once lines get through again.
//!
//! Calls: `log::warn!("persistence", "saving the session failed: {e}")`; the part may be
//! anything `Display` (`format_args!("client {id}")`).

pub mod file;

use std::fmt::{self, Display, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sys::LocalTime;

/// The environment variable that sets the level.
pub const ENV: &str = "HERDR_LOG";

/// A record's length at most, its newline included: no more than a pipe takes in one
/// write (`PIPE_BUF`), so a line is never interleaved with another process's.
pub const MAX_LINE: usize = 4096;

/// `server.log` becomes `server.log.1` once it has grown past this.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// How many rotated files are kept (`server.log.1` … `server.log.3`).
pub const KEEP: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }

    /// `HERDR_LOG`'s words, in any case.
    pub fn parse(s: &str) -> Option<Level> {
        [Level::Error, Level::Warn, Level::Info, Level::Debug]
            .into_iter()
            .find(|l| l.word().eq_ignore_ascii_case(s.trim()))
    }
}

static MAX_LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static SINK: Mutex<Option<file::Rotating>> = Mutex::new(None);
static LOST: AtomicU64 = AtomicU64::new(0);

/// Whether records of `level` are written.
pub fn enabled(level: Level) -> bool {
    level as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
}

/// Sets up the log of a server whose log file is `path`: the level from `HERDR_LOG`, and
/// rotation when standard error is that file (a server run in the foreground writes to
/// its terminal, unrotated).
pub fn init(path: &Path) {
    let wanted = std::env::var(ENV).ok().filter(|w| !w.trim().is_empty());
    let level = wanted.as_deref().map(Level::parse);
    MAX_LEVEL.store(
        level.flatten().unwrap_or(Level::Info) as u8,
        Ordering::Relaxed,
    );
    *sink() = Some(file::Rotating::stderr(path, MAX_FILE_BYTES, KEEP));
    log_panics();
    if let (Some(w), Some(None)) = (&wanted, level) {
        crate::log::warn!(
            "log",
            "{ENV}={w:?} is not a level (error, warn, info, debug); logging at info"
        );
    }
}

/// The log file was moved to `path` (its session was renamed): rotated there from now
/// on. The descriptor written to is the same file, moved.
pub fn moved(path: &Path) {
    if let Some(sink) = sink().as_mut() {
        sink.moved(path);
    }
}

fn sink() -> std::sync::MutexGuard<'static, Option<file::Rotating>> {
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A panic becomes an ERROR record (the thread, where, what: one line with a timestamp)
/// instead of the default hook's lines, which still follow when `RUST_BACKTRACE` asks for
/// a backtrace, or when the log is busy (a panic inside the log itself must not wait for
/// its own lock).
fn log_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        let line = Line::record(
            SystemTime::now(),
            Level::Error,
            &"panic",
            format_args!("thread '{name}' {info}"),
        );
        let logged = match SINK.try_lock() {
            Ok(mut sink) => write(&mut sink, &line),
            Err(std::sync::TryLockError::Poisoned(e)) => write(&mut e.into_inner(), &line),
            Err(std::sync::TryLockError::WouldBlock) => false,
        };
        if !logged || std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            default(info);
        }
    }));
}

/// Writes one record (the macros call this once `enabled` said yes).
#[doc(hidden)]
pub fn emit(level: Level, part: &dyn Display, args: fmt::Arguments<'_>) {
    let line = Line::record(SystemTime::now(), level, part, args);
    write(&mut sink(), &line);
}

/// Writes `line` to the log, or to standard error before there is one; false if it was
/// not written.
fn write(sink: &mut Option<file::Rotating>, line: &Line) -> bool {
    let Some(out) = sink.as_mut() else {
        // Not a server (a test, a command): standard error as it is.
        #[cfg(test)]
        eprint!("{}", String::from_utf8_lossy(line.bytes()));
        #[cfg(not(test))]
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.bytes());
        return true;
    };
    if out.write(line.bytes()).is_err() {
        LOST.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    let lost = LOST.swap(0, Ordering::Relaxed);
    if lost > 0 {
        let note = Line::record(
            SystemTime::now(),
            Level::Warn,
            &"log",
            format_args!("{lost} earlier lines could not be written"),
        );
        if out.write(note.bytes()).is_err() {
            LOST.fetch_add(lost + 1, Ordering::Relaxed);
        }
    }
    true
}

/// One record, formatted in place: at most [`MAX_LINE`] bytes, whatever it is given.
pub struct Line {
    buf: [u8; MAX_LINE],
    len: usize,
    cut: bool,
}

/// What a cut line ends with.
const CUT: &str = "…\n";

impl Line {
    fn empty() -> Line {
        Line {
            buf: [0; MAX_LINE],
            len: 0,
            cut: false,
        }
    }

    /// `part: message` at `level`, stamped with `when` in local time.
    pub fn record(
        when: SystemTime,
        level: Level,
        part: &dyn Display,
        args: fmt::Arguments<'_>,
    ) -> Line {
        let since = when.duration_since(UNIX_EPOCH).unwrap_or_default();
        let local = crate::sys::local_time(since.as_secs() as i64);
        Line::at(local, since.subsec_millis(), level, part, args)
    }

    /// The same at a given local time (`None`: the C library could not tell it).
    pub fn at(
        local: Option<LocalTime>,
        millis: u32,
        level: Level,
        part: &dyn Display,
        args: fmt::Arguments<'_>,
    ) -> Line {
        let mut line = Line::empty();
        match local {
            Some(t) => {
                let offset = t.utc_offset.unsigned_abs() / 60;
                let _ = write!(
                    line,
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{millis:03} {}{:02}{:02} ",
                    t.year,
                    t.month,
                    t.day,
                    t.hour,
                    t.minute,
                    t.second,
                    if t.utc_offset < 0 { '-' } else { '+' },
                    offset / 60,
                    offset % 60,
                );
            }
            None => line.push_raw("????-??-?? ??:??:??.??? +???? "),
        }
        let _ = write!(line, "{} {part}: {args}", level.word());
        line.finish();
        line
    }

    /// The record's bytes, newline included.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Room left for text, keeping what a cut line ends with.
    fn room(&self) -> usize {
        MAX_LINE - CUT.len() - self.len
    }

    fn push_raw(&mut self, s: &str) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
    }

    fn finish(&mut self) {
        if self.cut {
            self.push_raw("…");
        }
        self.push_raw("\n");
    }
}

impl fmt::Write for Line {
    /// Takes `s` up to the room left (then the line is cut and formatting stops), control
    /// characters escaped (`\n`, `\x1b`) so a record stays one line and a terminal
    /// showing the log is not driven by it.
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut esc = [0u8; 4];
            let piece: &str = match c {
                '\t' => "\t",
                '\n' => "\\n",
                '\r' => "\\r",
                // Every control character is below U+0100 (C0, DEL, C1).
                c if c.is_control() => {
                    let hex = b"0123456789abcdef";
                    let n = c as usize;
                    esc[..4].copy_from_slice(&[b'\\', b'x', hex[n >> 4 & 15], hex[n & 15]]);
                    std::str::from_utf8(&esc[..4]).unwrap_or("?")
                }
                c => c.encode_utf8(&mut esc),
            };
            if piece.len() > self.room() {
                self.cut = true;
                return Err(fmt::Error);
            }
            self.push_raw(piece);
        }
        Ok(())
    }
}

/// A record at `$level` (a [`Level`] variant's name), if that level is written.
macro_rules! at {
    ($level:ident, $part:expr, $($arg:tt)+) => {
        if $crate::log::enabled($crate::log::Level::$level) {
            $crate::log::emit($crate::log::Level::$level, &$part, format_args!($($arg)+))
        }
    };
}

/// Something failed that the user should know of (a save, a handoff, accepting clients).
macro_rules! log_error {
    ($part:expr, $($arg:tt)+) => { $crate::log::at!(Error, $part, $($arg)+) };
}

/// Something went wrong and the server carried on (a config problem, a slow reader).
macro_rules! log_warn {
    ($part:expr, $($arg:tt)+) => { $crate::log::at!(Warn, $part, $($arg)+) };
}

/// What the server did (started, restored, stopped, handed off).
macro_rules! log_info {
    ($part:expr, $($arg:tt)+) => { $crate::log::at!(Info, $part, $($arg)+) };
}

/// Details for finding a fault (`HERDR_LOG=debug`).
macro_rules! log_debug {
    ($part:expr, $($arg:tt)+) => { $crate::log::at!(Debug, $part, $($arg)+) };
}

// Named apart from the built-in `warn` attribute, and called by path (`log::warn!`).
pub(crate) use {at, log_debug as debug, log_error as error, log_info as info, log_warn as warn};

#[cfg(test)]
mod tests;
