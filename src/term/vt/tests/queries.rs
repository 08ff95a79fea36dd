//! What programs ask their terminal at start: modes (DECRQM), the terminal's name
//! (XTVERSION), its attributes (DA1, DA2) and status and cursor reports (DSR).

use crate::term::vt::Terminal;

/// The terminal's answer to `query`, asked after `before`.
fn answer(before: &str, query: &str) -> String {
    let mut t = Terminal::new(5, 10);
    t.process(before.as_bytes(), 1);
    t.take_effects();
    t.process(query.as_bytes(), 2);
    String::from_utf8_lossy(&t.take_effects().responses).into_owned()
}

#[test]
fn decrqm_reports_each_private_mode_set_and_reset() {
    let modes: &[(u16, &str)] = &[
        (1, "\x1b[?1h"),
        (6, "\x1b[?6h"),
        (9, "\x1b[?9h"),
        (47, "\x1b[?47h"),
        (1049, "\x1b[?1049h"),
        (1000, "\x1b[?1000h"),
        (1002, "\x1b[?1002h"),
        (1003, "\x1b[?1003h"),
        (1005, "\x1b[?1005h"),
        (1006, "\x1b[?1006h"),
        (2004, "\x1b[?2004h"),
        (2026, "\x1b[?2026h"),
    ];
    for (mode, set) in modes {
        let query = format!("\x1b[?{mode}$p");
        assert_eq!(
            answer("", &query),
            format!("\x1b[?{mode};2$y"),
            "{mode} reset"
        );
        assert_eq!(
            answer(set, &query),
            format!("\x1b[?{mode};1$y"),
            "{mode} set"
        );
        let reset = set.replace('h', "l");
        assert_eq!(
            answer(&format!("{set}{reset}"), &query),
            format!("\x1b[?{mode};2$y"),
            "{mode} set and reset"
        );
    }
    // The cursor is shown unless hidden.
    assert_eq!(answer("", "\x1b[?25$p"), "\x1b[?25;1$y");
    assert_eq!(answer("\x1b[?25l", "\x1b[?25$p"), "\x1b[?25;2$y");
    // Autowrap and grapheme clustering cannot be turned off.
    assert_eq!(answer("\x1b[?7l", "\x1b[?7$p"), "\x1b[?7;3$y");
    assert_eq!(answer("\x1b[?2027l", "\x1b[?2027$p"), "\x1b[?2027;3$y");
    // Unknown modes.
    assert_eq!(answer("", "\x1b[?12345$p"), "\x1b[?12345;0$y");
    assert_eq!(answer("", "\x1b[?1047$p"), "\x1b[?1047;0$y");
}

#[test]
fn decrqm_reports_ansi_modes() {
    assert_eq!(answer("\x1b[4h", "\x1b[4$p"), "\x1b[4;4$y");
    assert_eq!(answer("", "\x1b[20$p"), "\x1b[20;4$y");
    assert_eq!(answer("", "\x1b[3$p"), "\x1b[3;0$y");
}

#[test]
fn xtversion_names_herdr_and_its_version() {
    let want = format!("\x1bP>|herdr {}\x1b\\", env!("CARGO_PKG_VERSION"));
    assert_eq!(answer("", "\x1b[>q"), want);
    assert_eq!(answer("", "\x1b[>0q"), want);
    assert_eq!(answer("", "\x1b[>1q"), "");
}

#[test]
fn device_attributes_and_status() {
    assert_eq!(answer("", "\x1b[c"), "\x1b[?62;22c");
    assert_eq!(answer("", "\x1b[0c"), "\x1b[?62;22c");
    assert_eq!(answer("", "\x1b[>c"), "\x1b[>1;10;0c");
    assert_eq!(answer("", "\x1b[5n"), "\x1b[0n");
}

#[test]
fn cursor_reports_count_from_the_origin_and_stay_on_the_screen() {
    assert_eq!(answer("ab\r\ncd", "\x1b[6n"), "\x1b[2;3R");
    assert_eq!(answer("ab\r\ncd", "\x1b[?6n"), "\x1b[?2;3R");
    // In origin mode, rows count from the top of the scroll region.
    assert_eq!(answer("\x1b[2;4r\x1b[?6h\x1b[2;5H", "\x1b[6n"), "\x1b[2;5R");
    // Waiting to wrap after the last column: in the last column.
    assert_eq!(answer("0123456789", "\x1b[6n"), "\x1b[1;10R");
}
