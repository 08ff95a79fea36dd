//! The server: the single owner of a session's state. One thread runs [`Server::run`] and
//! handles every [`Event`] in order — client frames, API requests, PTY notifications — so
//! state needs no locks. PTY I/O happens on the terminals' own actor threads, client
//! writes on per-client writer threads; neither can block this loop.
//!
//! Rendering is coalesced with a leading edge: a change after a quiet moment is drawn at
//! once (a typist sees their echo immediately, and a prompt right behind the output or the
//! mode switch before it is not held back); while changes keep coming, frames go out every
//! `FRAME_INTERVAL`.

mod api;
mod attach;
mod capture;
mod clients;
mod conn;
mod copy;
mod exited;
pub(crate) mod fault;
mod habits;
pub mod handoff;
mod input;
mod keyboard;
mod keys;
mod lend;
mod machine_panes;
mod machines;
mod names;
mod notify;
mod output;
mod panes;
mod persist;
mod picker;
mod rebuild;
mod reload;
mod rename;
mod render;
mod resume;
mod session;
mod start;
mod trim;

use crate::log;
use std::collections::BTreeMap;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use crate::bindings::Bindings;
use crate::config::Config;
use crate::model::ids::TerminalId;

use crate::paths::SessionName;
use crate::protocol::frame::{ClientMsg, ServerMsg};
use crate::pty::PtyEvent;

pub(crate) use clients::{Client, Clients, Mode};
pub use conn::ClientId;
use conn::{Acceptor, ApiWriter, ClientWriter};
pub use input::EventTx;
pub(crate) use session::Session;
pub use start::{bind, main, SessionBusy, SessionLock, StartError};
pub(crate) use start::{
    bind_socket, config_path, load_config, load_config_at, spawn_signal_thread,
};

/// Time between two frames to one client under sustained output (~120 fps).
const FRAME_INTERVAL: Duration = Duration::from_millis(8);
/// Frames that may go out back to back after a quiet moment before `FRAME_INTERVAL`
/// paces them (a token bucket of this size, refilled one frame per interval).
const FRAME_BURST: u32 = 3;
/// Events handled between two looks at the timers and the frame schedule.
const MAX_EVENTS_PER_TURN: usize = 1024;
/// How often a paste that waits for its pane to read looks again.
const PASTE_RETRY: Duration = Duration::from_millis(5);
/// How soon a client that is behind (its writer queue was full) is offered a frame again.
const BEHIND_RETRY: Duration = Duration::from_millis(20);
/// The largest terminal we lay out: a bigger size from a client is clamped (a hostile
/// size could otherwise make every pane allocate gigabytes).
pub(crate) const MAX_COLS: u16 = 1000;
pub(crate) const MAX_ROWS: u16 = 500;
/// How long an incomplete escape sequence from a client waits for its remaining bytes.
const INPUT_FLUSH_DELAY: Duration = Duration::from_millis(25);
/// How long a status-line message stays visible.
const MESSAGE_TIME: Duration = Duration::from_secs(6);
/// How often output of panes nobody sees or waits on is looked at (agent activity, event
/// subscribers): a few times a second instead of once per line.
const HIDDEN_OUTPUT_INTERVAL: Duration = Duration::from_millis(50);

/// What a timer turn did: anything the follow-up checks look at, and something a save
/// keeps (the structure is compared with the last only then).
struct Ticked {
    any: bool,
    structure: bool,
}

pub enum Event {
    /// A client said hello (boxed: the largest event by far).
    Attach(Box<Attaching>),
    ClientMsg(ClientId, ClientMsg),
    /// The client's connection ended; `Some(reason)` when it sent a malformed frame.
    ClientGone(ClientId, Option<String>),
    ApiOpen {
        id: ClientId,
        writer: ApiWriter,
        /// Who connected (for agent reports: which pane's process tree it is in).
        peer_pid: i32,
    },
    ApiRequest {
        id: ClientId,
        line: String,
    },
    /// The peer sent a line over the size limit.
    ApiTooLong(ClientId),
    ApiClosed(ClientId),
    Pty(TerminalId, PtyEvent),
    /// The background saver finished a save.
    Saved(crate::persist::SaveReport),
    /// The sessions a client's picker asked for (read on a thread of their own).
    Sessions(ClientId, Vec<crate::client::sessions::Row>),
    /// SIGTERM/SIGINT: stop cleanly (clients told, children hung up, socket removed).
    Signal(i32),
    /// What a machine's link process said (by the number it was started with).
    Link(u64, Box<machines::LinkEvent>),
}

