//! End-to-end: splitting, focus, zoom, closing, tabs, workspaces, mouse and help — typed
//! into the real client and read back from the screen it draws.

mod support;

use support::{Env, Term, PROMPT};

fn ready(env: &Env) -> Term {
    let t = env.client(120, 36);
    t.wait_text(PROMPT);
    t
}

#[test]
fn mouse_click_focuses_a_pane_and_typing_goes_there() {
    let env = Env::new("click");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    let div = t.divider_col(10).expect("divider");
    // Click (SGR mouse, 1-based) in the left pane, then type.
    t.send(format!("\x1b[<0;{};10M\x1b[<0;{};10m", div - 5, div - 5).as_bytes());
    t.line("echo went-left");
    t.wait_text("went-left");
    let (_, col) = t.find("went-left").unwrap();
    assert!(col < div, "expected the left pane:\n{}", t.contents());
}

#[test]
fn focus_keys_move_between_stacked_panes() {
    let env = Env::new("focus");
    let mut t = ready(&env);
    t.prefix(b"\"");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"k");
    t.line("echo in-top");
    t.wait_text("in-top");
    let (row_top, _) = t.find("in-top").unwrap();
    t.prefix(b"j");
    t.line("echo in-bottom");
    t.wait_text("in-bottom");
    let (row_bottom, _) = t.find("in-bottom").unwrap();
    assert!(
        row_top < 18 && row_bottom > 18,
        "top {row_top}, bottom {row_bottom}:\n{}",
        t.contents()
    );
}

#[test]
fn zoom_and_unzoom() {
    let env = Env::new("zoom");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"z");
    t.wait("zoomed", |t| {
        t.contents().contains("(zoomed)") && t.divider_col(10).is_none()
    });
    t.line("echo cols=$(tput cols)");
    // Zoomed: the pane has the whole area right of the sidebar (120 - 24).
    t.wait_text("cols=96");
    t.prefix(b"z");
    t.wait("unzoomed", |t| {
        !t.contents().contains("(zoomed)") && t.divider_col(10).is_some()
    });
}

#[test]
fn close_by_key_and_by_program_exit() {
    let env = Env::new("close");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.prefix(b"x");
    t.wait_text("(y/n)");
    t.send(b"y");
    t.wait("one pane", |t| t.divider_col(10).is_none());
    t.prefix(b"\"");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    t.line("exit");
    t.wait("the exited pane is gone", |t| {
        t.count(PROMPT) == 1 && !t.contents().contains("─────")
    });
    // The remaining pane still works.
    t.line("echo still-here");
    t.wait_text("still-here");
}

#[test]
fn tabs_new_next_previous_and_by_number() {
    let env = Env::new("tabs");
    let mut t = ready(&env);
    t.line("echo first-tab");
    t.wait_text("first-tab");
    t.prefix(b"c");
    t.wait("second tab", |t| {
        t.contents().contains(" 2:") && !t.contents().contains("first-tab")
    });
    t.line("echo second-tab");
    t.wait_text("second-tab");
    t.prefix(b"1");
    t.wait("back on tab 1", |t| {
        t.contents().contains("first-tab") && !t.contents().contains("second-tab")
    });
    t.prefix(b"n");
    t.wait_text("second-tab");
    t.prefix(b"p");
    t.wait_text("first-tab");
    // Clicking the second tab in the tab bar (row 0) switches too.
    let (row, col) = t.find(" 2:").unwrap();
    assert_eq!(row, 0);
    t.send(format!("\x1b[<0;{};1M\x1b[<0;{};1m", col + 2, col + 2).as_bytes());
    t.wait_text("second-tab");
}

#[test]
fn workspaces_listed_in_sidebar_and_switched_by_click() {
    let env = Env::new("ws");
    let mut t = ready(&env);
    t.line("echo in-ws-one");
    t.wait_text("in-ws-one");
    t.prefix(b"W");
    t.wait("second workspace", |t| {
        t.contents().contains("2 ~") && !t.contents().contains("in-ws-one")
    });
    // The sidebar lists both workspaces; click the first one.
    let (row, _) = t.find("1 ~").expect("workspace 1 in the sidebar");
    t.send(format!("\x1b[<0;3;{}M\x1b[<0;3;{}m", row + 1, row + 1).as_bytes());
    t.wait_text("in-ws-one");
    t.prefix(b")");
    t.wait("workspace 2 again", |t| !t.contents().contains("in-ws-one"));
}

#[test]
fn resize_by_keys_and_by_dragging_the_divider() {
    let env = Env::new("resize");
    let mut t = ready(&env);
    t.prefix(b"%");
    t.wait("two prompts", |t| t.count(PROMPT) == 2);
    let before = t.divider_col(10).unwrap();
    t.prefix(b"H");
    t.wait("divider moved left", |t| {
        t.divider_col(10) == Some(before - 2)
    });
    // Drag the divider 10 columns to the right (SGR: press, drag with button 32, release).
    let from = before - 2 + 1;
    let to = from + 10;
    t.send(
        format!(
            "\x1b[<0;{from};10M\x1b[<32;{};10M\x1b[<32;{to};10M\x1b[<0;{to};10m",
            from + 5
        )
        .as_bytes(),
    );
    t.wait("divider dragged", |t| t.divider_col(10) == Some(to - 1));
    t.line("echo cols=$(tput cols)");
    // The focused right pane now spans from the divider to the edge.
    t.wait_text(&format!("cols={}", 120 - to));
}

#[test]
fn help_overlay_lists_live_bindings_and_closes_on_any_key() {
    let env = Env::new("help");
    let mut t = ready(&env);
    t.prefix(b"?");
    t.wait_text("herdr keys");
    assert!(t.contents().contains("split the pane side by side"));
    assert!(t.contents().contains("detach"));
    t.send(b"q");
    t.wait("help closed", |t| !t.contents().contains("herdr keys"));
    // The key that closed the help did not reach the shell.
    t.line("echo after-help");
    t.wait_text("after-help");
    assert!(!t.contents().contains("qecho"));
}

#[test]
fn prefix_twice_sends_a_literal_prefix() {
    let env = Env::new("literal");
    let mut t = ready(&env);
    t.line("cat -v");
    t.send(b"\x02\x02");
    t.send(b"\r");
    t.wait_text("^B");
    t.send(b"\x03");
}
