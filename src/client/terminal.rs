//! The user's terminal while a client is attached: raw mode, the alternate screen, mouse
//! and paste reporting, focus reports, and the richest key reporting the terminal has
//! (kitty flags pushed on the alternate screen's own stack, or modifyOtherKeys 2) once
//! the server says it reads them. Everything is put back on every way out: the end of
//! the attachment, a lost link, a panic (a hook), SIGTERM, SIGHUP, SIGINT, SIGQUIT.
//!
//! Invariant: while [`Screen`] lives, `RESTORE` holds the bytes that undo what it turned
//! on, so a panic or a signal leaves the terminal as it was, not just out of raw mode.

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Mutex;

use crossterm::event::{
    DisableFocusChange, EnableFocusChange, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::Command;

use crate::protocol::terminal::{KeyProtocol, TerminalInfo};

/// The session's modes: alternate screen, mouse reporting (button events + drags, SGR
/// coordinates), bracketed paste.
const ENTER: &[u8] = b"\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[H\x1b[2J";
/// …and everything back off on the way out, including modes a pane may have mirrored.
const LEAVE: &[u8] =
    b"\x1b[?2026l\x1b[0m\x1b[?1006l\x1b[?1002l\x1b[?1000l\x1b[?2004l\x1b[?1l\x1b>\x1b[?25h\x1b[?1049l";

/// What a panic or a signal writes before the process ends (empty: nothing to undo).
static RESTORE: Mutex<Vec<u8>> = Mutex::new(Vec::new());

fn restore_bytes() -> std::sync::MutexGuard<'static, Vec<u8>> {
    RESTORE.lock().unwrap_or_else(|e| e.into_inner())
}

fn ansi(cmd: impl Command) -> String {
    let mut s = String::new();
    let _ = cmd.write_ansi(&mut s);
    s
}

/// The bytes that turn on a terminal's key reporting and focus reports.
pub fn keys_on(info: &TerminalInfo) -> Vec<u8> {
    let mut s = String::new();
    match info.keys {
        KeyProtocol::Kitty => s.push_str(&ansi(PushKeyboardEnhancementFlags(
            KeyboardEnhancementFlags::from_bits_retain(info.kitty_flags),
        ))),
        KeyProtocol::ModifyOtherKeys => s.push_str("\x1b[>4;2m"),
        KeyProtocol::Legacy => {}
    }
    if info.focus {
        s.push_str(&ansi(EnableFocusChange));
    }
    s.into_bytes()
}

/// The bytes that undo [`keys_on`].
pub fn keys_off(info: &TerminalInfo) -> Vec<u8> {
    let mut s = String::new();
    if info.focus {
        s.push_str(&ansi(DisableFocusChange));
    }
    match info.keys {
        KeyProtocol::Kitty => s.push_str(&ansi(PopKeyboardEnhancementFlags)),
        // Back to the level the terminal had, or to its own default.
        KeyProtocol::ModifyOtherKeys => match info.modify_other_keys_before {
            Some(n) => s.push_str(&format!("\x1b[>4;{n}m")),
            None => s.push_str("\x1b[>4m"),
        },
        KeyProtocol::Legacy => {}
    }
    s.into_bytes()
}

/// Raw mode, put back on drop.
pub struct Raw(());

impl Raw {
    pub fn enter() -> std::io::Result<Raw> {
        crossterm::terminal::enable_raw_mode()?;
        Ok(Raw(()))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// The session's screen on the user's terminal.
pub struct Screen {
    info: TerminalInfo,
    /// Extended keys are on (the server of the current link reads them).
    keys: bool,
}

impl Screen {
    pub fn enter(info: &TerminalInfo) -> std::io::Result<Screen> {
        install_hooks();
        let screen = Screen {
            info: info.clone(),
            keys: false,
        };
        *restore_bytes() = LEAVE.to_vec();
        write(ENTER)?;
        Ok(screen)
    }

    /// Key reporting on or off, as the server of the current link can read it (a server
    /// from before extended keys forwards the bytes as they come).
    pub fn set_keys(&mut self, on: bool) {
        if on == self.keys {
            return;
        }
        self.keys = on;
        let _ = write(&if on {
            keys_on(&self.info)
        } else {
            keys_off(&self.info)
        });
        let mut undo = if on { keys_off(&self.info) } else { Vec::new() };
        undo.extend_from_slice(LEAVE);
        *restore_bytes() = undo;
    }

    /// Everything back as it was.
    pub fn leave(mut self) {
        self.set_keys(false);
        let _ = write(LEAVE);
        restore_bytes().clear();
    }
}

fn write(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout();
    out.write_all(bytes)?;
    out.flush()
}

/// Undoes the screen's modes and raw mode: what a panic or a signal does on its way.
fn restore_now() {
    let bytes = std::mem::take(&mut *restore_bytes());
    if !bytes.is_empty() {
        // Not through `stdout()`: its lock may be held by the thread that panicked.
        let out = std::io::stdout();
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            match nix::unistd::write(out.as_fd(), rest) {
                Ok(0) | Err(_) => break,
                Ok(n) => rest = &rest[n..],
            }
        }
    }
    let _ = crossterm::terminal::disable_raw_mode();
}

/// A panic hook and a thread for the signals that end a client, both restoring the
/// terminal first (raw mode at least). Installed once per process.
pub(crate) fn install_hooks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_now();
            previous(info);
        }));
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        if let Ok(mut signals) =
            signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])
        {
            let _ = std::thread::Builder::new()
                .name("herdr-signals".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        restore_now();
                        std::process::exit(128 + sig);
                    }
                });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_turned_on_is_turned_off() {
        let kitty = TerminalInfo {
            keys: KeyProtocol::Kitty,
            kitty_flags: 31,
            focus: true,
            ..TerminalInfo::default()
        };
        assert_eq!(keys_on(&kitty), b"\x1b[>31u\x1b[?1004h");
        assert_eq!(keys_off(&kitty), b"\x1b[?1004l\x1b[<1u");
        let mok = TerminalInfo {
            keys: KeyProtocol::ModifyOtherKeys,
            focus: true,
            ..TerminalInfo::default()
        };
        assert_eq!(keys_on(&mok), b"\x1b[>4;2m\x1b[?1004h");
        assert_eq!(keys_off(&mok), b"\x1b[?1004l\x1b[>4m");
        let was_one = TerminalInfo {
            modify_other_keys_before: Some(1),
            ..mok
        };
        assert_eq!(keys_off(&was_one), b"\x1b[?1004l\x1b[>4;1m");
        assert!(keys_on(&TerminalInfo::default()).is_empty());
    }
}