/// A client that said hello and is handed to the server thread.
pub struct Attaching {
    pub id: ClientId,
    pub writer: ClientWriter,
    pub size: (u16, u16),
    /// The client's own key bindings, if it brought them.
    pub keys: Option<crate::protocol::ClientKeys>,
    /// Where it attaches from (DISPLAY…), for the panes started from now on.
    pub env: Option<BTreeMap<String, String>>,
    /// The folder the client runs in (local clients only).
    pub cwd: Option<std::path::PathBuf>,
    /// The client's socket, read by the server thread from now on, and the bytes already
    /// read past the hello.
    pub reader: std::os::unix::net::UnixStream,
    pub pending: Vec<u8>,
    /// It can be moved to another session (the session picker).
    pub switch: bool,
    /// The client's terminal, when it handed it over: keys are read from it here.
    pub tty: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// What the user's terminal reports keys with, and its colours.
    pub terminal: crate::protocol::terminal::TerminalInfo,
    /// It takes numbered frames: the token its reply named the attachment with.
    pub token: Option<String>,
    /// It comes back after its link dropped: where its screen stands.
    pub resume: Option<crate::protocol::Resume>,
}

/// The server: the loop and the parts it owns. Each part is a type of its own, with the
/// fields only it should touch: what the session is ([`Session`]), who is attached
/// ([`Clients`]), the API connections, agents' watchers, persistence, the event queue, the
/// listening socket, the session lock and the server's own life.
pub struct Server {
    pub(crate) session: Session,
    pub(crate) clients: Clients,
    pub(crate) api: api::ApiState,
    pub(crate) agents: Agents,
    pub(crate) persist: Option<persist::Persistence>,
    /// The saved machines' links and what each last said.
    pub(crate) machines: machines::Machines,
    events: Events,
    listen: Listen,
    /// The session's lock, held for the server's life (and handed on in a handoff).
    lock: Option<SessionLock>,
    life: Life,
}

/// What watches agents: states without hooks, samples from /proc, notifications.
#[derive(Default)]
pub(crate) struct Agents {
    pub(crate) activity: api::Activity,
    /// Agents without hooks or screen rules, read from /proc and their output.
    pub(crate) sampling: api::Sampling,
    /// Notifications and bells: their limits and the user's command (`notify`).
    pub(crate) notify: notify::Notifier,
}

/// The event queue every thread sends to, and the pipe that wakes this one.
struct Events {
    tx: EventTx,
    rx: Receiver<Event>,
    /// Woken by every event sent through `tx`.
    wake: crate::sys::WakePipe,
}

/// Where connections come from.
struct Listen {
    acceptor: Option<Acceptor>,
    /// Connection ids continue from here when accepting restarts (a rolled-back handoff).
    next_conn_id: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// The server's own life: since when, whether it is stopping, whether it handed off.
struct Life {
    started: Instant,
    stopping: Option<String>,
    /// The session now belongs to another server: stop without touching any program.
    handed_off: bool,
    /// A live handoff asked for while clients' input waited to be handled: it starts once
    /// that input is in the panes (the new server could not take it over), or at the
    /// deadline.
    handoff_after_input: Option<handoff::Deferred>,
    /// When the heaps' free pages are given back: after changes to the session's
    /// structure (a burst of new panes or requests frees much it made on the way).
    trim: trim::HeapTrim,
}

impl Server {
    pub fn new(
        session: SessionName,
        socket: PathBuf,
        config: Config,
        bindings: Bindings,
    ) -> Server {
        let (tx, rx) = mpsc::channel();
        let wake = crate::sys::WakePipe::new().expect("cannot create the server's wake pipe");
        let tx = EventTx::new(tx, wake.waker());
        Server {
            session: Session::new(session, socket, tx.clone(), config, bindings),
            clients: Clients::default(),
            api: api::ApiState::default(),
            agents: Agents::default(),
            persist: None,
            machines: machines::Machines::default(),
            events: Events { tx, rx, wake },
            listen: Listen {
                acceptor: None,
                next_conn_id: None,
            },
            lock: None,
            life: Life {
                started: Instant::now(),
                stopping: None,
                handed_off: false,
                handoff_after_input: None,
                trim: trim::HeapTrim::default(),
            },
        }
    }

