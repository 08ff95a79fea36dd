use super::*;

const RTT: Option<Duration> = Some(Duration::from_millis(150));

/// The user's terminal and the host, with a predictor between them as the client has.
struct Link {
    p: Predictor,
    terminal: vt::Terminal,
    seq: u64,
    t0: Instant,
}

impl Link {
    /// A host screen with a shell prompt `$ ` on its first row.
    fn new(policy: Policy) -> Link {
        let mut l = Link {
            p: Predictor::new(policy, (20, 4)),
            terminal: vt::Terminal::new(4, 20),
            seq: 0,
            t0: Instant::now(),
        };
        l.host(b"\x1b[H\x1b[2J$ ", 0);
        l
    }

    fn show(&mut self, bytes: &[u8]) {
        self.seq += 1;
        self.terminal.process(bytes, self.seq);
    }

    /// The host draws `bytes`, `ms` after the start.
    fn host(&mut self, bytes: &[u8], ms: u64) {
        let before = self.p.before_output();
        self.show(&before);
        self.show(bytes);
        let after = self
            .p
            .after_output(bytes, self.t0 + Duration::from_millis(ms), RTT);
        self.show(&after);
    }

    fn type_key(&mut self, key: Typed, ms: u64) {
        let out = self.p.typed(key, self.t0 + Duration::from_millis(ms), RTT);
        self.show(&out);
    }

    /// The first row as the user sees it, and which of its cells are underlined.
    fn row(&self) -> (String, String) {
        let screen = self.terminal.screen();
        let text = (0..20)
            .map(|c| {
                let cell = screen.cell(0, c).unwrap();
                if cell.has_contents() {
                    cell.contents().to_string()
                } else {
                    " ".into()
                }
            })
            .collect::<String>();
        let marks = (0..20)
            .map(|c| match screen.cell(0, c).unwrap().underline() {
                true => '^',
                false => ' ',
            })
            .collect::<String>();
        (text.trim_end().into(), marks.trim_end().into())
    }

    fn cursor(&self) -> (u16, u16) {
        self.terminal.screen().cursor_position()
    }
}

#[test]
fn typing_is_shown_once_an_echo_was_seen_and_the_echo_replaces_it() {
    let mut l = Link::new(Policy::Auto);
    // Nothing shown before the host has echoed anything.
    l.type_key(Typed::Char('l'), 0);
    assert_eq!(l.row(), ("$".into(), "".into()));
    l.host(b"l", 150);
    assert_eq!(l.row(), ("$ l".into(), "".into()));
    // Now each key shows at once, underlined, the cursor after it.
    l.type_key(Typed::Char('s'), 200);
    l.type_key(Typed::Char(' '), 210);
    l.type_key(Typed::Char('-'), 220);
    assert_eq!(l.row(), ("$ ls -".into(), "   ^^^".into()));
    assert_eq!(l.cursor(), (0, 6));
    // The host's echo of the first two: those lose their mark.
    l.host(b"s ", 350);
    assert_eq!(l.row(), ("$ ls -".into(), "     ^".into()));
    assert_eq!(l.cursor(), (0, 6));
    l.host(b"-", 370);
    assert_eq!(l.row(), ("$ ls -".into(), "".into()));
    assert!(l.p.guesses.is_empty());
}

#[test]
fn a_password_prompt_never_shows_a_character() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('x'), 0);
    l.host(b"x", 100);
    // A command typed fast and Enter, before any echo: the run ends and trust with it;
    // the echo of the command that comes later does not bring it back; the prompt does
    // not echo.
    l.type_key(Typed::Char('r'), 150);
    l.type_key(Typed::Other, 200);
    l.host(b"r\r\nPassword: ", 300);
    for (i, c) in "secret".chars().enumerate() {
        l.type_key(Typed::Char(c), 400 + i as u64 * 50);
        let screen = l.terminal.screen();
        let second: String = (0..20)
            .map(|col| screen.cell(1, col).unwrap().contents().to_string())
            .collect();
        assert_eq!(
            second.trim_end(),
            "Password:",
            "nothing shown after the prompt"
        );
    }
    let out = l.p.tick(l.t0 + Duration::from_secs(5), RTT);
    assert!(out.is_empty(), "nothing to take back: nothing was shown");
    assert!(l.p.guesses.is_empty());
}

#[test]
fn a_contradicted_guess_is_taken_back_with_the_rest_of_its_run() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('a'), 0);
    l.host(b"a", 100);
    l.type_key(Typed::Char('b'), 200);
    l.type_key(Typed::Char('c'), 210);
    assert_eq!(l.row(), ("$ abc".into(), "   ^^".into()));
    // The host draws something else where `b` was guessed (a program that upper-cases).
    l.host(b"B", 350);
    assert_eq!(l.row(), ("$ aB".into(), "".into()));
    assert_eq!(l.cursor(), (0, 4), "where the host left it");
    // And nothing is shown until an echo is seen again.
    l.type_key(Typed::Char('d'), 400);
    assert_eq!(l.row(), ("$ aB".into(), "".into()));
}

