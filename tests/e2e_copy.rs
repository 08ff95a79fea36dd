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
    let (row, col) = t.find("PROMPT> echo abc").unwrap();
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

#[test]
fn the_help_lists_copy_modes_keys_while_in_copy_mode() {
    let env = Env::new("copy-help");
    let mut t = env.client(100, 40);
    t.wait_text(PROMPT);
    // Outside copy mode: herdr's keys only.
    t.prefix(b"?");
    t.wait_text("herdr keys");
    assert!(!t.contents().contains("In copy mode:"));
    t.send(b"x");
    t.wait("the help to close", |t| {
        !t.contents().contains("herdr keys")
    });
    // In copy mode, its keys come first, then herdr's.
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.prefix(b"?");
    t.wait_text("In copy mode:");
    for line in [
        "search forward, backward",
        "select a rectangle",
        "Press C-b then:",
    ] {
        assert!(t.contents().contains(line), "{line}: {}", t.contents());
    }
    // Closing the help leaves copy mode as it was.
    t.send(b"x");
    t.wait("the help to close", |t| {
        !t.contents().contains("In copy mode:")
    });
    assert!(t.contents().contains("SCROLL"));
}

/// (row, column) on screen, in cells, of the first `text`.
fn at(t: &Term, text: &str) -> (u16, u16) {
    t.find(text)
        .unwrap_or_else(|| panic!("{text} on screen:\n{}", t.contents()))
}

/// SGR mouse bytes (`button` as xterm numbers it; 1-based cell).
fn mouse(button: u8, (row, col): (u16, u16), release: bool) -> Vec<u8> {
    let end = if release { 'm' } else { 'M' };
    format!("\x1b[<{button};{};{}{end}", col + 1, row + 1).into_bytes()
}

#[test]
fn the_mouse_selects_inside_its_pane_and_clicks_pick_words_and_lines() {
    let env = Env::new("copy-mouse");
    let mut t = env.client(120, 30);
    t.wait_text(PROMPT);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.line("echo right-side-text");
    t.wait_text("right-side-text");
    t.prefix(b"h");
    t.line("echo left-word-one two");
    t.wait("the left pane's line", |t| {
        t.count("left-word-one two") >= 2
    });
    // A drag from the start of the line to far into the right pane: only the left
    // pane's text is selected, and it is copied on release.
    let start = at(&t, "left-word-one two");
    let far = (start.0, 115);
    let mut bytes = mouse(0, start, false);
    bytes.extend(mouse(32, (start.0, start.1 + 5), false));
    bytes.extend(mouse(32, far, false));
    bytes.extend(mouse(0, far, true));
    t.send(&bytes);
    copied(&t, "left-word-one two");
    // A double click: the word; a triple click: the whole row.
    let word = at(&t, "two");
    let click = |n: usize, cell: (u16, u16)| -> Vec<u8> {
        let mut b = Vec::new();
        for _ in 0..n {
            b.extend(mouse(0, cell, false));
            b.extend(mouse(0, cell, true));
        }
        b
    };
    t.send(&click(2, word));
    copied(&t, "two");
    // (On the next cell: clicks elsewhere start counting again.)
    t.send(&click(3, (word.0, word.1 + 1)));
    copied(&t, &format!("{PROMPT} echo left-word-one two"));
}

#[test]
fn shift_selects_over_a_program_that_took_the_mouse() {
    let env = Env::new("copy-shift");
    let mut t = env.client(120, 30);
    t.wait_text(PROMPT);
    // The shell leaves the mouse reporting on: clicks would go to the program.
    t.line("printf '\\e[?1000h'; echo taken-$((2*3))");
    t.wait_text("taken-6");
    let (row, col) = at(&t, "taken-6");
    let row = t
        .rows()
        .iter()
        .enumerate()
        .skip(usize::from(row) + 1)
        .find(|(_, l)| l.contains("taken-6"))
        .map_or(row, |(r, _)| r as u16);
    // Shift (4) with the press, the drag (32 + 4) and the release.
    let mut bytes = mouse(4, (row, col), false);
    bytes.extend(mouse(36, (row, col + 6), false));
    bytes.extend(mouse(4, (row, col + 6), true));
    t.send(&bytes);
    copied(&t, "taken-6");
}