    /// Serves until stopped or until the last pane is gone. Fails only if the acceptor
    /// thread cannot start; after that every error is handled inside the loop.
    pub fn run(mut self, listener: UnixListener) -> std::io::Result<()> {
        self.listen.acceptor = Some(Acceptor::spawn(listener, self.events.tx.clone(), None)?);
        self.machines_reload();
        // Events left queued by the last turn (their wake-ups are already drained).
        let mut backlog = false;
        while self.life.stopping.is_none() {
            let timeout = if backlog {
                Some(Duration::ZERO)
            } else {
                self.next_deadline()
                    .map(|d| d.saturating_duration_since(Instant::now()))
            };
            self.poll_inputs(timeout);
            // Take what is already queued before drawing (one frame for a burst), but not
            // without end: a flood of input or requests must not starve frames and timers.
            backlog = true;
            for _ in 0..MAX_EVENTS_PER_TURN {
                match self.events.rx.try_recv() {
                    Ok(ev) => self.handle_guarded(ev),
                    Err(TryRecvError::Empty) => {
                        backlog = false;
                        break;
                    }
                    Err(TryRecvError::Disconnected) => {
                        self.stop("the event queue closed");
                        break;
                    }
                }
                if self.life.stopping.is_some() {
                    break;
                }
            }
            self.tick_guarded();
        }
        self.shutdown();
        Ok(())
    }

    fn next_deadline(&self) -> Option<Instant> {
        let msg = self
            .clients
            .message
            .as_ref()
            .map(|(_, t)| *t + MESSAGE_TIME);
        let input = self
            .clients
            .by_id
            .values()
            .filter_map(|c| c.input_flush_at)
            .min();
        // A client with input left is served again at once: no sleeping in between; one
        // whose paste waits for its pane to read, soon.
        let backlog = self
            .clients
            .by_id
            .iter()
            .filter(|(_, c)| !c.backlog.is_empty())
            .map(|(id, _)| self.input_retry(*id).unwrap_or_else(Instant::now))
            .min();
        let wait = self.next_wait_deadline();
        let activity = self.next_activity_deadline();
        // A client whose last frame could not be queued gets another try soon.
        let behind = self
            .clients
            .by_id
            .values()
            .any(|c| c.behind)
            .then(|| Instant::now() + BEHIND_RETRY);
        let save = self.persist_deadline();
        let quiet = self.agent_quiet_deadline();
        let mirrors = self.api.streams.deadline();
        [
            self.life.trim.due(),
            self.session.hidden_output_at,
            self.clients.frame_due,
            self.clients.sync_due,
            self.clients.clock_due,
            self.names_deadline(),
            msg,
            input,
            wait,
            activity,
            save,
            behind,
            quiet,
            mirrors,
            backlog,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A bug in one handler must not take every pane down with the server: the panic is
    /// logged and the server keeps serving.
    fn handle_guarded(&mut self, ev: Event) {
        // Output notifications cannot change the structure; everything else may.
        let structural = !matches!(
            ev,
            Event::Pty(
                _,
                PtyEvent::Output | PtyEvent::Bell | PtyEvent::Clipboard(_)
            )
        );
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handle(ev);
            if structural {
                self.note_seen();
                self.tell_focus();
                self.update_lending();
                self.update_background();
                self.prune_mirrors();
                self.publish_structure();
                self.persist_note_change();
                self.life.trim.changed(Instant::now());
            }
        }));
        if result.is_err() {
            log::error!(
                "server",
                "an internal error was caught; the session continues"
            );
            self.say("internal error (see the server log); the session continues");
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Attach(a) => self.attach(*a),
            Event::ClientMsg(id, msg) => self.client_msg(id, msg),
            Event::ClientGone(id, reason) => {
                match reason {
                    Some(reason) => {
                        log::warn!(format_args!("client {id}"), "closing connection: {reason}")
                    }
                    None => log::debug!(format_args!("client {id}"), "left"),
                }
                if let Some(mut c) = self.clients.by_id.remove(&id) {
                    self.clients.park(c.frames.take(), c.prev.take());
                    self.abandon_paste(c.paste);
                }
                self.client_left(id);
            }
            Event::ApiOpen {
                id,
                writer,
                peer_pid,
            } => self.api.open(id, writer, peer_pid),
            Event::ApiRequest { id, line } => self.api_request(id, &line),
            Event::ApiTooLong(id) => self.api.too_long(id),
            Event::ApiClosed(id) => self.api.closed(id),
            Event::Pty(tid, pev) => self.pty_event(tid, pev),
            Event::Saved(report) => self.persist_saved(report),
            Event::Sessions(id, rows) => self.sessions_read(id, rows),
            Event::Signal(sig) => self.stop(&format!("server stopped by signal {sig}")),
            Event::Link(id, ev) => self.link_event(id, *ev),
        }
    }

