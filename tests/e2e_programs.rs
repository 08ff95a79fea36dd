//! End-to-end: real programs behave in a pane as in a plain terminal — vim, less, resize,
//! colours and wide characters, bracketed paste, OSC 52, scrollback, job control — and
//! several clients see the same session.

mod support;

use support::{Env, Term, PROMPT};

fn ready(env: &Env, cols: u16, rows: u16) -> Term {
    let t = env.client(cols, rows);
    t.wait_text(PROMPT);
    t
}

#[test]
fn vim_opens_edits_and_quits_cleanly() {
    let env = Env::new("vim");
    let mut t = ready(&env, 120, 36);
    t.line("vim -u NONE -N notes.txt");
    t.wait_text("notes.txt");
    t.send(b"ihello from vim\x1b");
    t.wait_text("hello from vim");
    t.send(b":wq\r");
    t.wait("back at the prompt", |t| {
        t.count(PROMPT) >= 2 && !t.contents().contains("~\n~")
    });
    let saved = std::fs::read_to_string(env.home().join("notes.txt")).unwrap();
    assert_eq!(saved, "hello from vim\n");
    // The alternate screen is gone: the shell's earlier line is back.
    assert!(t.contents().contains("vim -u NONE -N notes.txt"));
}

#[test]
fn the_shell_has_job_control_as_in_a_terminal() {
    // What only a session leader with the pane as its controlling terminal gets: Ctrl-Z
    // stops the job in front, `fg` gives it the terminal back, Ctrl-C ends it.
    let env = Env::new("jobs");
    let mut t = ready(&env, 120, 36);
    // The job says when it is in front (so the keys below reach it, not the shell), and
    // again when it is continued (after the shell gave it the terminal back); from a
    // file, so the words are not on screen before it says them.
    let job = "trap 'echo job-resumed' CONT\necho job-running\nwhile :; do sleep 1; done\n";
    std::fs::write(env.home().join("job.sh"), job).unwrap();
    t.line("sh job.sh");
    t.wait_text("job-running");
    t.send(b"\x1a");
    t.wait_text("Stopped");
    t.line("fg");
    t.wait_text("job-resumed");
    t.send(b"\x03");
    t.wait("the prompt after the job", |t| t.count(PROMPT) >= 3);
    t.line("echo job-status=$?");
    t.wait_text("job-status=130");
}

#[test]
fn less_uses_the_alternate_screen_and_restores_the_shell() {
    let env = Env::new("less");
    let mut t = ready(&env, 120, 36);
    t.line("seq -f 'n%g' 1 500 > nums.txt; echo ready-for-less");
    t.wait_text("ready-for-less");
    t.line("less nums.txt");
    t.wait("less shows the file", |t| {
        t.has_line("n1") && t.has_line("n2")
    });
    t.send(b"G");
    t.wait("the end of the file", |t| {
        t.has_line("n500") && !t.has_line("n1")
    });
    t.send(b"q");
    t.wait("shell screen back", |t| {
        t.contents().contains("ready-for-less") && !t.has_line("n500")
    });
}

#[test]
fn tput_follows_a_resize_of_the_client() {
    let env = Env::new("winch");
    let mut t = ready(&env, 100, 30);
    t.line("echo size=$(tput cols)x$(tput lines)");
    // 100 columns minus the 24-column sidebar; 30 rows minus tab bar and status line.
    t.wait_text("size=76x28");
    t.resize(140, 40);
    t.wait("redrawn at the new size", |t| {
        t.rows()[39].contains("? help")
    });
    t.line("echo size=$(tput cols)x$(tput lines)");
    t.wait_text("size=116x38");
}

#[test]
fn colours_and_wide_characters_render_like_a_terminal() {
    let env = Env::new("color");
    let mut t = ready(&env, 120, 36);
    t.line(
        r"printf '\e[31mred\e[0m \e[38;5;208morange\e[0m \e[38;2;10;20;30mrgb\e[0m 漢字🙂end\n'",
    );
    // The output row, not the echoed command line (which holds the same text).
    t.wait("the printed line", |t| {
        t.rows()
            .iter()
            .any(|r| r.contains("漢字🙂end") && !r.contains("printf"))
    });
    let (red, orange, rgb, wide) = t.with_screen(|s| {
        let (rows, cols) = s.size();
        let mut found = (None, None, None, None);
        for r in 0..rows.get() {
            let line = s.contents_between(r, 0, r, cols.get());
            if !line.contains("漢字🙂end") || line.contains("printf") {
                continue;
            }
            for c in 0..cols.get() {
                let cell = s.cell(r, c).unwrap();
                match cell.contents() {
                    "r" if found.0.is_none() => found.0 = Some(cell.fgcolor()),
                    "o" if found.1.is_none() => found.1 = Some(cell.fgcolor()),
                    "b" if found.2.is_none() => found.2 = Some(cell.fgcolor()),
                    "漢" => found.3 = Some(cell.is_wide()),
                    _ => {}
                }
            }
        }
        found
    });
    assert_eq!(red, Some(vt100::Color::Idx(1)));
    assert_eq!(orange, Some(vt100::Color::Idx(208)));
    assert_eq!(rgb, Some(vt100::Color::Rgb(10, 20, 30)));
    assert_eq!(wide, Some(true));
}

