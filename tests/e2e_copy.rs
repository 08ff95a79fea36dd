//! End-to-end: copy mode as tmux's vi copy mode — it starts at the program's cursor,
//! searches the whole history (`/`, `?`, `n`, smart case), selects by character, line and
//! rectangle, and copies to the user's clipboard (OSC 52, as the test's terminal sees it)
//! and to the session's buffer (prefix `]`, `herdr paste`).

mod support;

use support::{ok, Env, Term, PROMPT};

/// A shell with 400 numbered lines and one line to find far up in its history.
fn with_history(env: &Env) -> Term {
    let mut t = env.client(100, 30);
    t.wait_text(PROMPT);
    t.line(
        "for i in $(seq 1 200); do echo \"line-$i alpha beta\"; done; echo 'the NEEDLE is here'; \
         for i in $(seq 201 400); do echo \"line-$i alpha beta\"; done",
    );
    t.wait("the last line", |t| t.has_line("line-400 alpha beta"));
    t
}

/// What the clipboard got last: the text of the last OSC 52 the client wrote.
fn clipboard(t: &Term) -> Option<String> {
    let raw = t.raw_output();
    let start = raw.windows(7).rposition(|w| w == b"\x1b]52;c;")? + 7;
    let end = start + raw[start..].iter().position(|b| *b == 0x07)?;
    let text = decode_base64(&raw[start..end]);
    Some(String::from_utf8_lossy(&text).into_owned())
}

fn decode_base64(s: &[u8]) -> Vec<u8> {
    const AB: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let vals: Vec<u32> = s
        .iter()
        .filter(|b| **b != b'=')
        .filter_map(|b| AB.iter().position(|a| a == b).map(|p| p as u32))
        .collect();
    let mut out = Vec::new();
    for chunk in vals.chunks(4) {
        let n = chunk.iter().fold(0u32, |acc, v| acc << 6 | v) << (6 * (4 - chunk.len()));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

fn copied(t: &Term, want: &str) {
    t.wait(&format!("{want:?} on the clipboard"), |t| {
        clipboard(t).as_deref() == Some(want)
    });
}

#[test]
fn search_finds_a_line_far_up_and_each_selection_copies_its_text() {
    let env = Env::new("copy-search");
    let mut t = with_history(&env);
    t.prefix(b"[");
    t.wait_text("SCROLL");
    // Searching backwards, in lower case: smart case finds NEEDLE 200 lines up.
    t.send(b"?needle");
    t.wait_text("?needle");
    t.send(b"\r");
    t.wait("the match in view", |t| {
        t.contents().contains("the NEEDLE is here")
    });
    assert!(
        t.contents().contains("SCROLL"),
        "Enter ran the search, it copied nothing"
    );
    assert!(clipboard(&t).is_none());
    // v, e: the word under the cursor.
    t.send(b"vey");
    copied(&t, "NEEDLE");
    t.wait("copy mode left", |t| !t.contents().contains("SCROLL"));
    // Prefix ] pastes it at the prompt.
    t.prefix(b"]");
    t.wait("pasted at the prompt", |t| {
        t.rows()
            .iter()
            .any(|r| r.trim_end().ends_with("PROMPT> NEEDLE"))
    });
    t.send(b"\x15"); // ctrl+u: clear the line
                     // V and j: two whole lines, found from the top with /.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"g/line-5 alpha\r");
    t.wait("line-5 in view", |t| {
        t.contents().contains("line-5 alpha beta")
    });
    t.send(b"Vjy");
    copied(&t, "line-5 alpha beta\nline-6 alpha beta");
    // ctrl+v: a rectangle, the first word of three lines.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"g/line-7 \r0\x16jjey");
    copied(&t, "line\nline\nline");
    // n goes to the next match, wrapping.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"g/NEEDLE\rnv$y");
    copied(&t, "NEEDLE is here");
    // herdr paste puts the buffer into a pane too.
    ok(env.herdr(&["paste"]));
    t.wait("pasted by the CLI", |t| {
        t.rows()
            .iter()
            .any(|r| r.trim_end().ends_with("NEEDLE is here") && r.contains(PROMPT))
    });
}

#[test]
fn copy_mode_starts_at_the_programs_cursor_and_enter_alone_copies_nothing() {
    let env = Env::new("copy-start");
    let mut t = with_history(&env);
    t.send(b"echo abc");
    t.wait_text("PROMPT> echo abc");
    t.prefix(b"[");
    t.wait_text("SCROLL");
    // The cursor cell is highlighted where the shell's cursor was: after "echo abc".
    let (row, col) = t
        .rows()
        .iter()
        .enumerate()
        .find_map(|(r, l)| {
            let at = l.find("PROMPT> echo abc")?;
            Some((r as u16, l[..at].chars().count() as u16))
        })
        .unwrap();
    let at = col + "PROMPT> echo abc".len() as u16;
    t.wait("the copy cursor at the prompt", |t| {
        t.with_screen(|s| {
            s.cell(row, at)
                .is_some_and(|c| c.bgcolor() == vt100::Color::Idx(6))
        })
    });
    // Back one word and copy it: "abc".
    t.send(b"bvey");
    copied(&t, "abc");
    // Enter with nothing selected says so and stays.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"\r");
    t.wait_text("nothing selected");
    assert!(t.contents().contains("SCROLL"));
    t.send(b"q");
    t.wait("left", |t| !t.contents().contains("SCROLL"));
}