#[test]
fn a_guess_never_echoed_goes_after_a_few_round_trips_and_backspace_takes_one_back() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('a'), 0);
    l.host(b"a", 100);
    l.type_key(Typed::Char('b'), 200);
    l.type_key(Typed::Char('c'), 210);
    l.type_key(Typed::Backspace, 220);
    assert_eq!(l.row(), ("$ ab".into(), "   ^".into()));
    assert_eq!(l.cursor(), (0, 4));
    assert_eq!(
        l.p.deadline(RTT),
        Some(l.t0 + Duration::from_millis(200) + EXPIRE_MIN)
    );
    let out = l.p.tick(l.t0 + Duration::from_millis(1000), RTT);
    l.show(&out);
    assert_eq!(l.row(), ("$ ab".into(), "   ^".into()), "not yet");
    let out = l.p.tick(l.t0 + Duration::from_secs(3), RTT);
    l.show(&out);
    assert_eq!(l.row(), ("$ a".into(), "".into()));
    // The cursor goes back where the host has it before its next bytes.
    l.host(b"!", 3100);
    assert_eq!(l.row(), ("$ a!".into(), "".into()));
}

#[test]
fn guesses_only_go_into_blank_cells_and_only_on_a_slow_link_for_auto() {
    let mut l = Link::new(Policy::Auto);
    l.type_key(Typed::Char('a'), 0);
    l.host(b"a", 100);
    // A fast link: nothing shown.
    let out =
        l.p.typed(Typed::Char('b'), l.t0, Some(Duration::from_millis(5)));
    assert!(out.is_empty());
    l.host(b"b", 120);
    // Text already right of the cursor (editing inside a line): no guess.
    l.host(b"xyz\x1b[3D", 130);
    l.type_key(Typed::Char('q'), 140);
    assert_eq!(l.row(), ("$ abxyz".into(), "".into()));
    // Never: nothing ever.
    let mut n = Link::new(Policy::Never);
    n.type_key(Typed::Char('a'), 0);
    n.host(b"a", 100);
    n.type_key(Typed::Char('b'), 200);
    assert_eq!(n.row(), ("$ a".into(), "".into()));
    // (A key that could not be guessed ends the trust too, until an echo.)
    l.host(b"\x1b[C\x1b[C\x1b[C", 150);
    l.type_key(Typed::Char('k'), 150);
    l.host(b"k", 155);
    l.type_key(Typed::Char('m'), 160);
    assert_eq!(l.row(), ("$ abxyzkm".into(), "        ^".into()));
    // The link lost: what is shown is taken back, the cursor where the host left it.
    let out = l.p.forget();
    l.show(&out);
    assert_eq!(l.row(), ("$ abxyzk".into(), "".into()));
    assert_eq!(l.cursor(), (0, 8));
}

#[test]
fn left_and_right_move_among_the_guesses_and_typing_between_them_inserts() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('a'), 0);
    l.host(b"a", 100);
    for (i, c) in "bd".chars().enumerate() {
        l.type_key(Typed::Char(c), 200 + i as u64);
    }
    l.type_key(Typed::Left, 210);
    assert_eq!(l.cursor(), (0, 4), "on the d");
    l.type_key(Typed::Char('c'), 220);
    assert_eq!(l.row(), ("$ abcd".into(), "   ^^^".into()));
    assert_eq!(l.cursor(), (0, 5));
    l.type_key(Typed::Right, 230);
    assert_eq!(l.cursor(), (0, 6));
    // Right at the end, or Left past the run, is not guessed: the guessing ends there.
    l.type_key(Typed::Left, 240);
    l.type_key(Typed::Backspace, 250);
    assert_eq!(
        l.row(),
        ("$ abd".into(), "   ^^".into()),
        "the c went, d moved back"
    );
    assert_eq!(l.cursor(), (0, 4));
    // The host's line editor does the same, and its echo confirms every one.
    l.host(b"bd\x1b[D", 400);
    assert_eq!(l.row(), ("$ abd".into(), "".into()));
    assert!(l.p.guesses.is_empty());
    l.type_key(Typed::Left, 410);
    assert_eq!(l.p.back, 0, "no guess to move among: not guessed");
    assert!(!l.p.trusted);
}

#[test]
fn an_echo_still_on_its_way_after_left_is_no_contradiction() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('a'), 0);
    l.host(b"a", 100);
    l.type_key(Typed::Char('b'), 200);
    l.type_key(Typed::Left, 210);
    l.type_key(Typed::Char('X'), 220);
    assert_eq!(l.row(), ("$ aXb".into(), "   ^^".into()));
    // The echo of `b` lands first, where `X` is guessed: the guesses stay.
    l.host(b"b\x1b[D", 300);
    assert_eq!(l.row(), ("$ aXb".into(), "   ^^".into()));
    // Then the host's editor inserts X as guessed.
    l.host(b"Xb\x1b[D", 320);
    assert_eq!(l.row(), ("$ aXb".into(), "".into()));
    assert!(l.p.guesses.is_empty());
    assert!(l.p.trusted, "every guess was right");
}

#[test]
fn the_deadline_is_the_oldest_guesses_also_after_left() {
    let mut l = Link::new(Policy::Always);
    l.type_key(Typed::Char('l'), 0);
    l.host(b"l", 150);
    l.type_key(Typed::Char('s'), 200);
    l.type_key(Typed::Left, 210);
    // Typed left of the older guess: it comes first in the row, not first in time.
    l.type_key(Typed::Char('x'), 400);
    assert_eq!(l.row().0, "$ lxs");
    assert_eq!(
        l.p.deadline(RTT),
        Some(l.t0 + Duration::from_millis(200) + expiry(RTT))
    );
}
