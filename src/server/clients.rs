//! Who is attached: each client (its connection, input state, last frame), which one is
//! active (its size is the session's), the pacing of frames, the status-line message, and
//! the terminal whose output this thread reads itself while a client types in it
//! (`lend.rs`).

use std::collections::BTreeMap;
use std::time::Instant;

use super::conn::{ClientId, ClientWriter};
use super::{input, keys, lend, FRAME_BURST, FRAME_INTERVAL};
use crate::bindings::Bindings;
use crate::input::parse::InputParser;
use crate::render::diff::Frame;
use crate::render::ui;

/// Per-client input mode (the prefix is per client, like tmux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Normal,
    Prefix,
    Help,
    /// A question on the status line, answered with `y` or anything else.
    Confirm(super::habits::Ask),
    /// The session picker (`Client::picker`).
    Sessions,
}

pub(crate) struct Client {
    pub(super) writer: ClientWriter,
    pub(super) reader: std::os::unix::net::UnixStream,
    /// Its terminal, read by this thread for keys (frames go through `writer`).
    pub(super) tty: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    pub(super) decoder: crate::protocol::frame::Decoder,
    pub(super) size: (u16, u16),
    pub(super) prev: Option<Frame>,
    pub(super) mode: Mode,
    pub(super) parser: InputParser,
    /// A divider being dragged with the mouse.
    pub(super) drag: Option<crate::model::layout::DividerId>,
    /// A selection being made with the mouse, and the last click (`copy.rs`).
    pub(super) mouse_select: Option<super::copy::MouseSelect>,
    pub(super) last_click: Option<super::copy::LastClick>,
    /// A frame is owed (the last one could not be queued).
    pub(super) behind: bool,
    /// What its last frame was composed from (for incremental redraws).
    pub(super) cache: ui::ComposeCache,
    /// A second frame buffer, reused for the next frame; it differs from `prev` only in
    /// the rows flagged in `spare_stale`.
    pub(super) spare: Option<Frame>,
    pub(super) spare_stale: Vec<bool>,
    /// Within those rows, the columns that differ, where known (per row `from..to`;
    /// empty: the whole rows).
    pub(super) spare_cols: Vec<(u16, u16)>,
    /// An incomplete escape sequence is buffered; if nothing follows by then, it was
    /// typed as is (e.g. alt+[) and is flushed.
    pub(super) input_flush_at: Option<Instant>,
    /// Until when a resize key works without the prefix (see `habits::REPEAT_TIME`).
    pub(super) repeat_until: Option<Instant>,
    /// A name being typed on the status line (`,` and `$`).
    pub(super) typed: String,
    /// How far down the help overlay is scrolled.
    pub(super) help_scroll: usize,
    /// The session picker's rows and choice, while it shows.
    pub(super) picker: Option<super::picker::Picker>,
    /// It can be moved to another session (its hello said so).
    pub(super) can_switch: bool,
    /// What it sent that is not handled yet (taken a bounded amount per turn).
    pub(super) backlog: input::Backlog,
    /// Its input waits for the focused pane to make room: since when that pane has read
    /// nothing of it, and how much room it had then (`input::input_waits_for_room`).
    pub(super) room_wait: Option<(Instant, usize)>,
    /// A paste of its in progress.
    pub(super) paste: Option<keys::Paste>,
    /// Its own key bindings (`--remote-keybindings local`); `None` uses the server's.
    pub(super) bindings: Option<Bindings>,
    /// How its terminal reports keys.
    pub(super) keys: crate::protocol::terminal::KeyProtocol,
    /// Its terminal's window has the focus (as its focus reports last said).
    pub(super) focused: bool,
    /// Keys whose press herdr took (the prefix, a binding): their releases are not the
    /// pane's either. At most `keyboard::CONSUMED_MAX`.
    pub(super) consumed: Vec<crate::input::event::KeyId>,
    /// How its terminal shows a notification (`notify::client_style`).
    pub(super) notify: crate::protocol::terminal::Notify,
    /// The style the client said its terminal takes (`notify` is made from it and the
    /// config, again when the config is reloaded).
    pub(super) notify_said: Option<crate::protocol::terminal::Notify>,
    /// Notifications and bells its writer had no room for: sent ahead of its next frame
    /// (at most `notify::MAX_OWED` bytes).
    pub(super) owed: Vec<u8>,
    /// The numbers of its frames, when it takes numbered frames (`resume.rs`).
    pub(super) frames: Option<super::resume::FrameLog>,
    /// It came back after its link dropped: `prev` is what it was last sent, and these
    /// rows of its screen are not (the next frame draws them whole).
    pub(super) unknown_rows: Option<Vec<bool>>,
}

