//! What a terminal's I/O actor reports — output, a title, a bell, a clipboard write, the
//! end of its program — and what the server does with it: a frame if the terminal is on
//! screen, waits and subscribers told, hidden output re-armed a few times a second.

use std::time::Instant;

use super::{Server, HIDDEN_OUTPUT_INTERVAL};
use crate::model::ids::TerminalId;
use crate::pty::PtyEvent;

impl Server {
    pub(super) fn pty_event(&mut self, tid: TerminalId, ev: PtyEvent) {
        match ev {
            PtyEvent::Output => {
                if self.is_visible(tid) {
                    // The frame takes the dirty flag and reports the output (render.rs).
                    self.clients.request_frame_for(tid);
                } else if self.api.waits.iter().any(|w| w.terminal == tid) {
                    // Nobody sees it, but a wait is on it: re-arm at once so it hears of
                    // every change.
                    if let Some(rt) = self.session.runtimes.get(tid) {
                        rt.handle.take_dirty();
                    }
                    self.output_seen(tid);
                } else {
                    // Nobody sees it: no frame, and the notification is re-armed a few
                    // times a second rather than for every line it prints.
                    self.session.hidden_output.insert(tid);
                    self.session
                        .hidden_output_at
                        .get_or_insert_with(|| Instant::now() + HIDDEN_OUTPUT_INTERVAL);
                }
            }
            PtyEvent::Title { title, seq } => {
                // Events from the terminal's I/O thread and from this thread's own reads
                // (lent) may arrive out of order: an older title never replaces a newer one.
                // (Not read from the emulator here: a busy I/O thread holds its lock.)
                match self.session.runtimes.get_mut(tid) {
                    Some(rt) if seq <= rt.title_seq => return,
                    Some(rt) => rt.title_seq = seq,
                    None => {}
                }
                match self.session.state.terminals.get_mut(&tid) {
                    Some(t) if t.title == title => return,
                    Some(t) => t.title = title.clone(),
                    None => {}
                }
                if let Some(p) = self.session.state.pane_of_terminal(tid) {
                    let id = self.pane_no(p);
                    self.emit(
                        serde_json::json!({ "event": "pane.title", "id": id, "title": title }),
                    );
                }
                self.request_render();
            }
            PtyEvent::Bell => self.pane_bell(tid),
            PtyEvent::Clipboard(seq) => self.broadcast_raw(&seq),
            PtyEvent::Exited(code) => self.terminal_exited(tid, code),
        }
    }

    /// New output in a terminal was taken in (once per dirty flag): waits on it are checked,
    /// subscribers told, agents without hooks marked working.
    pub(crate) fn output_seen(&mut self, tid: TerminalId) {
        self.session.output_taken = true;
        // (A hidden tab of the shown workspace is named too: its program may have ended.)
        self.clients.names_soon();
        self.persist_activity();
        if self.api.waits.iter().any(|w| w.terminal == tid) {
            self.recheck_waits(Some(tid));
        }
        self.note_output(tid);
        self.agent_activity(tid);
        if self.api.streams.mirrors(tid) {
            self.pump_mirrors(tid);
        }
    }

    /// Whether a terminal is on screen (in the active tab of the active workspace).
    pub(super) fn is_visible(&self, tid: TerminalId) -> bool {
        let Some(tab) = self.session.state.active_tab() else {
            return false;
        };
        let shown = |p: &crate::model::ids::PaneId| {
            self.session
                .state
                .panes
                .get(p)
                .is_some_and(|ps| ps.terminal == tid)
        };
        if tab.zoomed {
            shown(&tab.focused)
        } else {
            tab.layout.panes().iter().any(shown)
        }
    }
}
