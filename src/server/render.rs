//! Drawing frames for clients: which terminals changed, and each client's frame built in
//! place (or afresh) and sent as a diff — see docs/architecture.md, "Output".

use super::{ClientId, Mode, Server};
use crate::render::diff::{self, Frame};
use crate::render::ui;
use crate::render::view::{Overlay, Screens};

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
        let message = self.clients.message.as_ref().map(|(m, _)| m.clone());
        let ids: Vec<ClientId> = self.clients.by_id.keys().copied().collect();
        for id in ids {
            self.render_client(id, message.as_deref());
        }
        self.clients.sync_due = self
            .clients
            .by_id
            .values()
            .filter_map(|c| c.cache.sync_due())
            .min();
    }

    /// One client's frame. While its layout is unchanged, the next frame is built in the
    /// client's spare buffer (first brought level with what the client shows) and only the
    /// rows that changed are compared and sent; otherwise it is composed afresh.
    fn render_client(&mut self, id: ClientId, message: Option<&str>) {
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let mut cache = std::mem::take(&mut client.cache);
        let prev = client.prev.take();
        let spare = client.spare.take();
        let stale = std::mem::take(&mut client.spare_stale);
        let (mode, client_size) = (client.mode, client.size);
        let overlay = match mode {
            Mode::Help => Overlay::Help,
            Mode::Prefix => Overlay::Prefix,
            Mode::Normal => Overlay::None,
        };
        let mut view = self.view(overlay, message);
        view.bindings = self.bindings_of(id);
        let mut dirty = Vec::new();
        let mut next = None;
        if let Some(prev) = prev.as_ref().filter(|_| client_size == self.session.size) {
            let mut candidate = match spare {
                Some(mut s) if s.size() == prev.size() => {
                    sync_rows(&mut s, prev, &stale);
                    s
                }
                _ => prev.clone(),
            };
            if ui::compose_update(
                &view,
                self.session.size,
                &mut candidate,
                &mut cache,
                &mut dirty,
            ) {
                next = Some(candidate);
            }
        }
        let (frame, bytes) = match (next, &prev) {
            (Some(frame), Some(prev)) => {
                let bytes = diff::encode_diff_rows(prev, &frame, &dirty);
                (frame, bytes)
            }
            _ => {
                let frame = ui::fit(
                    ui::compose(&view, self.session.size, &mut cache),
                    client_size,
                );
                dirty = vec![true; usize::from(client_size.1)];
                let bytes = match &prev {
                    Some(prev) => diff::encode_diff(prev, &frame),
                    None => diff::encode_full(&frame),
                };
                (frame, bytes)
            }
        };
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let owed = !client.owed.is_empty();
        let bytes = match owed {
            true => [client.owed.as_slice(), &bytes].concat(),
            false => bytes,
        };
        if bytes.is_empty() || client.writer.send_output(bytes) {
            client.owed.clear();
            // The old frame becomes the spare; it differs from the new one in `dirty`.
            client.spare = prev;
            client.spare_stale = dirty;
            client.prev = Some(frame);
            client.cache = cache;
            client.behind = false;
        } else {
            // Not sent: the client still shows `prev`, which the cache no longer
            // describes; the next frame is composed afresh.
            client.prev = prev;
            cache.invalidate();
            client.cache = cache;
            client.behind = true;
        }
    }
}

/// Copies the rows flagged in `stale` from `from` into `to` (frames of one size), and the
/// frame-wide fields, so `to` equals `from` again.
fn sync_rows(to: &mut Frame, from: &Frame, stale: &[bool]) {
    let width = usize::from(from.buffer.area.width);
    for (y, flag) in stale.iter().enumerate() {
        if *flag {
            let row = y * width..(y + 1) * width;
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