pub(crate) struct Clients {
    pub(crate) by_id: BTreeMap<ClientId, Client>,
    /// The client whose size the session uses: the most recently active one.
    pub(crate) active: Option<ClientId>,
    /// A status-line message and since when it shows.
    pub(crate) message: Option<(String, Instant)>,
    /// Read buffer for clients' sockets.
    pub(crate) read_buf: Vec<u8>,
    /// Frame pacing: each frame drawn moves this one `FRAME_INTERVAL` past the later of
    /// itself and now; the next may be drawn once it is less than `FRAME_BURST` intervals
    /// ahead of now.
    pub(crate) frame_clock: Instant,
    pub(crate) frame_due: Option<Instant>,
    /// The terminal a client's keys were last written to, and until when its next output
    /// (their echo) is drawn at once, whatever the pacing: a pane repainting beside it
    /// (an agent at work) must not make the echo wait for the next token.
    pub(crate) typed: Option<(crate::model::ids::TerminalId, Instant)>,
    /// A pane on screen shows a finished frame under synchronized output until then; a
    /// frame is drawn at that time (see `term::vt::sync`).
    pub(crate) sync_due: Option<Instant>,
    /// The lending of the pane being typed in to this thread, which reads its output
    /// itself so the echo is drawn in the same wake-up; see `lend.rs`.
    pub(crate) lend: lend::Lending,
    /// When a client last attached (seconds since the Unix epoch), for `session list`.
    pub(crate) attached_at: Option<u64>,
    /// When the status line's clock shows the next minute.
    pub(crate) clock_due: Option<Instant>,
    /// When the programs in front are looked up next, if anything happened since the last
    /// time, and when that was (`names.rs`).
    pub(crate) names_at: Option<Instant>,
    pub(crate) names_last: Instant,
    /// The screens of clients whose connection ended, to come back to (`resume.rs`).
    pub(crate) parking: super::resume::Parking,
}

impl Default for Clients {
    fn default() -> Clients {
        Clients {
            by_id: BTreeMap::new(),
            active: None,
            message: None,
            read_buf: vec![0u8; 64 * 1024],
            frame_clock: Instant::now(),
            frame_due: None,
            typed: None,
            sync_due: None,
            lend: lend::Lending::default(),
            attached_at: None,
            clock_due: None,
            names_at: None,
            names_last: Instant::now(),
            parking: Default::default(),
        }
    }
}

impl Clients {
    /// Gives back each client's spare frame (a whole frame: 0.5 MiB at 160x50), once the
    /// session has been quiet a while (`trim.rs`): it only spares the allocation of the
    /// next frame, which is made from the one the client shows when next needed.
    pub(crate) fn release_spares(&mut self) {
        for client in self.by_id.values_mut() {
            client.spare = None;
            client.spare_stale = Vec::new();
            client.spare_cols = Vec::new();
        }
    }

    /// Asks for a frame, paced: if the last ones were a while ago it is drawn at once (at
    /// the end of this loop turn), else when the bucket of `FRAME_BURST` has a token.
    pub(crate) fn request_frame(&mut self) {
        self.names_soon();
        if self.frame_due.is_none() {
            let ahead = FRAME_INTERVAL * (FRAME_BURST - 1);
            let earliest = self
                .frame_clock
                .checked_sub(ahead)
                .unwrap_or(self.frame_clock);
            self.frame_due = Some(earliest.max(Instant::now()));
        }
    }

    /// Output of `tid` came: if it is the echo of keys just typed, its frame is drawn at
    /// the end of this turn, paced or not (one such frame per write of keys, so typing
    /// cannot flood the client); else as `request_frame`.
    pub(crate) fn request_frame_for(&mut self, tid: crate::model::ids::TerminalId) {
        let now = Instant::now();
        match self.typed {
            Some((typed, until)) if typed == tid && now <= until => {
                self.typed = None;
                self.frame_due = Some(now);
            }
            _ => self.request_frame(),
        }
    }

    /// Shows `text` on every client's status line for a while.
    pub(crate) fn say(&mut self, text: String) {
        self.message = Some((text, Instant::now()));
        self.request_frame();
    }

    /// A client's connection ended: its screen is kept for it to come back to.
    pub(crate) fn park(
        &mut self,
        log: Option<super::resume::FrameLog>,
        frame: Option<crate::render::diff::Frame>,
    ) {
        if let (Some(log), Some(frame)) = (log, frame) {
            self.parking.park(log, frame, Instant::now());
        }
    }

    pub(crate) fn broadcast_raw(&mut self, bytes: &[u8]) {
        for c in self.by_id.values() {
            c.writer.send_output(bytes.to_vec());
        }
    }

    /// `id` becomes the active client; its size, if the session should take it now.
    pub(crate) fn make_active(&mut self, id: ClientId) -> Option<(u16, u16)> {
        if self.active == Some(id) {
            return None;
        }
        self.active = Some(id);
        self.by_id.get(&id).map(|c| c.size)
    }

    /// After `id` left: if it was the active one, the most recent remaining client is, and
    /// its size is returned for the session.
    pub(crate) fn left(&mut self, id: ClientId) -> Option<(u16, u16)> {
        if self.active != Some(id) {
            return None;
        }
        self.active = self.by_id.keys().next_back().copied();
        self.active.and_then(|c| self.by_id.get(&c)).map(|c| c.size)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Clients;
    use crate::model::ids::TerminalId;

    /// The frame budget spent (a pane beside repainting): output of another terminal waits
    /// for the next token, the echo of keys just typed does not, and only once per write.
    #[test]
    fn the_echo_of_keys_just_typed_is_drawn_without_waiting_for_the_pacing() {
        let mut c = Clients::default();
        let now = Instant::now();
        c.frame_clock = now + Duration::from_secs(1);
        c.request_frame_for(TerminalId(2));
        assert!(c.frame_due.unwrap() > now + Duration::from_millis(500));
        c.frame_due = None;
        c.typed = Some((TerminalId(1), now + Duration::from_secs(5)));
        c.request_frame_for(TerminalId(2));
        assert!(c.frame_due.unwrap() > now + Duration::from_millis(500));
        c.frame_due = None;
        c.request_frame_for(TerminalId(1));
        assert!(c.frame_due.unwrap() <= Instant::now());
        c.frame_due = None;
        c.request_frame_for(TerminalId(1));
        assert!(c.frame_due.unwrap() > now + Duration::from_millis(500));
    }
}