#[test]
fn bracketed_paste_reaches_programs_that_ask_for_it_only() {
    let env = Env::new("paste");
    let mut t = ready(&env, 120, 36);
    // Wait until cat runs: bash turns bracketed paste off only once the line is accepted.
    t.line("echo cat-started; cat -v");
    t.wait("cat running", |t| t.has_line("cat-started"));
    t.send(b"\x1b[200~plain-paste\x1b[201~\r");
    // Echoed by the terminal and printed back by cat: cat is running, so the C-c below
    // interrupts cat, not a shell still starting it.
    t.wait("cat printed the paste", |t| t.count("plain-paste") == 2);
    assert!(!t.contents().contains("[200~"), "{}", t.contents());
    t.send(b"\x03");
    // Type the next command only once the shell is back, or cat would swallow it.
    t.wait("the prompt again", |t| {
        t.pane_lines().iter().any(|l| l == PROMPT)
    });
    t.line(r"printf '\e[?2004h'; echo cat-again; cat -v");
    t.wait("cat running", |t| t.has_line("cat-again"));
    t.send(b"\x1b[200~marked-paste\x1b[201~\r");
    t.wait_text("^[[200~marked-paste^[[201~");
    t.send(b"\x03");
}

#[test]
fn osc52_clipboard_is_passed_to_the_client() {
    let env = Env::new("osc52");
    let mut t = ready(&env, 120, 36);
    t.line(r"printf '\e]52;c;aGVyZHI=\a'; echo sent-$((1+1))-clip");
    t.wait_text("sent-2-clip");
    let raw = t.raw_output();
    let needle = b"\x1b]52;c;aGVyZHI=";
    assert!(raw.windows(needle.len()).any(|w| w == needle));
}

#[test]
fn scroll_mode_shows_history_and_copies_lines() {
    let env = Env::new("scroll");
    let mut t = ready(&env, 120, 36);
    t.line("seq 1 300");
    t.wait("the last number", |t| t.has_line("300"));
    t.prefix(b"[");
    t.wait_text("SCROLL");
    t.send(b"\x1b[5~\x1b[5~"); // PageUp twice: 2 × 33 lines back
    t.wait("older lines", |t| {
        t.pane_lines().iter().any(|l| l.starts_with("220")) && !t.has_line("300")
    });
    // Copy the cursor's line: it goes to the clipboard as OSC 52.
    t.send(b"Vy");
    t.wait("copied", |t| t.contents().contains("copied 1 line"));
    assert!(t.raw_output().windows(7).any(|w| w == b"\x1b]52;c;"));
    t.wait("live view again", |t| {
        !t.contents().contains("SCROLL") && t.has_line("300")
    });
    // The mouse wheel scrolls too.
    t.send(b"\x1b[<64;60;10M\x1b[<64;60;10M\x1b[<64;60;10M");
    t.wait_text("SCROLL");
    t.send(b"q");
    t.wait("left scroll mode", |t| !t.contents().contains("SCROLL"));
}

#[test]
fn two_clients_see_the_same_panes_and_the_latest_sets_the_size() {
    let env = Env::new("two");
    let mut a = ready(&env, 100, 30);
    let mut b = env.client(120, 40);
    b.wait_text(PROMPT);
    a.line("echo typed-in-a");
    b.wait_text("typed-in-a");
    // A typed last, so the session has A's size; B sees it padded.
    a.line("echo cols=$(tput cols)");
    a.wait_text("cols=76");
    b.wait_text("cols=76");
    b.wait("B shows the padding", |t| t.contents().contains("·"));
    b.line("echo cols=$(tput cols)");
    b.wait_text("cols=96");
    a.wait_text("cols=96");
    b.prefix(b"d");
    b.wait_exit();
    a.line("echo a-still-attached");
    a.wait_text("a-still-attached");
}

#[test]
fn programs_that_ask_for_the_mouse_get_it_in_pane_coordinates() {
    let env = Env::new("mouse");
    let mut t = ready(&env, 120, 36);
    t.line(r"printf '\e[?1000h\e[?1006h'; echo mouse-on; cat -v");
    t.wait("cat running", |t| t.has_line("mouse-on"));
    // Click at screen column 31, row 11 (1-based): the pane starts at column 25, row 2.
    t.send(b"\x1b[<0;31;11M\x1b[<0;31;11m\r");
    t.wait_text("^[[<0;7;10M^[[<0;7;10m");
    t.send(b"\x03");
}

#[test]
fn a_flood_of_output_costs_a_bounded_number_of_frames() {
    let env = Env::new("flood");
    let mut t = ready(&env, 120, 36);
    let frames = |t: &Term| {
        t.raw_output()
            .windows(8)
            .filter(|w| w == b"\x1b[?2026h")
            .count()
    };
    let before = frames(&t);
    let start = std::time::Instant::now();
    // About 6.9 MB in a million lines; the shell prints far more often than we may draw.
    t.line("seq 1 1000000; echo flood-$((1+1))-done");
    t.wait_text("flood-2-done");
    let elapsed = start.elapsed().as_millis() as usize;
    let drawn = frames(&t) - before;
    // At most one frame per 8 ms interval (plus slack for the frames around the
    // command), and nowhere near one per line.
    assert!(drawn <= elapsed / 8 + 20, "{drawn} frames in {elapsed} ms");
    assert!(drawn < 10_000, "{drawn} frames for a million lines");
}

#[test]
fn a_stuck_client_does_not_slow_the_panes_or_other_clients() {
    use std::io::{BufRead, BufReader, Write};
    let env = Env::new("stuck");
    let mut t = ready(&env, 120, 36);
    // A client that says hello and then never reads a byte.
    let mut stuck = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    stuck
        .write_all(b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"x\",\"role\":\"client\",\"size\":[120,36]}\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(stuck.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("\"ok\":true"));
    t.line("seq 1 500000; echo big-$((2+3))-done");
    t.wait_text("big-5-done");
    t.line("echo responsive");
    t.wait_text("responsive");
    drop(stuck);
}
