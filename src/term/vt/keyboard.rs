//! What a program asked of the keyboard: the kitty keyboard protocol's flags (a stack of
//! them for each screen), xterm's modifyOtherKeys level and focus reports (mode 1004).
//! The server encodes each key for the pane from these (`input::encode`); a pane that
//! asked for nothing gets legacy bytes.
//!
//! Invariant: bounded whatever the program sends: each stack keeps at most
//! [`STACK_MAX`] entries (a push onto a full one evicts the oldest, as the protocol says).

/// Entries kept on each screen's stack of kitty flags.
pub const STACK_MAX: usize = 16;
/// Every kitty progressive-enhancement flag: disambiguate (1), report event types (2),
/// report alternate keys (4), report all keys as escape codes (8), report associated
/// text (16).
pub const KITTY_ALL: u8 = 0b1_1111;

/// How the pane wants its keys: what the key encoder needs to know about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyMode {
    /// The kitty flags of the screen shown (0: the protocol is off).
    pub kitty: u8,
    /// xterm's modifyOtherKeys level (0, 1 or 2).
    pub modify_other_keys: u8,
    /// Cursor keys in application mode (DECCKM): `SS3 A` instead of `CSI A`.
    pub app_cursor: bool,
}

impl KeyMode {
    /// Neither kitty flags nor modifyOtherKeys: legacy bytes.
    pub fn is_legacy(&self) -> bool {
        self.kitty == 0 && self.modify_other_keys == 0
    }
}

/// The keyboard state of one terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyboard {
    /// The kitty flags stacks, the current flags last; empty means 0.
    primary: Vec<u8>,
    alternate: Vec<u8>,
    modify_other_keys: u8,
    focus: bool,
}

impl Keyboard {
    fn stack(&mut self, alt: bool) -> &mut Vec<u8> {
        if alt {
            &mut self.alternate
        } else {
            &mut self.primary
        }
    }

    /// The current kitty flags of a screen.
    pub fn kitty(&self, alt: bool) -> u8 {
        let stack = if alt { &self.alternate } else { &self.primary };
        stack.last().copied().unwrap_or(0)
    }

    /// `CSI > flags u`.
    pub fn push(&mut self, alt: bool, flags: u16) {
        let stack = self.stack(alt);
        if stack.len() >= STACK_MAX {
            stack.remove(0);
        }
        stack.push(clamp(flags));
    }

    /// `CSI < n u`: pops `n` entries (at least one); popping them all resets the flags.
    pub fn pop(&mut self, alt: bool, n: u16) {
        let stack = self.stack(alt);
        let n = usize::from(n.max(1)).min(stack.len());
        stack.truncate(stack.len() - n);
    }

    /// `CSI = flags ; mode u`: 1 sets exactly these, 2 adds them, 3 removes them.
    pub fn set(&mut self, alt: bool, flags: u16, mode: u16) {
        let flags = clamp(flags);
        let stack = self.stack(alt);
        let current = stack.last().copied().unwrap_or(0);
        let new = match mode {
            0 | 1 => flags,
            2 => current | flags,
            3 => current & !flags,
            _ => return,
        };
        match stack.last_mut() {
            Some(top) => *top = new,
            None => stack.push(new),
        }
    }

    /// The alternate screen is entered (`shown`: it already was): entered afresh, what a
    /// program left on its stack the last time is no one's now.
    pub fn enter_alternate(&mut self, shown: bool) {
        if !shown {
            self.alternate.clear();
        }
    }

    pub fn modify_other_keys(&self) -> u8 {
        self.modify_other_keys
    }

    /// `CSI > 4 ; level m` (no level: back to 0).
    pub fn set_modify_other_keys(&mut self, level: u16) {
        self.modify_other_keys = level.min(2) as u8;
    }

    /// Mode 1004: the program wants `CSI I` / `CSI O` when its pane gains or loses focus.
    pub fn focus_events(&self) -> bool {
        self.focus
    }

    pub fn set_focus_events(&mut self, on: bool) {
        self.focus = on;
    }

