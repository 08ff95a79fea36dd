//! Keys as each pane asked for them, focus reports and colours: what the programs in
//! panes asked of the terminal beyond the screen (`term::vt::keyboard`), answered for
//! the user's real terminal.
//!
//! * A key goes to the focused pane encoded the way that pane asked (kitty flags,
//!   modifyOtherKeys, neither): legacy bytes go as they came to a pane that did not ask
//!   for kitty keys; anything else is encoded again from the key event (`input::encode`).
//! * A release reaches a pane only if its press did: herdr remembers the keys whose press
//!   it took (at most `CONSUMED_MAX`).
//! * Focus: the pane that has the focus, while some client's terminal window has it, is
//!   told (`CSI I`, `CSI O`) once per change, if it asked (mode 1004).

use std::sync::Arc;

use super::{ClientId, Server};
use crate::input::encode::encode;
use crate::input::event::{self, KeyEvent, KeyId, Kind};
use crate::input::keys::{Key, KeyCode};
use crate::model::ids::TerminalId;
use crate::term::vt::{Colors, KeyMode};

/// Presses remembered per client so their releases are dropped too.
pub(super) const CONSUMED_MAX: usize = 16;

impl Server {
    /// How the focused pane wants its keys.
    pub(super) fn focused_key_mode(&self) -> KeyMode {
        self.session
            .state
            .focused_terminal()
            .and_then(|tid| self.session.runtimes.get(tid))
            .map(|rt| crate::pty::lock(&rt.emulator).key_mode())
            .unwrap_or_default()
    }

    /// The bytes of a key for the focused pane. Legacy bytes reach a pane that did not
    /// ask for kitty keys as they came: a legacy terminal's `ESC :` may be Escape then `:`
    /// as well as Alt+:, and modifyOtherKeys programs read legacy bytes too.
    pub(super) fn key_for_pane(&self, key: Key, raw: &[u8], out: &mut Vec<u8>) {
        let mode = self.focused_key_mode();
        if mode.kitty == 0 && !event::extended(raw) {
            out.extend_from_slice(raw);
        } else {
            out.extend(encode(&KeyEvent::of(key, raw), mode));
        }
    }

    /// Typed text for the focused pane: as it is, unless the pane wants every key as an
    /// escape code.
    pub(super) fn text_for_pane(&self, text: &str, out: &mut Vec<u8>) {
        let mode = self.focused_key_mode();
        if mode.kitty & 8 == 0 {
            out.extend_from_slice(text.as_bytes());
            return;
        }
        for c in text.chars() {
            out.extend(encode(
                &KeyEvent::from_key(Key::plain(KeyCode::Char(c))),
                mode,
            ));
        }
    }

    /// A kitty report that is no key press (a release, a modifier key, text with no key):
    /// to the focused pane, if it wants it and it is not the release of a key herdr took.
    pub(super) fn report_for_pane(&mut self, id: ClientId, raw: &[u8], out: &mut Vec<u8>) {
        let Some(ev) = event::decode(raw) else {
            return;
        };
        if ev.kind == Kind::Release && self.unconsume(id, ev.id()) {
            return;
        }
        out.extend(encode(&ev, self.focused_key_mode()));
    }

    /// A report while herdr has the keys (prefix, help or scroll mode): a press is
    /// taken, a release of what it took dropped.
    pub(super) fn report_taken(&mut self, id: ClientId, raw: &[u8]) {
        match event::decode(raw) {
            Some(ev) if ev.kind == Kind::Release => {
                self.unconsume(id, ev.id());
            }
            Some(_) => self.consume(id, raw),
            None => {}
        }
    }

    /// herdr took the press of this key (its release will not reach the pane either).
    pub(super) fn consume(&mut self, id: ClientId, raw: &[u8]) {
        let Some(ev) = event::extended(raw).then(|| event::decode(raw)).flatten() else {
            return;
        };
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            if !c.consumed.contains(&ev.id()) {
                if c.consumed.len() >= CONSUMED_MAX {
                    c.consumed.remove(0);
                }
                c.consumed.push(ev.id());
            }
        }
    }

    /// Whether this key's press was taken (it is forgotten now).
    fn unconsume(&mut self, id: ClientId, key: KeyId) -> bool {
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return false;
        };
        match c.consumed.iter().position(|k| *k == key) {
            Some(i) => {
                c.consumed.remove(i);
                true
            }
            None => false,
        }
    }

    /// A client's terminal window gained or lost the focus.
    pub(super) fn client_focus(&mut self, id: ClientId, focused: bool) {
        if let Some(c) = self.clients.by_id.get_mut(&id) {
            c.focused = focused;
        }
        self.tell_focus();
    }

    /// Tells the pane that lost the focus and the one that gained it, if they asked.
    pub(super) fn tell_focus(&mut self) {
        let want = self
            .clients
            .by_id
            .values()
            .any(|c| c.focused)
            .then(|| self.session.state.focused_terminal())
            .flatten();
        if want == self.session.focus_told {
            return;
        }
        let old = std::mem::replace(&mut self.session.focus_told, want);
        for (tid, report) in [(old, b"\x1b[O"), (want, b"\x1b[I")] {
            if let Some(tid) = tid {
                self.report_focus(tid, report);
            }
        }
    }

    fn report_focus(&mut self, tid: TerminalId, report: &[u8]) {
        let wants = self
            .session
            .runtimes
            .get(tid)
            .is_some_and(|rt| crate::pty::lock(&rt.emulator).focus_events());
        if wants {
            self.write_terminal(tid, report.to_vec());
        }
    }

    /// A client brought its terminal's colours: colour queries are answered with them
    /// from now on, in every pane.
    pub(super) fn use_colors(&mut self, colors: Colors) {
        let colors = colors.checked();
        if colors.is_empty() || *self.session.colors == colors {
            return;
        }
        self.session.colors = Arc::new(colors);
        for tid in self
            .session
            .state
            .terminals
            .keys()
            .copied()
            .collect::<Vec<_>>()
        {
            if let Some(rt) = self.session.runtimes.get(tid) {
                crate::pty::lock(&rt.emulator).set_colors(self.session.colors.clone());
            }
        }
    }
}
