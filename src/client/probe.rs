//! Asking the user's terminal what it supports before attaching: the kitty keyboard
//! protocol (`CSI ? u`), modifyOtherKeys (XTQMODKEYS `CSI ? 4 m`), its name (XTVERSION
//! `CSI > q`) and its colours (OSC 10, 11, 12 and 4 for the 16 base colours), with DA1
//! (`CSI c`) last as the fence: every terminal answers it, in order, so once its answer
//! is in, whatever was not answered is not supported.
//!
//! Invariant: bounded in time ([`PROBE_TIMEOUT`] when the terminal answers nothing) and
//! memory (at most [`MAX_REPLIES`] bytes are looked at).

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::protocol::terminal::{is_color_spec, Colors, KeyProtocol, TerminalInfo};

/// How long a terminal that does not answer DA1 is waited for (a terminal at the far end
/// of a slow ssh answers within a round trip).
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);
/// Replies longer than this are not a terminal's answers.
const MAX_REPLIES: usize = 16 * 1024;
/// The kitty flags the client asks for: all of them (disambiguate, event types,
/// alternate keys, every key as an escape code, associated text), so the server can
/// encode every key the way any pane asks.
pub const KITTY_FLAGS: u8 = 31;

/// The queries, DA1 last. `colors`: also the colour queries (the Linux console would
/// print an OSC it does not know as text).
fn queries(colors: bool) -> Vec<u8> {
    let mut q = b"\x1b[?u\x1b[?4m\x1b[>q".to_vec();
    if colors {
        q.extend_from_slice(b"\x1b]10;?\x1b\\\x1b]11;?\x1b\\\x1b]12;?\x1b\\\x1b]4");
        for i in 0..16 {
            q.extend_from_slice(format!(";{i};?").as_bytes());
        }
        q.extend_from_slice(b"\x1b\\");
    }
    q.extend_from_slice(b"\x1b[c");
    q
}

/// What the terminal answered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Replies {
    /// Its kitty flags (it speaks the protocol).
    pub kitty: Option<u8>,
    /// Its modifyOtherKeys level (it knows the resource).
    pub modify_other_keys: Option<u8>,
    /// Its name and version (XTVERSION).
    pub version: Option<String>,
    pub colors: Colors,
    /// DA1 was answered: everything before it was too.
    pub done: bool,
}

impl Replies {
    /// The terminal info for the hello: the richest key reporting it has.
    pub fn info(&self) -> TerminalInfo {
        let xterm_like = self
            .version
            .as_deref()
            .is_some_and(|v| v.starts_with("XTerm(") || v.starts_with("tmux "));
        let (keys, kitty_flags) = if self.kitty.is_some() {
            (KeyProtocol::Kitty, KITTY_FLAGS)
        } else if self.modify_other_keys.is_some() || xterm_like {
            (KeyProtocol::ModifyOtherKeys, 0)
        } else {
            (KeyProtocol::Legacy, 0)
        };
        TerminalInfo {
            keys,
            kitty_flags,
            focus: true,
            colors: self.colors.clone().checked(),
            notify: None,
            modify_other_keys_before: self.modify_other_keys,
        }
    }
}

/// Reads the answers in `buf`; what is not an answer (keys typed meanwhile) is ignored.
pub fn parse(buf: &[u8]) -> Replies {
    let mut r = Replies::default();
    let mut i = 0;
    while let Some(at) = memchr::memchr(0x1b, &buf[i..]) {
        let s = &buf[i + at..];
        let (used, reply) = one(s);
        match reply {
            Some(Reply::Kitty(f)) => r.kitty = Some(f),
            Some(Reply::ModifyOtherKeys(n)) => r.modify_other_keys = Some(n),
            Some(Reply::Version(v)) => r.version = Some(v),
            Some(Reply::Color(which, spec)) => match which {
                10 => r.colors.foreground = Some(spec),
                11 => r.colors.background = Some(spec),
                12 => r.colors.cursor = Some(spec),
                _ => {}
            },
            Some(Reply::Palette(n, spec)) => r.colors.palette.push((n, spec)),
            Some(Reply::Da1) => {
                r.done = true;
                break;
            }
            None => {}
        }
        i += at + used.max(1);
    }
    r
}

enum Reply {
    Kitty(u8),
    ModifyOtherKeys(u8),
    Version(String),
    Color(u8, String),
    Palette(u8, String),
    Da1,
}

/// One sequence at the start of `s` (an ESC): how long it is and what it answers.
fn one(s: &[u8]) -> (usize, Option<Reply>) {
    match s.get(1) {
        Some(b'[') => {
            let end = s
                .iter()
                .skip(2)
                .position(|b| (0x40..=0x7e).contains(b))
                .map(|p| p + 2);
            let Some(end) = end else {
                return (s.len(), None);
            };
            let params = std::str::from_utf8(&s[2..end]).unwrap_or_default();
            let reply = match (s[end], params.as_bytes().first()) {
                (b'u', Some(b'?')) => params[1..].parse().ok().map(Reply::Kitty),
                (b'c', Some(b'?')) => Some(Reply::Da1),
                (b'm', Some(b'>')) => match params[1..].split_once(';') {
                    Some(("4", n)) => Some(Reply::ModifyOtherKeys(n.parse().unwrap_or(0))),
                    None if &params[1..] == "4" => Some(Reply::ModifyOtherKeys(0)),
                    _ => None,
                },
                _ => None,
            };
            (end + 1, reply)
        }
        Some(b']' | b'P') => {
            // Up to BEL or ST; any other control ends a broken one early.
            let mut end = None;
            for (k, &b) in s.iter().enumerate().skip(2) {
                if b == 0x07 {
                    end = Some((k, k + 1));
                    break;
                }
                if b == 0x1b && s.get(k + 1) == Some(&b'\\') {
                    end = Some((k, k + 2));
                    break;
                }
                if b < 0x20 {
                    return (k, None);
                }
            }
            let Some((body_end, used)) = end else {
                return (s.len(), None);
            };
            let body = String::from_utf8_lossy(&s[2..body_end]).into_owned();
            let reply = if s[1] == b'P' {
                body.strip_prefix(">|")
                    .map(|v| Reply::Version(v.to_string()))
            } else {
                osc_color(&body)
            };
            (used, reply)
        }
        _ => (1, None),
    }
}

