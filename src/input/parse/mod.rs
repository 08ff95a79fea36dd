//! Tokenizer for the raw bytes typed in the user's terminal (as forwarded by the
//! client): keys, mouse reports, bracketed pastes, focus changes, other sequences.
//!
//! Invariants:
//! * Never panics and never buffers without bound: a pending sequence longer than
//!   64 bytes (4 KiB for OSC/DCS/APC strings) is emitted as [`Token::Unknown`]; a paste
//!   is emitted in pieces of at most about 1 MiB (`PASTE_PIECE`).
//! * Costs little per byte: printable text comes out as [`Token::Text`] runs (one token
//!   per run, not per character), a paste as a few big pieces.
//! * `Key`, `Text` and `Unknown` tokens carry exactly the bytes that produced them, so
//!   forwarding them in order reproduces the input byte for byte.
//! * Chunking does not matter, except right after an ESC byte or an `ESC ]`, `ESC P`,
//!   `ESC _` (see below), and for where a text run or a paste piece ends: a sequence,
//!   UTF-8 character, paste or its end marker split across `feed` calls is kept pending.
//!
//! ESC decisions (there is no timer in here; the caller owns timing):
//! * A lone ESC at the very end of a chunk is the Escape key, emitted at once, so Esc
//!   in vim never waits. The price: a sequence split right after its ESC decodes as
//!   Escape followed by plain characters (their bytes still reach the pane unchanged).
//! * `ESC ESC` is one token, M-Escape (raw: both bytes). If the second ESC starts a
//!   complete key sequence, the token is that key plus alt (`ESC ESC [ A` is M-Up, as
//!   rxvt sends it); if it starts a mouse report, paste or other non-key sequence, the
//!   first ESC is a plain Escape.
//! * `ESC [` and `ESC O` at the end of a chunk may still become sequences and stay
//!   pending. Call [`InputParser::flush`] when no input arrived for a short while
//!   (tmux's escape-time, ~10-50 ms) to resolve them as M-[ / M-O.
//! * `ESC ]` / `ESC P` / `ESC _` start a string only when the next byte looks like a
//!   real reply (digit for OSC; digit or `$+>=|!` for DCS; `G` for APC), otherwise
//!   (also at the end of a chunk) they are M-], M-P, M-_ at once. Any C0 control other
//!   than BEL or `ESC \` ends a string early, so a broken reply can never swallow the
//!   prefix key or Enter.
//!
//! Other decisions: 0x08 and 0x7f are both Backspace (a `C-h` binding therefore never
//! matches); X10 mouse reports are read as three raw bytes (UTF-8 mode 1005 coordinates
//! are not decoded: the client should enable SGR mode 1006); invalid UTF-8 bytes become
//! one-byte `Unknown` tokens. A paste in progress is not cut by `flush`.
//!
//! Files, each importing only those below it: `token` (the token types and the small
//! constructors both others use), `sequences` (the table: what each CSI/SS3 sequence
//! and string reply means), `parser` (the state machine over bytes, reading the table);
//! `tests` holds the table's cases, read through the parser.

mod parser;
mod sequences;
#[cfg(test)]
mod tests;
mod token;

pub use parser::{InputParser, PASTE_PIECE};
pub(super) use token::control_key;
#[cfg(test)]
pub(super) use token::split_text;
pub use token::{text_keys, Token, ESC_BYTE};