    /// The sequences that rebuild this state on a fresh terminal: the primary screen's
    /// part goes out while that screen is shown, the alternate's after it is entered.
    pub fn formatted(&self, alt: bool) -> String {
        let mut out = String::new();
        let stack = if alt { &self.alternate } else { &self.primary };
        for flags in stack {
            out.push_str(&format!("\x1b[>{flags}u"));
        }
        if !alt {
            if self.modify_other_keys > 0 {
                out.push_str(&format!("\x1b[>4;{}m", self.modify_other_keys));
            }
            if self.focus {
                out.push_str("\x1b[?1004h");
            }
        }
        out
    }
}

/// A parameter's first value, if given and not 0 (the parser gives an absent one as 0).
fn first(params: &vte::Params, i: usize) -> Option<u16> {
    params
        .iter()
        .nth(i)
        .and_then(|p| p.first().copied())
        .filter(|&n| n != 0)
}

impl super::State {
    /// `CSI ? u` (kitty flags) and `CSI ? 4 m` (XTQMODKEYS) queries.
    pub(super) fn keyboard_query(&mut self, c: char, params: &vte::Params) {
        let reply = match (c, first(params, 0)) {
            ('u', _) => format!("\x1b[?{}u", self.keyboard.kitty(self.screen.alt)),
            ('m', Some(4)) => format!("\x1b[>4;{}m", self.keyboard.modify_other_keys),
            _ => return,
        };
        self.effects.responses.extend_from_slice(reply.as_bytes());
    }

    /// `CSI > flags u`, `CSI < n u`, `CSI = flags ; mode u`; `CSI > 4 ; level m` and
    /// `CSI > 4 n` (modifyOtherKeys).
    pub(super) fn keyboard_request(&mut self, marker: u8, c: char, params: &vte::Params) {
        let alt = self.screen.alt;
        let k = &mut self.keyboard;
        match (marker, c) {
            (b'>', 'u') => k.push(alt, first(params, 0).unwrap_or(0)),
            (b'<', 'u') => k.pop(alt, first(params, 0).unwrap_or(1)),
            (b'=', 'u') => k.set(
                alt,
                first(params, 0).unwrap_or(0),
                first(params, 1).unwrap_or(1),
            ),
            // No resource named resets every one, modifyOtherKeys among them.
            (b'>', 'm') if first(params, 0).is_none() && params.len() <= 1 => {
                k.set_modify_other_keys(0)
            }
            (b'>', 'm') if first(params, 0) == Some(4) => {
                k.set_modify_other_keys(first(params, 1).unwrap_or(0))
            }
            (b'>', 'n') if first(params, 0) == Some(4) => k.set_modify_other_keys(0),
            _ => {}
        }
    }
}

