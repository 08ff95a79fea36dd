//! What each control, escape and control sequence does; and the replies the terminal
//! owes the program (device status, attributes, colour queries), the title, bells and
//! OSC 52 clipboard writes.

use super::cell::{self, Underline};
use super::format;
use super::grid::Pos;
use super::links::Link;
use super::{
    grid_and_keep, Color, MouseProtocolEncoding as Enc, MouseProtocolMode as Mouse, Pen, Screen,
    State, APP_CURSOR, APP_KEYPAD, BRACKETED_PASTE, HIDE_CURSOR,
};

const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
const CLIPBOARD_SELECTOR: &[u8] = b"cpqs01234567";

/// The first parameter, `default` when absent or zero.
fn param(params: &vte::Params, i: usize, default: u16) -> u16 {
    match params.iter().nth(i).and_then(|p| p.first().copied()) {
        None | Some(0) => default,
        Some(n) => n,
    }
}

impl State {
    fn lf(&mut self) {
        grid_and_keep!(self.screen, self.dropped, self.scratch, g, keep);
        g.row_inc_scroll(1, keep);
    }

    fn set_title(&mut self, title: &[u8]) {
        let title: String = String::from_utf8_lossy(title)
            .chars()
            .filter(|c| !c.is_control())
            .take(256)
            .collect();
        if title != self.title {
            self.title = title;
            self.effects.title_changed = true;
        }
    }

    fn reply(&mut self, bytes: &[u8]) {
        self.effects.responses.extend_from_slice(bytes);
    }

    /// CPR (or, with `mark` "?", DECXCPR): the cursor's row and column, the row counted
    /// from the scroll region's top in origin mode; a cursor waiting past the last column
    /// (the next character wraps) is in the last column.
    fn cursor_report(&mut self, mark: &str) {
        let g = self.screen.grid();
        let Pos { row, col } = g.pos;
        let row = if g.origin() {
            row.saturating_sub(g.region().0)
        } else {
            row
        };
        let col = col.min(g.size().1.saturating_sub(1));
        let mut reply = String::from("\x1b[");
        reply.push_str(mark);
        format::push_num(&mut reply, row.saturating_add(1));
        reply.push(';');
        format::push_num(&mut reply, col.saturating_add(1));
        reply.push('R');
        self.reply(reply.as_bytes());
    }

    /// DECRPM: `CSI [?] mode ; state $ y`.
    fn mode_report(&mut self, mark: &str, mode: u16, state: ModeState) {
        let mut reply = String::from("\x1b[");
        reply.push_str(mark);
        format::push_num(&mut reply, mode);
        reply.push(';');
        format::push_num(&mut reply, state as u16);
        reply.push_str("$y");
        self.reply(reply.as_bytes());
    }

    fn decset(&mut self, params: &vte::Params, on: bool) {
        for p in params.iter() {
            if p == [2026] {
                self.set_sync(on);
                continue;
            }
            let s = &mut self.screen;
            match p {
                [1] => s.set_mode(APP_CURSOR, on),
                [6] => s.grid_mut().set_origin_mode(on),
                [9] => mouse(s, Mouse::Press, on),
                [25] => s.set_mode(HIDE_CURSOR, !on),
                [47] if on => {
                    self.keyboard.enter_alternate(s.alt);
                    s.enter_alternate();
                }
                [47] => s.exit_alternate(),
                [1000] => mouse(s, Mouse::PressRelease, on),
                [1002] => mouse(s, Mouse::ButtonMotion, on),
                [1003] => mouse(s, Mouse::AnyMotion, on),
                [1005] => encoding(s, Enc::Utf8, on),
                [1006] => encoding(s, Enc::Sgr, on),
                [1049] if on => {
                    self.keyboard.enter_alternate(s.alt);
                    s.save_cursor();
                    s.alternate.clear();
                    s.enter_alternate();
                }
                [1049] => {
                    s.exit_alternate();
                    s.restore_cursor();
                }
                [1004] => self.keyboard.set_focus_events(on),
                [2004] => s.set_mode(BRACKETED_PASTE, on),
                _ => {}
            }
        }
    }

