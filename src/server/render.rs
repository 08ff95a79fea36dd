//! Drawing frames for clients: which terminals changed, and each client's frame built in
//! place (or afresh) and sent as a diff — see docs/architecture.md, "Output".

use std::time::Instant;

use super::{Client, Clients, Mode, Server, Session};
use crate::bindings::Bindings;
use crate::render::diff::{self, Frame};
use crate::render::ui;
use crate::render::view::{Overlay, Screens, View};

/// Frames are drawn from the live emulators, each locked while its pane is drawn.
impl Screens for crate::pty::TerminalRuntimeRegistry {
    fn with(
        &self,
        tid: crate::model::ids::TerminalId,
        draw: &mut dyn FnMut(&mut crate::term::Emulator),
    ) {
        if let Some(rt) = self.get(tid) {
            draw(&mut crate::pty::lock(&rt.emulator));
        }
    }
}

impl Server {
    pub(super) fn render(&mut self) {
        // Output that arrived after its notification was handled is only seen here (the
        // dirty flag was still set, so no new event came): waits and subscribers hear of it.
        let mut fresh = Vec::new();
        for t in self.session.runtimes.ids() {
            if self
                .session
                .runtimes
                .get(t)
                .is_some_and(|rt| rt.handle.take_dirty())
            {
                fresh.push(t);
            }
        }
        for t in fresh {
            self.output_seen(t);
        }
        self.clients.render(&self.session);
    }
}

impl Session {
    /// What a frame is composed from, for a client in `overlay` with `bindings`.
    pub(crate) fn view<'a>(
        &'a self,
        overlay: Overlay,
        message: Option<&'a str>,
        bindings: &'a Bindings,
    ) -> View<'a> {
        View {
            session: self.name.as_str(),
            state: &self.state,
            screens: &self.runtimes,
            bindings,
            scroll: &self.scroll,
            sidebar: self.sidebar_width(),
            message,
            overlay,
            panel: None,
            help_scroll: 0,
            status: &self.config.status,
            host: &self.host,
            clock: self
                .config
                .status
                .iter()
                .any(|i| i == "clock")
                .then(|| crate::sys::local_hhmm(crate::persist::unix_now() as i64)),
            now: Instant::now(),
            machines: &self.machines,
        }
    }
}

impl Clients {
    /// Draws every client's frame from the session as it is now, and notes when the next
    /// is due for synchronized output.
    pub(super) fn render(&mut self, session: &Session) {
        let message = self.message.as_ref().map(|(m, _)| m.as_str());
        for client in self.by_id.values_mut() {
            render_client(client, session, message);
        }
        self.sync_due = self.by_id.values().filter_map(|c| c.cache.sync_due()).min();
        // The clock is drawn again when its minute ends (worked out once a minute, not
        // every frame).
        let clock = session.config.status.iter().any(|i| i == "clock");
        if !clock || self.by_id.is_empty() {
            self.clock_due = None;
        } else if self.clock_due.is_none() {
            let into = crate::persist::unix_now() % 60;
            self.clock_due = Some(Instant::now() + std::time::Duration::from_secs(60 - into));
        }
    }
}

