//! What a notification says and the bytes that make a terminal show it.
//!
//! Invariant: text that reaches a terminal holds no control character (C0, DEL, C1) and
//! no `;` (a field separator of OSC 777), never starts with a digit (ConEmu reads
//! `OSC 9 ; <digits> ;` as a command of its own), and is at most [`MAX_TEXT`] bytes.

use crate::protocol::terminal::Notify;

/// The longest notification text, in bytes (desktop notifications show a line or two).
pub const MAX_TEXT: usize = 200;
/// The title of an OSC 777 notification.
const TITLE: &str = "herdr";

/// What the user reads: "claude needs you — p3 (tab 2)", "codex done — p5".
pub fn message(agent: &str, state: &str, pane: &str, tab: Option<usize>) -> String {
    let what = match state {
        "blocked" => "needs you",
        other => other,
    };
    let place = match tab {
        Some(n) => format!("{pane} (tab {n})"),
        None => pane.to_string(),
    };
    sanitize(&format!("{agent} {what} — {place}"))
}

/// `text` made safe to put inside an OSC: controls become spaces (runs of spaces one),
/// `;` a comma, a leading digit is preceded by a space, and it is cut to [`MAX_TEXT`]
/// bytes on a character boundary.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT));
    for c in text.chars() {
        let c = match c {
            ';' => ',',
            c if c.is_control() => ' ',
            c => c,
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        if out.is_empty() && c.is_ascii_digit() {
            out.push(' ');
        }
        if out.len() + c.len_utf8() > MAX_TEXT {
            break;
        }
        out.push(c);
    }
    out.trim_end().to_string()
}

/// The bytes that show `text` (already sanitized) in a terminal of this style; nothing
/// for `Off`.
pub fn escape(style: Notify, text: &str) -> Vec<u8> {
    match style {
        Notify::Osc9 => format!("\x1b]9;{text}\x1b\\").into_bytes(),
        Notify::Osc777 => format!("\x1b]777;notify;{TITLE};{text}\x1b\\").into_bytes(),
        Notify::Bell | Notify::Unknown => b"\x07".to_vec(),
        Notify::Off => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_who_what_and_where() {
        assert_eq!(
            message("claude", "blocked", "p3", Some(2)),
            "claude needs you — p3 (tab 2)"
        );
        assert_eq!(message("codex", "done", "p5", None), "codex done — p5");
    }

    #[test]
    fn sanitized_text_is_safe_inside_an_osc() {
        assert_eq!(sanitize("a\x1b]0;x\x07b\u{9b}c\x7fd"), "a ]0,x b c d");
        assert_eq!(sanitize("  two\n\nlines  "), "two lines");
        assert_eq!(sanitize("9;2;boom"), " 9,2,boom");
        let long = "é".repeat(300);
        let cut = sanitize(&long);
        assert!(
            cut.len() <= MAX_TEXT && cut.len() >= MAX_TEXT - 1,
            "{}",
            cut.len()
        );
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(sanitize("\x00\x01"), "");
    }

    #[test]
    fn each_style_has_its_bytes() {
        assert_eq!(escape(Notify::Osc9, "hi"), b"\x1b]9;hi\x1b\\");
        assert_eq!(
            escape(Notify::Osc777, "hi"),
            b"\x1b]777;notify;herdr;hi\x1b\\"
        );
        assert_eq!(escape(Notify::Bell, "hi"), b"\x07");
        assert_eq!(escape(Notify::Unknown, "hi"), b"\x07");
        assert!(escape(Notify::Off, "hi").is_empty());
    }
}
