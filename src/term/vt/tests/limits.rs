//! What output costs at its worst: strings of any length keep bounded memory, repeats
//! stop at the end of the line, and a character cut across reads keeps what follows it.

use crate::term::vt::Terminal;

/// Feeds `out` in slices of 64 KiB, as a pane's reads come.
fn feed_in_reads(t: &mut Terminal, out: &[u8]) {
    for (seq, slice) in (1..).zip(out.chunks(64 << 10)) {
        t.process(slice, seq);
        assert!(
            t.osc.capacity() <= crate::term::vt::OSC_MAX,
            "an OSC in progress holds at most its limit"
        );
    }
}

#[test]
fn an_unterminated_osc_keeps_bounded_memory_and_gives_it_back() {
    // (A 400 MB title took the server from 8 MB to 401 MB, and kept it.)
    let mut t = Terminal::new(4, 20);
    let mut out = b"\x1b]0;".to_vec();
    out.resize(8 << 20, b'a');
    feed_in_reads(&mut t, &out);
    feed_in_reads(&mut t, b"\x07after");
    assert_eq!(
        t.title(),
        "",
        "a title longer than the limit is dropped whole"
    );
    assert!(t.osc.capacity() <= 4 << 10, "the buffer is given back");
    assert_eq!(t.screen().line(0), "after");
    t.process(b"\x1b]2;short\x1b\\", 9);
    assert_eq!(t.title(), "short");
}

#[test]
fn a_clipboard_write_up_to_the_limit_is_kept_and_a_longer_one_dropped() {
    let mut t = Terminal::new(4, 20);
    let data = vec![b'A'; 1 << 20];
    let mut out = b"\x1b]52;c;".to_vec();
    out.extend_from_slice(&data);
    out.push(0x07);
    feed_in_reads(&mut t, &out);
    let fx = t.take_effects();
    assert_eq!(fx.clipboard.len(), 1);
    assert_eq!(fx.clipboard[0].len(), out.len());
    let mut longer = b"\x1b]52;c;".to_vec();
    longer.resize(crate::term::vt::OSC_MAX + 1, b'A');
    longer.extend_from_slice(b"\x1b\\");
    feed_in_reads(&mut t, &longer);
    assert!(
        t.take_effects().clipboard.is_empty(),
        "not cut short: dropped"
    );
}

#[test]
fn a_string_begun_inside_a_broken_sequence_is_bounded_too() {
    // The parser is in the middle of a CSI (and then an ESC) when the OSC begins; and
    // a string's ESC comes at the end of a read.
    let mut t = Terminal::new(4, 20);
    let mut out = b"\x1b[12;\x1b\x1b]2;".to_vec();
    out.resize(4 << 20, b'x');
    out.extend_from_slice(b"\x07\x1b]2;ok\x07");
    feed_in_reads(&mut t, &out);
    assert_eq!(t.title(), "ok");
    // Controls, DEL and bytes above 0x7f between the ESC and the `]` leave the parser
    // where the ESC put it.
    for between in [b"\x07".as_slice(), b"\x05\x7f", &[0x80, 0xff], b"\x1b"] {
        let mut out = b"\xe6\x1b".to_vec();
        out.extend_from_slice(between);
        out.extend_from_slice(b"]2;");
        out.resize(4 << 20, b'y');
        out.push(0x07);
        feed_in_reads(&mut t, &out);
        assert_eq!(t.title(), "ok", "after ESC {between:?}");
    }
    for (i, cut) in [b"\x1b".as_slice(), b"]2;held\x07"].iter().enumerate() {
        t.process(cut, 10 + i as u64);
    }
    assert_eq!(t.title(), "held");
}

#[test]
fn dcs_apc_pm_and_sos_strings_of_any_length_are_skipped() {
    let mut t = Terminal::new(4, 20);
    for start in [b"\x1bP1;2q".as_slice(), b"\x1b_G", b"\x1b^", b"\x1bX"] {
        let mut out = start.to_vec();
        out.resize(4 << 20, b'#');
        out.extend_from_slice(b"\x1b\\ok ");
        feed_in_reads(&mut t, &out);
    }
    assert_eq!(t.screen().line(0), "ok ok ok ok ");
}

#[test]
fn a_repeat_count_stops_at_the_end_of_the_line() {
    // (65535 repeats from 8 bytes: 64 KiB of them stalled the server for 1.9 s.)
    let mut t = Terminal::new(3, 10);
    t.process(b"abc\x1b[65535b\r\nx\x1b[2b", 1);
    assert_eq!(t.screen().line(0), "abcccccccc");
    assert_eq!(t.screen().line(1), "xxx");
    assert_eq!(t.screen().line(2), "");
    assert!(t.dropped().is_empty(), "nothing scrolled");
}

#[test]
fn a_character_cut_across_reads_keeps_what_follows_it() {
    // (vte, handed the rest of the character and more at once, swallowed the `e`.)
    let mut t = Terminal::new(2, 10);
    t.process(b"e\xcc", 1);
    t.process(b"\x81e\xcc\x81", 2);
    t.process(b"\r\n\xe2", 3);
    t.process(b"\x94\x80a", 4);
    assert_eq!(t.screen().line(0), "e\u{301}e\u{301}");
    assert_eq!(t.screen().line(1), "\u{2500}a");
}
