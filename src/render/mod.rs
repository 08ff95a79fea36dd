//! Rendering, pure: `view` is what a frame is made from and where things are on screen;
//! `chrome` draws the sidebar, tab bar, status line and help, `pane` a pane's screen, and
//! `ui` composes them into a client's [`diff::Frame`]; `diff` turns two frames into the
//! terminal bytes between them. Imports run one way: ui → chrome, pane → view; nothing
//! here imports the server or the PTY layer.

mod chrome;
pub mod diff;
pub mod pane;
pub mod ui;
pub mod view;

/// Standard base64 (for OSC 52 clipboard payloads).
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, enc) in cases {
            assert_eq!(super::base64(plain.as_bytes()), enc);
        }
    }
}