    fn sgr(&mut self, params: &vte::Params) {
        self.sgr_groups(params.is_empty(), params.iter());
    }

    /// SGR with its parameters as groups (a parameter and its sub-parameters).
    pub(super) fn sgr_groups<'a>(&mut self, none: bool, groups: impl Iterator<Item = &'a [u16]>) {
        let mut pen = self.screen.pen;
        Self::sgr_on(&mut pen, none, groups);
        self.screen.set_pen(pen);
    }

    fn sgr_on<'a>(pen: &mut Pen, none: bool, mut it: impl Iterator<Item = &'a [u16]>) {
        // SGR resets the attributes, not the hyperlink (OSC 8 opens and closes that).
        let reset = Pen {
            link: pen.link,
            ..Pen::DEFAULT
        };
        if none {
            *pen = reset;
            return;
        }
        // A colour given in the following parameters (38;5;n or 38;2;r;g;b).
        fn next_u8<'a>(it: &mut impl Iterator<Item = &'a [u16]>) -> Option<u8> {
            match it.next()? {
                [n] => u8::try_from(*n).ok(),
                _ => None,
            }
        }
        fn color<'a>(it: &mut impl Iterator<Item = &'a [u16]>) -> Option<Color> {
            match it.next()? {
                [2] => Some(Color::Rgb(next_u8(it)?, next_u8(it)?, next_u8(it)?)),
                [5] => Some(Color::Idx(next_u8(it)?)),
                _ => None,
            }
        }
        fn rgb(r: u16, g: u16, b: u16) -> Option<Color> {
            let u = |n: u16| u8::try_from(n).ok();
            Some(Color::Rgb(u(r)?, u(g)?, u(b)?))
        }
        while let Some(p) = it.next() {
            let flag = |pen: &mut Pen, f: u16, on: bool| {
                if on {
                    pen.flags |= f;
                } else {
                    pen.flags &= !f;
                }
            };
            match p {
                [0] => *pen = reset,
                [1] => {
                    flag(pen, cell::BOLD, true);
                    flag(pen, cell::DIM, false);
                }
                [2] => {
                    flag(pen, cell::DIM, true);
                    flag(pen, cell::BOLD, false);
                }
                [3] => flag(pen, cell::ITALIC, true),
                [4] => pen.set_underline(Underline::Single),
                // 4:0 to 4:5: no, single, double, curly, dotted, dashed underline.
                [4, style] => {
                    if let Some(style) = Underline::from_sgr(*style) {
                        pen.set_underline(style);
                    }
                }
                [5] => flag(pen, cell::BLINK, true),
                [6] => flag(pen, cell::RAPID_BLINK, true),
                [7] => flag(pen, cell::INVERSE, true),
                [8] => flag(pen, cell::HIDDEN, true),
                [9] => flag(pen, cell::STRIKE, true),
                [21] => pen.set_underline(Underline::Double),
                [22] => flag(pen, cell::BOLD | cell::DIM, false),
                [23] => flag(pen, cell::ITALIC, false),
                [24] => pen.set_underline(Underline::None),
                [25] => flag(pen, cell::BLINK | cell::RAPID_BLINK, false),
                [27] => flag(pen, cell::INVERSE, false),
                [28] => flag(pen, cell::HIDDEN, false),
                [29] => flag(pen, cell::STRIKE, false),
                [n @ 30..=37] => pen.fg = Color::Idx((n - 30) as u8),
                [39] => pen.fg = Color::Default,
                [n @ 40..=47] => pen.bg = Color::Idx((n - 40) as u8),
                // 38/48/58 with the colour in sub-parameters (38:2:r:g:b, 38:2::r:g:b with
                // its colour space left out, 38:5:n) or in the parameters that follow
                // (38;2;r;g;b, 38;5;n); a bad value ends it.
                [which @ (38 | 48 | 58), rest @ ..] => {
                    let colour = match rest {
                        [] => color(&mut it),
                        [2, r, g, b] | [2, _, r, g, b] => rgb(*r, *g, *b),
                        [5, i] => u8::try_from(*i).ok().map(Color::Idx),
                        _ => continue,
                    };
                    let Some(colour) = colour else { return };
                    match which {
                        38 => pen.fg = colour,
                        48 => pen.bg = colour,
                        _ => pen.ul = colour,
                    }
                }
                [49] => pen.bg = Color::Default,
                [53] => flag(pen, cell::OVERLINE, true),
                [55] => flag(pen, cell::OVERLINE, false),
                [59] => pen.ul = Color::Default,
                [n @ 90..=97] => pen.fg = Color::Idx((n - 82) as u8),
                [n @ 100..=107] => pen.bg = Color::Idx((n - 92) as u8),
                _ => {}
            }
        }
    }
}