    fn client_msg(&mut self, id: ClientId, msg: ClientMsg) {
        match msg {
            ClientMsg::Input(bytes) => {
                self.make_active(id);
                self.client_input(id, &bytes);
            }
            ClientMsg::Resize(cols, rows) => {
                let (cols, rows) = panes::sane_size((cols, rows));
                if let Some(c) = self.clients.by_id.get_mut(&id) {
                    c.size = (cols, rows);
                    c.prev = None;
                }
                self.make_active(id);
                let size = (cols, rows);
                self.set_size(size);
                self.request_render();
            }
            ClientMsg::Detach => self.detach(id, "detached"),
            ClientMsg::Ping => {
                if let Some(c) = self.clients.by_id.get(&id) {
                    c.writer.try_send(ServerMsg::Pong.encode());
                }
            }
        }
    }

    /// The most recently active client decides the session size.
    fn make_active(&mut self, id: ClientId) {
        if let Some(size) = self.clients.make_active(id) {
            self.set_size(size);
        }
    }

    pub(crate) fn detach(&mut self, id: ClientId, why: &str) {
        if let Some(c) = self.clients.by_id.remove(&id) {
            let text = format!("{why} (from session {})", self.session.name);
            c.writer.send_last(ServerMsg::Exit(text).encode());
            self.abandon_paste(c.paste);
        }
        self.client_left(id);
    }

    /// After a client left: if it set the session size, the most recent remaining client
    /// does now.
    fn client_left(&mut self, id: ClientId) {
        if let Some(size) = self.clients.left(id) {
            self.set_size(size);
        }
    }

    pub(crate) fn broadcast_raw(&mut self, bytes: &[u8]) {
        self.clients.broadcast_raw(bytes);
    }

    pub(crate) fn say(&mut self, text: impl Into<String>) {
        self.clients.say(text.into());
    }

    pub(crate) fn stop(&mut self, why: &str) {
        self.life.stopping = Some(why.to_string());
    }

    pub(crate) fn request_render(&mut self) {
        self.clients.request_frame();
    }