/// One client's frame. While its layout is unchanged, the next frame is built in the
/// client's spare buffer (first brought level with what the client shows) and only the
/// rows that changed are compared and sent; otherwise it is composed afresh.
fn render_client(client: &mut Client, session: &Session, message: Option<&str>) {
    let mut cache = std::mem::take(&mut client.cache);
    let prev = client.prev.take();
    let spare = client.spare.take();
    let stale = std::mem::take(&mut client.spare_stale);
    let mut stale_cols = std::mem::take(&mut client.spare_cols);
    let overlay = match client.mode {
        Mode::Help => Overlay::Help,
        Mode::Prefix => Overlay::Prefix,
        Mode::Sessions => Overlay::Panel,
        Mode::Normal | Mode::Confirm(_) => Overlay::None,
    };
    let panel = match (client.mode, &client.picker) {
        (Mode::Sessions, Some(picker)) => Some(picker.panel(session.name.as_str())),
        _ => None,
    };
    // A question this client is asked takes the status line's message.
    let question = match client.mode {
        Mode::Confirm(ask) => Some(session.question(ask, &client.typed)),
        _ => None,
    };
    let message = question.as_deref().or(message);
    let client_size = client.size;
    let bindings = client.bindings.as_ref().unwrap_or(&session.bindings);
    let mut view = session.view(overlay, message, bindings);
    view.help_scroll = client.help_scroll;
    view.panel = panel.as_ref();
    let mut dirty = Vec::new();
    let mut next = None;
    // A client back after its link dropped: `prev` is what it was sent, not all of what
    // it shows; its frame is composed afresh and drawn over the rows it does not have.
    let unknown = client.unknown_rows.take();
    let incremental = client_size == session.size && unknown.is_none();
    if let Some(prev) = prev.as_ref().filter(|_| incremental) {
        let mut candidate = match spare {
            Some(mut s) if s.size() == prev.size() => {
                sync_rows(&mut s, prev, &stale, &stale_cols);
                s
            }
            _ => prev.clone(),
        };
        if ui::compose_update(&view, session.size, &mut candidate, &mut cache, &mut dirty) {
            next = Some(candidate);
        }
    }
    // (`full`: the frame is drawn whole, a new base for numbered frames.)
    stale_cols.clear();
    let (frame, bytes, full) = match (next, &prev) {
        (Some(frame), Some(prev)) => {
            let bytes = diff::encode_diff_rows(prev, &frame, &dirty, Some(cache.cols()));
            stale_cols.extend_from_slice(cache.cols());
            (frame, bytes, false)
        }
        _ => {
            let frame = ui::fit(ui::compose(&view, session.size, &mut cache), client_size);
            let (bytes, full) = match (&prev, &unknown) {
                (Some(prev), _) if prev.size() == frame.size() => {
                    dirty = diff::changed_rows(prev, &frame);
                    let bytes = match &unknown {
                        Some(unknown) => {
                            for (d, u) in dirty.iter_mut().zip(unknown) {
                                *d |= *u;
                            }
                            diff::encode_resume(prev, unknown, &frame)
                        }
                        None => diff::encode_diff(prev, &frame),
                    };
                    (bytes, false)
                }
                (Some(prev), _) => (diff::encode_diff(prev, &frame), true),
                (None, _) => (diff::encode_full(&frame), true),
            };
            if full {
                dirty = vec![true; usize::from(client_size.1)];
            }
            (frame, bytes, full)
        }
    };
    let owed = !client.owed.is_empty();
    let bytes = match owed {
        true => [client.owed.as_slice(), &bytes].concat(),
        false => bytes,
    };
    let sent = bytes.is_empty()
        || match client.frames.as_mut() {
            Some(log) => {
                let sent = client.writer.send_frame(log.next(), bytes);
                if sent {
                    log.sent(&dirty, full);
                }
                sent
            }
            None => client.writer.send_output(bytes),
        };
    if sent {
        client.owed.clear();
        // The old frame becomes the spare; it differs from the new one in `dirty`.
        client.spare = prev;
        client.spare_stale = dirty;
        client.spare_cols = stale_cols;
        client.prev = Some(frame);
        client.cache = cache;
        client.behind = false;
    } else {
        // Not sent: the client still shows `prev`, which the cache no longer
        // describes; the next frame is composed afresh.
        client.prev = prev;
        client.unknown_rows = unknown;
        cache.invalidate();
        client.cache = cache;
        client.behind = true;
    }
}

/// Copies the rows flagged in `stale` from `from` into `to` (frames of one size), only
/// their columns in `cols` where given, and the frame-wide fields, so `to` equals `from`
/// again.
fn sync_rows(to: &mut Frame, from: &Frame, stale: &[bool], cols: &[(u16, u16)]) {
    let width = usize::from(from.buffer.area.width);
    for (y, flag) in stale.iter().enumerate() {
        if *flag {
            let (lo, hi) = cols.get(y).map_or((0, width), |&(lo, hi)| {
                (usize::from(lo).min(width), usize::from(hi).min(width))
            });
            if lo >= hi {
                continue;
            }
            let row = y * width + lo..y * width + hi;
            if let (Some(dst), Some(src)) = (
                to.buffer.content.get_mut(row.clone()),
                from.buffer.content.get(row.clone()),
            ) {
                dst.clone_from_slice(src);
            }
            if let (Some(dst), Some(src)) = (to.extras.get_mut(row.clone()), from.extras.get(row)) {
                dst.clone_from_slice(src);
            }
        }
    }
    to.cursor = from.cursor;
    to.application_cursor = from.application_cursor;
    to.application_keypad = from.application_keypad;
}