/// What DECRQM answers for a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ModeState {
    NotRecognized = 0,
    Set = 1,
    Reset = 2,
    PermanentlySet = 3,
    PermanentlyReset = 4,
}

impl ModeState {
    fn of(on: bool) -> ModeState {
        if on {
            ModeState::Set
        } else {
            ModeState::Reset
        }
    }
}

/// XTVERSION's answer: `DCS > | name version ST`.
const XTVERSION: &str = concat!("\x1bP>|herdr ", env!("CARGO_PKG_VERSION"), "\x1b\\");

/// The ANSI modes: insert (IRM, 4) and automatic newline (LNM, 20) are never on here.
fn ansi_mode_state(mode: u16) -> ModeState {
    match mode {
        4 | 20 => ModeState::PermanentlyReset,
        _ => ModeState::NotRecognized,
    }
}

impl Screen {
    /// The state of a DEC private mode, as DECRQM reports it: every mode `decset` takes,
    /// autowrap (always on) and grapheme clustering (2027, always on); 0 for the rest.
    pub(super) fn dec_mode_state(&self, mode: u16) -> ModeState {
        let mouse = |m| ModeState::of(self.mouse_mode == m);
        let encoding = |e| ModeState::of(self.mouse_encoding == e);
        match mode {
            1 => ModeState::of(self.application_cursor()),
            6 => ModeState::of(self.origin_mode()),
            7 | 2027 => ModeState::PermanentlySet,
            9 => mouse(Mouse::Press),
            25 => ModeState::of(!self.hide_cursor()),
            47 | 1049 => ModeState::of(self.alt),
            1000 => mouse(Mouse::PressRelease),
            1002 => mouse(Mouse::ButtonMotion),
            1003 => mouse(Mouse::AnyMotion),
            1005 => encoding(Enc::Utf8),
            1006 => encoding(Enc::Sgr),
            2004 => ModeState::of(self.bracketed_paste()),
            _ => ModeState::NotRecognized,
        }
    }
}

fn mouse(s: &mut Screen, mode: Mouse, on: bool) {
    if on {
        s.mouse_mode = mode;
    } else if s.mouse_mode == mode {
        s.mouse_mode = Mouse::None;
    }
}

fn encoding(s: &mut Screen, enc: Enc, on: bool) {
    if on {
        s.mouse_encoding = enc;
    } else if s.mouse_encoding == enc {
        s.mouse_encoding = Enc::Default;
    }
}

impl vte::Perform for State {
    fn print(&mut self, c: char) {
        if std::mem::take(&mut self.await_char) {
            // The character the parser held is complete: it is back in its ground state.
            self.stop = true;
        }
        if c != '\u{fffd}' && !('\u{80}'..'\u{a0}').contains(&c) {
            self.text(c);
        }
    }

    fn terminated(&self) -> bool {
        self.stop
    }