fn osc_color(body: &str) -> Option<Reply> {
    let mut parts = body.split(';');
    let which: u8 = parts.next()?.parse().ok()?;
    match which {
        10..=12 => {
            let spec = parts.next()?;
            is_color_spec(spec).then(|| Reply::Color(which, spec.to_string()))
        }
        4 => {
            let n: u8 = parts.next()?.parse().ok()?;
            let spec = parts.next()?;
            is_color_spec(spec).then(|| Reply::Palette(n, spec.to_string()))
        }
        _ => None,
    }
}

/// Asks the terminal on stdin/stdout (raw mode for the while) and waits for its answers.
pub fn probe() -> TerminalInfo {
    let stdin = std::io::stdin();
    if !crate::sys::tty::is_tty(stdin.as_fd()) {
        return TerminalInfo::default();
    }
    // (A signal meanwhile must not leave the terminal in raw mode either.)
    super::terminal::install_hooks();
    if crossterm::terminal::enable_raw_mode().is_err() {
        return TerminalInfo::default();
    }
    let replies = ask(&stdin);
    let _ = crossterm::terminal::disable_raw_mode();
    let mut info = replies.info();
    let found = super::notify::detect(&|k| std::env::var(k).ok(), replies.version.as_deref());
    let setting = crate::config::current().notify_terminal;
    info.notify = Some(super::notify::choose(&setting, found));
    info
}

fn ask(stdin: &std::io::Stdin) -> Replies {
    use std::io::Write;
    let mut out = std::io::stdout();
    let console = std::env::var("TERM").is_ok_and(|t| t.starts_with("linux"));
    if out
        .write_all(&queries(!console))
        .and_then(|_| out.flush())
        .is_err()
    {
        return Replies::default();
    }
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || buf.len() > MAX_REPLIES {
            return parse(&buf);
        }
        match crate::sys::poll_readable(&[stdin.as_fd()], Some(left)) {
            Ok(r) if r.first().copied().unwrap_or(false) => {
                match nix::unistd::read(stdin.as_fd(), &mut chunk) {
                    Ok(0) | Err(_) => return parse(&buf),
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                let r = parse(&buf);
                if r.done {
                    return r;
                }
            }
            Ok(_) => {}
            Err(_) => return parse(&buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kitty_terminal_with_a_light_theme() {
        let answers = b"\x1b[?0u\x1b[>4;0m\x1bP>|kitty(0.35.2)\x1b\\\
            \x1b]10;rgb:0000/0000/0000\x1b\\\x1b]11;rgb:ffff/ffff/ffff\x07\
            \x1b]4;1;rgb:cccc/0000/0000\x1b\\x\x1b[?62;22c";
        let r = parse(answers);
        assert!(r.done);
        assert_eq!(r.kitty, Some(0));
        assert_eq!(r.version.as_deref(), Some("kitty(0.35.2)"));
        let info = r.info();
        assert_eq!(info.keys, KeyProtocol::Kitty);
        assert_eq!(info.kitty_flags, KITTY_FLAGS);
        assert_eq!(
            info.colors.background.as_deref(),
            Some("rgb:ffff/ffff/ffff")
        );
        assert_eq!(
            info.colors.foreground.as_deref(),
            Some("rgb:0000/0000/0000")
        );
        assert_eq!(info.colors.palette, [(1, "rgb:cccc/0000/0000".to_string())]);
    }

    #[test]
    fn other_terminals() {
        // Only DA1: legacy, nothing known.
        let r = parse(b"\x1b[?1;2c");
        assert!(r.done);
        assert_eq!(
            r.info(),
            TerminalInfo {
                focus: true,
                ..TerminalInfo::default()
            }
        );
        // xterm: modifyOtherKeys.
        let r = parse(b"\x1b[>4;0m\x1b[?64;1;2c");
        assert_eq!(r.info().keys, KeyProtocol::ModifyOtherKeys);
        let r = parse(b"\x1bP>|XTerm(390)\x1b\\\x1b[?64;1;2c");
        assert_eq!(r.info().keys, KeyProtocol::ModifyOtherKeys);
        // Not yet answered; garbage and a broken colour are ignored.
        let r = parse(b"\x1b[?0");
        assert!(!r.done && r.kitty.is_none());
        let r = parse(b"\x1b]11;rgb:zz/0/0\x07\x1b]11;\x1b[?u\x1b[?c");
        assert!(r.done);
        assert_eq!(r.colors, Colors::default());
        // The queries end with DA1.
        assert!(queries(true).ends_with(b"\x1b[c"));
        assert!(!queries(false).contains(&b']'));
    }
}