fn clamp(flags: u16) -> u8 {
    (flags & u16::from(KITTY_ALL)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::vt::Terminal;

    fn reply(t: &mut Terminal, bytes: &[u8]) -> Vec<u8> {
        t.replies_to(bytes)
    }

    #[test]
    fn kitty_flags_push_pop_set_and_query_per_screen() {
        let mut t = Terminal::new(4, 20);
        assert_eq!(reply(&mut t, b"\x1b[?u"), b"\x1b[?0u");
        assert_eq!(reply(&mut t, b"\x1b[>1u\x1b[?u"), b"\x1b[?1u");
        assert_eq!(reply(&mut t, b"\x1b[>5u\x1b[?u"), b"\x1b[?5u");
        assert_eq!(reply(&mut t, b"\x1b[=2;2u\x1b[?u"), b"\x1b[?7u");
        assert_eq!(reply(&mut t, b"\x1b[=4;3u\x1b[?u"), b"\x1b[?3u");
        assert_eq!(reply(&mut t, b"\x1b[=8u\x1b[?u"), b"\x1b[?8u");
        assert_eq!(reply(&mut t, b"\x1b[<u\x1b[?u"), b"\x1b[?1u");
        // The alternate screen has a stack of its own, and the primary's comes back.
        assert_eq!(reply(&mut t, b"\x1b[?1049h\x1b[?u"), b"\x1b[?0u");
        assert_eq!(reply(&mut t, b"\x1b[>31u\x1b[?u"), b"\x1b[?31u");
        assert_eq!(t.key_mode().kitty, 31);
        assert_eq!(reply(&mut t, b"\x1b[?1049l\x1b[?u"), b"\x1b[?1u");
        assert_eq!(t.key_mode().kitty, 1);
        // Entered again, the alternate screen starts with nothing.
        assert_eq!(reply(&mut t, b"\x1b[?1049h\x1b[?u\x1b[?1049l"), b"\x1b[?0u");
        // Popping more than there is resets; flags beyond the protocol's are dropped.
        assert_eq!(reply(&mut t, b"\x1b[<9u\x1b[?u"), b"\x1b[?0u");
        assert_eq!(reply(&mut t, b"\x1b[>255u\x1b[?u"), b"\x1b[?31u");
        assert_eq!(reply(&mut t, b"\x1b[>u\x1b[?u"), b"\x1b[?0u");
        // RIS forgets everything.
        assert_eq!(
            reply(&mut t, b"\x1b[>4;2m\x1b[?1004h\x1bc\x1b[?u"),
            b"\x1b[?0u"
        );
        assert_eq!(t.key_mode(), KeyMode::default());
        assert!(!t.keyboard().focus_events());
    }

    #[test]
    fn a_stack_is_bounded_and_evicts_its_oldest() {
        let mut t = Terminal::new(4, 20);
        let mut out = Vec::new();
        for i in 0..100_000u32 {
            out.extend_from_slice(format!("\x1b[>{}u", i % 32).as_bytes());
        }
        t.process(&out, 1);
        assert_eq!(t.keyboard().primary.len(), STACK_MAX);
        assert_eq!(reply(&mut t, b"\x1b[?u"), b"\x1b[?31u");
        t.process(format!("\x1b[<{}u", STACK_MAX - 1).as_bytes(), 2);
        // 99,984 was pushed 15 before the last: 99,984 % 32 = 16.
        assert_eq!(reply(&mut t, b"\x1b[?u"), b"\x1b[?16u");
        assert_eq!(reply(&mut t, b"\x1b[<u\x1b[?u"), b"\x1b[?0u");
    }

    #[test]
    fn modify_other_keys_and_focus_reports() {
        let mut t = Terminal::new(4, 20);
        t.process(b"\x1b[>4;2m", 1);
        assert_eq!(t.key_mode().modify_other_keys, 2);
        assert_eq!(reply(&mut t, b"\x1b[?4m"), b"\x1b[>4;2m");
        // Other resources of XTMODKEYS change nothing here; no value resets.
        t.process(b"\x1b[>1;2m", 1);
        assert_eq!(t.key_mode().modify_other_keys, 2);
        t.process(b"\x1b[>4m", 1);
        assert_eq!(t.key_mode().modify_other_keys, 0);
        t.process(b"\x1b[>4;1m\x1b[>4;9m", 1);
        assert_eq!(t.key_mode().modify_other_keys, 2);
        t.process(b"\x1b[>4n", 1);
        assert_eq!(t.key_mode().modify_other_keys, 0);
        assert_eq!(reply(&mut t, b"\x1b[?1004$p"), b"\x1b[?1004;2$y");
        t.process(b"\x1b[?1004h", 1);
        assert!(t.keyboard().focus_events());
        assert_eq!(reply(&mut t, b"\x1b[?1004$p"), b"\x1b[?1004;1$y");
        t.process(b"\x1b[?1004l", 1);
        assert!(!t.keyboard().focus_events());
        t.process(b"\x1b[?1h", 1);
        assert!(t.key_mode().app_cursor);
    }

    #[test]
    fn formatted_state_rebuilds_it() {
        let mut t = Terminal::new(4, 20);
        t.process(
            b"\x1b[>1u\x1b[>5u\x1b[>4;2m\x1b[?1004h\x1b[?1049h\x1b[>3u",
            1,
        );
        let k = t.keyboard().clone();
        let mut fresh = Terminal::new(4, 20);
        let replay = format!("{}\x1b[?1049h{}", k.formatted(false), k.formatted(true));
        fresh.process(replay.as_bytes(), 1);
        assert_eq!(fresh.keyboard(), &k);
    }
}