    fn execute(&mut self, b: u8) {
        match b {
            7 => self.effects.bell = true,
            8 => self.screen.grid_mut().col_dec(1),
            9 => self.screen.grid_mut().col_tab(),
            10..=12 => self.lf(),
            13 => self.screen.grid_mut().col_set(0),
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, b: u8) {
        self.stop = true;
        if !intermediates.is_empty() {
            return;
        }
        let s = &mut self.screen;
        match b {
            b'7' => s.save_cursor(),
            b'8' => s.restore_cursor(),
            b'=' => s.set_mode(APP_KEYPAD, true),
            b'>' => s.set_mode(APP_KEYPAD, false),
            b'M' => s.grid_mut().row_dec_scroll(1),
            b'c' => {
                s.reset();
                self.sync = Default::default();
                self.keyboard = Default::default();
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, c: char) {
        self.stop = true;
        let p1 = |default| param(params, 0, default);
        match intermediates.first() {
            None => {
                // Erased cells take the pen's colours and attributes, not its link.
                let pen = self.screen.ink.without_link();
                let g = self.screen.grid_mut();
                match c {
                    '@' => g.insert_cells(p1(1)),
                    'A' => g.row_dec_clamp(p1(1)),
                    'B' => g.row_inc_clamp(p1(1)),
                    'C' => g.col_inc_clamp(p1(1)),
                    'D' => g.col_dec(p1(1)),
                    'E' => {
                        g.col_set(0);
                        g.row_inc_clamp(p1(1));
                    }
                    'F' => {
                        g.col_set(0);
                        g.row_dec_clamp(p1(1));
                    }
                    'G' | '`' => g.col_set(p1(1) - 1),
                    'H' | 'f' => g.set_pos(Pos {
                        row: p1(1) - 1,
                        col: param(params, 1, 1) - 1,
                    }),
                    'J' => match p1(0) {
                        0 => g.erase_all_forward(pen),
                        1 => g.erase_all_backward(pen),
                        2 => g.erase_all(pen),
                        _ => {}
                    },
                    'K' => match p1(0) {
                        0 => g.erase_row_forward(pen),
                        1 => g.erase_row_backward(pen),
                        2 => g.erase_row(pen),
                        _ => {}
                    },
                    'L' => g.insert_lines(p1(1)),
                    'M' => g.delete_lines(p1(1)),
                    'P' => g.delete_cells(p1(1)),
                    'S' => {
                        grid_and_keep!(self.screen, self.dropped, self.scratch, g, keep);
                        g.scroll_up(p1(1), keep);
                    }
                    'T' => g.scroll_down(p1(1)),
                    'X' => g.erase_cells(p1(1), pen),
                    // REP: repeated to the end of the line at most, as tmux does; a
                    // count of 65535 would otherwise be that many writes for 8 bytes.
                    'b' => {
                        let room = g.size().1 - g.pos.col.min(g.size().1 - 1);
                        if let Some(last) = self.screen.last_char {
                            for _ in 0..p1(1).min(room) {
                                self.text(last);
                            }
                        }
                    }
                    'd' => g.row_set(p1(1) - 1),
                    'm' => self.sgr(params),
                    'r' => {
                        let rows = g.size().0;
                        g.set_scroll_region(p1(1) - 1, param(params, 1, rows) - 1);
                    }
                    'n' => match param(params, 0, 0) {
                        6 => self.cursor_report(""),
                        // Status report: "terminal OK".
                        5 => self.reply(b"\x1b[0n"),
                        _ => {}
                    },
                    // DA1: a VT220-class terminal with ANSI colour.
                    'c' if param(params, 0, 0) == 0 => self.reply(b"\x1b[?62;22c"),
                    _ => {}
                }
            }
            Some(b'?') => match c {
                'J' | 'K' => {
                    let pen = self.screen.ink.without_link();
                    let g = self.screen.grid_mut();
                    match (c, p1(0)) {
                        ('J', 0) => g.erase_all_forward(pen),
                        ('J', 1) => g.erase_all_backward(pen),
                        ('J', 2) => g.erase_all(pen),
                        ('K', 0) => g.erase_row_forward(pen),
                        ('K', 1) => g.erase_row_backward(pen),
                        ('K', 2) => g.erase_row(pen),
                        _ => {}
                    }
                }
                'h' => self.decset(params, true),
                'l' => self.decset(params, false),
                // DECXCPR: the cursor position, marked as the DEC form.
                'n' if p1(0) == 6 => self.cursor_report("?"),
                // DECRQM for a DEC private mode.
                'p' if intermediates == b"?$" => {
                    let mode = param(params, 0, 0);
                    let state = match mode {
                        2026 => ModeState::of(self.sync.on),
                        1004 => ModeState::of(self.keyboard.focus_events()),
                        _ => self.screen.dec_mode_state(mode),
                    };
                    self.mode_report("?", mode, state);
                }
                // Kitty keyboard flags (`CSI ? u`), XTQMODKEYS (`CSI ? 4 m`).
                'u' | 'm' => self.keyboard_query(c, params),
                _ => {}
            },
            // DECRQM for an ANSI mode.
            Some(b'$') if c == 'p' && intermediates.len() == 1 => {
                let mode = param(params, 0, 0);
                self.mode_report("", mode, ansi_mode_state(mode));
            }
            // DA2: secondary device attributes.
            Some(b'>') if c == 'c' && param(params, 0, 0) == 0 => self.reply(b"\x1b[>1;10;0c"),
            // XTVERSION: the terminal's name and version.
            Some(b'>') if c == 'q' && intermediates.len() == 1 && param(params, 0, 0) == 0 => {
                self.reply(XTVERSION.as_bytes())
            }
            // Kitty keyboard flags pushed, popped, set; modifyOtherKeys.
            Some(&m @ (b'>' | b'<' | b'=')) if matches!(c, 'u' | 'm' | 'n') => {
                self.keyboard_request(m, c, params)
            }
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], bell_terminated: bool) {
        // Ended by BEL, the parser is back in its ground state (by ESC, it is not: the
        // ESC begins the ST that follows).
        self.stop |= bell_terminated;
        match params {
            // OSC 0 sets the icon name and the title.
            [b"0", s] => self.set_title(s),
            // The icon name counts as the title only when none is set.
            [b"1", s] if self.title.is_empty() => self.set_title(s),
            [b"2", s] => self.set_title(s),
            // Desktop notifications (iTerm2's OSC 9 with a message, not ConEmu's OSC 9;4
            // progress; rxvt's OSC 777 notify).
            [b"9", msg, ..] if *msg != b"4" => self.effects.notification = true,
            [b"777", b"notify", ..] => self.effects.notification = true,
            // A hyperlink: OSC 8 ; params ; URI (which may hold semicolons). An empty URI
            // ends the link, and so does one refused.
            [b"8", params, uri @ ..] => {
                let uri = uri.join(&b';');
                self.screen.set_link(Link::parse(params, &uri));
            }
            [b"52", ty, data]
                if ty.iter().all(|c| CLIPBOARD_SELECTOR.contains(c))
                    && *data != b"?"
                    && data.iter().all(|c| BASE64.contains(c))
                    // Bounded: a runaway program cannot make us buffer unbounded data.
                    && data.len() <= 1 << 20 =>
            {
                let mut seq = b"\x1b]52;".to_vec();
                seq.extend_from_slice(ty);
                seq.push(b';');
                seq.extend_from_slice(data);
                seq.push(0x07);
                self.effects.clipboard.push(seq);
            }
            // Colour queries (vim and agents ask for the background to pick a theme):
            // answered with the user's terminal's colours, or the defaults we draw with.
            [which @ (b"10" | b"11" | b"12"), b"?"] => self.color_query(which, bell_terminated),
            [b"4", rest @ ..] => self.palette_query(rest, bell_terminated),
            _ => {}
        }
    }
}