    /// Timers can run key bindings (a held escape sequence) and draw frames: they get the
    /// same protection and the same follow-up as events.
    fn tick_guarded(&mut self) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Only after timers that may have changed something: an idle server must not
            // wake itself (the structure comparison would otherwise re-arm its own timer).
            // After the input of this turn and any escape sequence given up on by tick.
            let detections = self.agents.activity.detections;
            let ticked = self.tick();
            self.handoff_if_input_done();
            if ticked.any && self.life.stopping.is_none() {
                self.note_seen();
                self.update_lending();
                self.update_background();
                self.publish_structure();
                // Output and agents' states alone change nothing a save keeps, only an
                // agent found or gone does: the comparison captures every pane, and 100
                // panes of 1,000 printing now and then would have it run 10 times a
                // second.
                if ticked.structure || detections != self.agents.activity.detections {
                    self.persist_note_change();
                }
            }
        }));
        if result.is_err() {
            log::error!(
                "server",
                "an internal error was caught in a timer; the session continues"
            );
            self.clients.frame_due = None;
        }
    }

    /// Runs what is due: whether any of it may have changed the session (keys run, waits
    /// or agents looked at, output taken in), and whether something a save keeps.
    fn tick(&mut self) -> Ticked {
        let now = Instant::now();
        // (What may have changed the structure a save keeps: key bindings, answered
        // waits, events sent; agents found or gone are counted apart.)
        let mut changed = false;
        let due: Vec<ClientId> = self
            .clients
            .by_id
            .iter()
            // (Not while the rest of its input is still waiting here: it may complete the
            // sequence.)
            .filter(|(_, c)| c.input_flush_at.is_some_and(|t| t <= now) && c.backlog.is_empty())
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.flush_input(id);
            changed = true;
        }
        if self.next_wait_deadline().is_some_and(|d| d <= now) {
            self.recheck_waits(None);
            changed = true;
        }
        if self.life.trim.take_due(now) {
            self.clients.release_spares();
            crate::sys::startup::trim_heaps();
        }
        if self.session.hidden_output_at.is_some_and(|d| d <= now) {
            self.session.hidden_output_at = None;
            for tid in std::mem::take(&mut self.session.hidden_output) {
                let taken = self
                    .session
                    .runtimes
                    .get(tid)
                    .is_some_and(|rt| rt.handle.take_dirty());
                if taken {
                    self.output_seen(tid);
                }
            }
        }
        if self.next_activity_deadline().is_some_and(|d| d <= now) {
            self.flush_activity();
            changed = true;
        }
        if self.persist_deadline().is_some_and(|d| d <= now) {
            self.persist_tick(now);
        }
        let mut agents = false;
        if self.agent_quiet_deadline().is_some_and(|d| d <= now) {
            self.agent_quiet_tick(now);
            agents = true;
        }
        if self.names_deadline().is_some_and(|d| d <= now) {
            self.names_tick(now);
        }
        if self.api.streams.deadline().is_some_and(|d| d <= now) {
            self.mirrors_due(now);
            changed = true;
        }
        if self.clients.clock_due.is_some_and(|d| d <= now) {
            self.clients.clock_due = None;
            self.request_render();
        }
        if let Some((_, t)) = &self.clients.message {
            if now >= *t + MESSAGE_TIME {
                self.clients.message = None;
                self.request_render();
            }
        }
        if self.clients.by_id.values().any(|c| c.behind) {
            self.request_render();
        }
        if self.clients.sync_due.is_some_and(|d| d <= now) {
            self.clients.sync_due = None;
            self.request_render();
        }
        if matches!(self.clients.frame_due, Some(d) if d <= now) {
            self.clients.frame_due = None;
            self.render();
            // Every frame takes a token, one that sent nothing too (else a program that
            // keeps rewriting what is already shown would get a frame per read).
            self.clients.frame_clock = self.clients.frame_clock.max(now) + FRAME_INTERVAL;
        }
        // (Output taken in anywhere: here or by an event since the last turn.)
        let output = std::mem::take(&mut self.session.output_taken);
        Ticked {
            any: changed || agents || output,
            structure: changed,
        }
    }

    fn shutdown(&mut self) {
        let why = self
            .life
            .stopping
            .clone()
            .unwrap_or_else(|| "server stopped".into());
        log::info!("server", "stopping: {why}");
        self.agents.notify.stop();
        // Our copy of a lent terminal must not keep it open while its program is hung up.
        self.clients.lend.unlend();
        if self.life.handed_off {
            // The socket, the files and every program belong to the new server now; the
            // runtimes are set to preserve, so dropping them only closes our copies.
            for (_, rt) in self.session.runtimes.drain() {
                rt.handle.shutdown_and_join();
            }
            return;
        }
        let ids: Vec<ClientId> = self.clients.by_id.keys().copied().collect();
        for id in ids {
            if let Some(c) = self.clients.by_id.remove(&id) {
                c.writer.send_last(ServerMsg::Exit(why.clone()).encode());
            }
        }
        let _ = std::fs::remove_file(&self.session.socket);
        for old in std::mem::take(&mut self.session.old_names) {
            old.remove();
        }
        // Saved while every program still runs, so cwds and commands can be read.
        self.persist_final();
        // Stop every terminal in parallel: each actor hangs up its child, waits a grace
        // period, then kills; joining them all bounds the total to one grace period.
        let runtimes = self.session.runtimes.drain();
        let handles: Vec<_> = runtimes.into_iter().map(|(_, rt)| rt.handle).collect();
        for h in &handles {
            h.shutdown();
        }
        for h in handles {
            h.shutdown_and_join();
        }
    }
}
