//! What wakes the server: events other threads queue (each also writes a wake pipe), and
//! the interactive clients' sockets, which the server thread reads itself — a keystroke
//! wakes it directly, with no reader thread in between.

use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use super::{ClientId, Event, Server};
use crate::protocol::frame::ClientMsg;

/// The way into the server's event queue from other threads: every event also wakes the
/// server's `poll`, which watches the interactive clients' sockets itself.
#[derive(Clone)]
pub struct EventTx {
    tx: Sender<Event>,
    waker: crate::sys::Waker,
}

impl EventTx {
    pub(super) fn new(tx: Sender<Event>, waker: crate::sys::Waker) -> EventTx {
        EventTx { tx, waker }
    }

    pub fn send(&self, ev: Event) -> Result<(), mpsc::SendError<Event>> {
        self.tx.send(ev)?;
        self.waker.wake();
        Ok(())
    }
}

impl Server {
    /// Sleeps until an event is queued, a client sent something, or `timeout` passes; what
    /// clients sent is handled here, on this thread (a keystroke wakes the server
    /// directly, with no reader thread in between).
    pub(super) fn poll_inputs(&mut self, timeout: Option<Duration>) {
        // Each client's connection, and its terminal when it handed that over; then the
        // terminal lent to this thread, if any.
        let mut sources: Vec<(ClientId, bool)> = Vec::new();
        let lent = self.lent.is_some();
        let ready = {
            use std::os::fd::AsFd;
            let mut fds = vec![self.wake.fd()];
            for (id, c) in &self.clients {
                fds.push(c.reader.as_fd());
                sources.push((*id, false));
                if let Some(tty) = &c.tty {
                    fds.push(tty.as_fd());
                    sources.push((*id, true));
                }
            }
            fds.extend(self.lent_fd());
            match crate::sys::poll_readable(&fds, timeout) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("herdr server: poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            }
        };
        if ready[0] {
            // Before the queue is read, so no event's wake-up is lost.
            self.wake.drain();
        }
        // The lent terminal first: its echo is what a keystroke waits for.
        if lent && ready.last().copied().unwrap_or(false) {
            self.read_lent();
        }
        for ((id, tty), _) in sources.into_iter().zip(&ready[1..]).filter(|(_, r)| **r) {
            if tty {
                self.read_tty(id);
            } else {
                self.read_client(id);
            }
        }
    }

    /// Reads the keys typed into a client's terminal (a bounded amount per turn). A
    /// terminal that is gone ends that client.
    fn read_tty(&mut self, id: ClientId) {
        use std::os::fd::AsFd;
        let Some((tty, known)) = self
            .clients
            .get(&id)
            .and_then(|c| Some((c.tty.clone()?, c.size)))
        else {
            return;
        };
        let mut gone = false;
        let mut typed = Vec::new();
        for _ in 0..16 {
            match crate::sys::read_nb(tty.as_fd(), &mut self.read_buf) {
                Ok(Some(0)) | Err(_) => {
                    gone = true;
                    break;
                }
                Ok(Some(n)) => typed.extend_from_slice(&self.read_buf[..n]),
                Ok(None) => break,
            }
        }
        if !typed.is_empty() {
            // Keys and size changes no longer travel together (the client reports the
            // size on its connection): a key typed after a resize must meet the new size,
            // so the terminal's own size is looked at first.
            let size = crate::sys::get_winsize(tty.as_fd())
                .ok()
                .filter(|(r, c)| *r > 0 && *c > 0)
                .map(|(r, c)| super::panes::sane_size((c, r)));
            if let Some((cols, rows)) = size.filter(|s| *s != known) {
                self.handle_guarded(Event::ClientMsg(id, ClientMsg::Resize(cols, rows)));
            }
            self.handle_guarded(Event::ClientMsg(id, ClientMsg::Input(typed)));
        }
        if gone {
            if let Some(c) = self.clients.get(&id) {
                c.writer.close();
            }
            self.handle_guarded(Event::ClientGone(id, None));
        }
    }

    /// Reads what a client sent (a bounded amount per turn) and handles its messages.
    fn read_client(&mut self, id: ClientId) {
        let mut gone = None;
        let mut msgs = Vec::new();
        if let Some(c) = self.clients.get_mut(&id) {
            use std::os::fd::AsFd;
            for _ in 0..16 {
                match crate::sys::recv_nb(c.reader.as_fd(), &mut self.read_buf) {
                    Ok(Some(0)) | Err(_) => {
                        gone = Some(None);
                        break;
                    }
                    Ok(Some(n)) => c.decoder.push(&self.read_buf[..n]),
                    Ok(None) => break,
                }
            }
            loop {
                match c.decoder.next_client() {
                    Ok(Some(msg)) => msgs.push(msg),
                    Ok(None) => break,
                    Err(e) => {
                        // A malformed frame ends this client's connection only.
                        gone = Some(Some(e.to_string()));
                        break;
                    }
                }
            }
        }
        for msg in msgs {
            self.handle_guarded(Event::ClientMsg(id, msg));
        }
        if let Some(reason) = gone {
            if let Some(c) = self.clients.get(&id) {
                c.writer.close();
            }
            self.handle_guarded(Event::ClientGone(id, reason));
        }
    }
}
