//! Connections: the accept thread, the hello handshake, and per-connection reader/writer
//! threads. Nothing here touches session state: everything becomes an [`Event`] for the
//! server's single owner thread.
//!
//! Invariants: a connection from another uid is refused before reading a byte; at most
//! [`MAX_PENDING_HELLOS`] connections wait for their hello (a thread each), any beyond is
//! refused at once by the accept thread; a malformed hello or frame closes that connection
//! only; a client that stops reading never blocks the server (its writer queue is bounded
//! and frames are skipped instead); API replies are bounded per connection and in all
//! (`api`).

use crate::log;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::protocol::frame::ServerMsg;
use crate::protocol::{check_hello, HelloReply, Role, FEATURE_TTY, MAX_HELLO_LEN};

use super::{Event, EventTx};

mod api;
use api::api_loop;
pub use api::{
    api_budget_spent, ApiWriter, Refused, API_QUEUE_TOTAL_BYTES, MAX_API_LINE, MAX_API_REPLY,
};

/// Frames queued per client before the server starts skipping frames for it.
const CLIENT_QUEUE_FRAMES: usize = 8;
/// A peer must finish its hello within this time. Every herdr client and script writes
/// its hello right after connecting (the remote bridge has it waiting on its stdin), so
/// this only needs to cover a loaded machine; it bounds how long a silent peer holds one
/// of the [`MAX_PENDING_HELLOS`] places.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections that may be waiting for their hello at once (each has a thread until it
/// finishes). Beyond it a new connection is answered with an error and closed at once, so
/// a flood of silent connections costs neither threads nor descriptors; honest peers
/// finish their hello in milliseconds and rarely hold a place at all.
pub const MAX_PENDING_HELLOS: usize = 64;
/// API connections that may be open at once (each has two threads and two descriptors
/// for its life). Scripts' calls are short; `herdr events` and agents' subscriptions are
/// the long ones, far fewer than this.
pub const MAX_API_CONNECTIONS: usize = 512;

pub type ClientId = u64;

/// The server's handle on one interactive client's outgoing bytes: frames (to its
/// terminal when it handed that over, else over the connection) and messages.
///
/// A write is made straight from the server thread when nothing is queued and the
/// socket or terminal takes it without blocking (no thread hop on the keystroke path);
/// otherwise it goes to the writer thread's bounded queue. The lock keeps the two
/// writers in order: the writer thread holds it while writing, the server thread only
/// tries it. One queue for both destinations keeps a frame ahead of the exit after it.
pub struct ClientWriter {
    tx: SyncSender<Out>,
    stream: UnixStream,
    tty: Option<Arc<OwnedFd>>,
    shared: Arc<WriterShared>,
}

/// Bytes for one of a client's two destinations.
enum Out {
    Socket(Vec<u8>),
    Tty(Vec<u8>),
}

#[derive(Default)]
struct WriterShared {
    /// Held by whoever is writing.
    lock: Mutex<()>,
    /// Items queued for the writer thread and not yet written.
    queued: AtomicUsize,
    /// The connection is being closed: a write waiting on the terminal gives up.
    closed: AtomicBool,
}

impl ClientWriter {
    /// Sends or queues an encoded message; false if the client is behind (not sent).
    pub fn try_send(&self, bytes: Vec<u8>) -> bool {
        self.send(Out::Socket(bytes))
    }

    /// Sends or queues terminal output (a frame, a bell); false if the client is behind.
    pub fn send_output(&self, bytes: Vec<u8>) -> bool {
        match self.tty {
            Some(_) => self.send(Out::Tty(bytes)),
            None => self.send(Out::Socket(ServerMsg::Output(bytes).encode())),
        }
    }

    /// Sends or queues a whole frame with its number (a client that takes numbered
    /// frames draws over the socket); false if the client is behind.
    pub fn send_frame(&self, seq: u64, bytes: Vec<u8>) -> bool {
        self.send(Out::Socket(ServerMsg::Frame(seq, bytes).encode()))
    }

    fn send(&self, out: Out) -> bool {
        if self.shared.queued.load(Ordering::Acquire) == 0 {
            if let Ok(_guard) = self.shared.lock.try_lock() {
                if self.shared.queued.load(Ordering::Acquire) == 0 {
                    let (written, len) = match &out {
                        Out::Socket(b) => (send_dontwait(&self.stream, b), b.len()),
                        Out::Tty(b) => (
                            self.tty.as_ref().map_or(0, |t| write_dontwait(t, b)),
                            b.len(),
                        ),
                    };
                    if written == len {
                        return true;
                    }
                    // The rest must follow before anything else: queue it while we still
                    // hold the lock, so the writer thread writes it next.
                    return self.enqueue(match out {
                        Out::Socket(b) => Out::Socket(b[written..].to_vec()),
                        Out::Tty(b) => Out::Tty(b[written..].to_vec()),
                    });
                }
            }
        }
        self.enqueue(out)
    }

    fn enqueue(&self, out: Out) -> bool {
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        match self.tx.try_send(out) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.shared.queued.fetch_sub(1, Ordering::AcqRel);
                false
            }
        }
    }

    /// Ends the connection (unblocks both threads).
    pub fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// For a last message that must arrive (the server is about to be replaced): waits up
    /// to `timeout` for room and then for everything queued to be written, then closes.
    pub fn send_last_and_wait(self, bytes: Vec<u8>, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while !self.enqueue(Out::Socket(bytes.clone())) {
            if std::time::Instant::now() >= deadline {
                self.close();
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let shared = self.shared.clone();
        drop(self.tx);
        while shared.queued.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Queues a last message, waiting briefly for room; then closes the write side once it
    /// is flushed.
    pub fn send_last(self, bytes: Vec<u8>) {
        // Never wait on the server thread: a client whose queue is full is stuck, and is
        // simply disconnected (the reason would not reach it anyway).
        if !self.enqueue(Out::Socket(bytes)) {
            self.close();
        }
        drop(self.tx);
    }
}

/// How long the accept thread waits before trying again when the process has no
/// descriptor left for a new connection.
const EXHAUSTED_RETRY: Duration = Duration::from_millis(100);

/// The accept thread of the session socket. Connection ids keep counting across a
/// stop and a restart (a rolled-back handoff), so none is reused.
pub struct Acceptor {
    stop: Arc<AtomicBool>,
    waker: crate::sys::Waker,
    thread: Option<std::thread::JoinHandle<()>>,
    next_id: Arc<AtomicU64>,
}

impl Acceptor {
    pub fn spawn(
        listener: UnixListener,
        events: EventTx,
        next_id: Option<Arc<AtomicU64>>,
    ) -> std::io::Result<Acceptor> {
        listener.set_nonblocking(true)?;
        let wake = crate::sys::WakePipe::new()?;
        let waker = wake.waker();
        let stop = Arc::new(AtomicBool::new(false));
        let next_id = next_id.unwrap_or_default();
        let (flag, ids) = (stop.clone(), next_id.clone());
        let pending = Arc::new(AtomicUsize::new(0));
        let api_open = Arc::new(AtomicUsize::new(0));
        let thread = std::thread::Builder::new()
            .name("herdr-accept".into())
            .spawn(move || {
                let mut exhausted = false;
                loop {
                    let ready = match crate::sys::poll_pty_and_wake(
                        listener.as_fd(),
                        &wake,
                        true,
                        false,
                        None,
                    ) {
                        Ok(r) => r,
                        Err(e) => {
                            log::error!("server", "cannot accept connections: {e}");
                            return;
                        }
                    };
                    if ready.woken || flag.load(Ordering::Acquire) {
                        return;
                    }
                    loop {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                if stream.set_nonblocking(false).is_err() {
                                    continue;
                                }
                                if !same_user(&stream) {
                                    continue; // another user's process: close without a word
                                }
                                let Some(place) = HelloPlace::take(&pending) else {
                                    refuse_busy(&stream);
                                    continue;
                                };
                                let id = ids.fetch_add(1, Ordering::AcqRel) + 1;
                                let (events, api_open) = (events.clone(), api_open.clone());
                                let _ = std::thread::Builder::new()
                                    .name(format!("herdr-conn-{id}"))
                                    .spawn(move || {
                                        handle_connection(id, stream, events, place, &api_open)
                                    });
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            // No descriptor left: the connection waits in the backlog, and the
                            // socket stays readable, so poll would return at once; wait a
                            // while (or for the stop) instead of spinning.
                            Err(e) if crate::sys::nofile::is_exhausted(&e) => {
                                if !exhausted {
                                    log::error!(
                                        "server",
                                        "cannot accept connections: {e}; retrying every {} ms",
                                        EXHAUSTED_RETRY.as_millis()
                                    );
                                    exhausted = true;
                                }
                                match crate::sys::poll_wake(&wake, Some(EXHAUSTED_RETRY)) {
                                    Ok(r) if !r.woken => break,
                                    _ => return,
                                }
                            }
                            // WouldBlock (all taken) or a failed connection: back to poll.
                            Err(_) => {
                                exhausted = false;
                                break;
                            }
                        }
                    }
                }
            })?;
        Ok(Acceptor {
            stop,
            waker,
            thread: Some(thread),
            next_id,
        })
    }

    /// Stops accepting and closes the listening socket (its file stays). Returns the id
    /// counter for a later restart.
    pub fn stop(mut self) -> Arc<AtomicU64> {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.next_id.clone()
    }
}

fn same_user(stream: &UnixStream) -> bool {
    let uid = nix::unistd::getuid().as_raw();
    matches!(crate::sys::peer_uid(stream.as_fd()), Ok(peer) if peer == uid)
}

/// One of the [`MAX_PENDING_HELLOS`] places, given back when dropped (the hello is done or
/// failed, or its thread could not start).
struct HelloPlace(Arc<AtomicUsize>);

impl HelloPlace {
    /// One of `max` places counted in `count`, given back when dropped.
    fn take_of(count: &Arc<AtomicUsize>, max: usize) -> Option<HelloPlace> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| HelloPlace(count.clone()))
    }

    fn take(pending: &Arc<AtomicUsize>) -> Option<HelloPlace> {
        HelloPlace::take_of(pending, MAX_PENDING_HELLOS)
    }
}

impl Drop for HelloPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Answers a connection that found every hello place taken, without waiting (the line is
/// far smaller than an empty socket buffer), and lets it close.
fn refuse_busy(stream: &UnixStream) {
    let reply = HelloReply::reject(format!(
        "the server has too many connections waiting for their hello ({MAX_PENDING_HELLOS}); \
         some process is opening connections without speaking: stop it, then retry"
    ));
    if let Ok(mut line) = serde_json::to_string(&reply) {
        line.push('\n');
        send_dontwait(stream, line.as_bytes());
    }
}

fn handle_connection(
    id: ClientId,
    stream: UnixStream,
    events: EventTx,
    place: HelloPlace,
    api_open: &Arc<AtomicUsize>,
) {
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    // One descriptor while the hello is pending: the second half is made only after it.
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let ok = (&mut reader)
        .take(MAX_HELLO_LEN as u64)
        .read_until(b'\n', &mut line)
        .is_ok();
    if !ok || line.last() != Some(&b'\n') {
        return;
    }
    let text = String::from_utf8_lossy(&line);
    let hello = match check_hello(text.trim()) {
        Ok(h) => h,
        Err(msg) => {
            let _ = write_line(reader.get_ref(), &HelloReply::reject(msg.to_string()));
            return;
        }
    };
    // Held for the connection's life.
    let api_place = match hello.role {
        Role::Api => match HelloPlace::take_of(api_open, MAX_API_CONNECTIONS) {
            Some(p) => Some(p),
            None => {
                let msg = format!(
                    "the server has too many API connections open ({MAX_API_CONNECTIONS}); \
                     close some (`herdr events`, scripts that keep a connection), then retry"
                );
                let _ = write_line(reader.get_ref(), &HelloReply::reject(msg.to_string()));
                return;
            }
        },
        Role::Client => None,
    };
    // A terminal is taken only from a client that waits for the reply before it sends
    // anything more (its descriptor must not be read as part of a buffered frame).
    let take_tty = hello.role == Role::Client && hello.tty && reader.buffer().is_empty();
    // Every descriptor the connection needs, before the reply: a server out of them says
    // so rather than accepting and then dropping the connection under a client that has
    // started to send. The terminal a client hands over comes after the reply: a place is
    // held for it until then.
    let copies = 2 + usize::from(take_tty);
    let mut halves = match (0..copies)
        .map(|_| reader.get_ref().try_clone())
        .collect::<std::io::Result<Vec<_>>>()
    {
        Ok(h) => h,
        Err(e) => {
            let msg = match crate::sys::nofile::is_exhausted(&e) {
                true => crate::sys::nofile::exhausted_message(),
                false => format!("the server cannot open this connection: {e}"),
            };
            let _ = write_line(reader.get_ref(), &HelloReply::reject(msg.to_string()));
            return;
        }
    };
    let held = take_tty.then(|| halves.pop());
    let (Some(write_half), Some(stream)) = (halves.pop(), halves.pop()) else {
        return;
    };
    let mut reply = HelloReply::accept();
    if take_tty {
        reply.features.push(FEATURE_TTY.into());
    }
    // Frames over the socket are numbered for a client that takes them; one that comes
    // back keeps its token (see `resume.rs`).
    reply.token = (hello.role == Role::Client && hello.frames && !take_tty)
        .then(|| match &hello.resume {
            Some(r) if super::resume::plausible_token(&r.token) => Some(r.token.clone()),
            _ => super::handoff::token().ok(),
        })
        .flatten();
    if write_line(reader.get_ref(), &reply).is_err() {
        return;
    }
    drop(held);
    let tty = match take_tty {
        true => match receive_tty(reader.get_ref()) {
            Ok(fd) => Some(Arc::new(fd)),
            Err(e) => {
                log::warn!(
                    format_args!("client {id}"),
                    "closing connection: no terminal after offering one: {e}"
                );
                return;
            }
        },
        false => None,
    };
    let _ = reader.get_ref().set_read_timeout(None);
    drop(place);
    match hello.role {
        Role::Client => client_loop(
            id,
            [stream, write_half],
            reader,
            (hello, reply.token),
            tty,
            events,
        ),
        Role::Api => api_loop(id, [stream, write_half], reader, events),
    }
    drop(api_place);
}

/// The terminal a client hands over after the reply (within the hello's time limit).
fn receive_tty(stream: &UnixStream) -> std::io::Result<OwnedFd> {
    let fd = crate::sys::fdpass::recv_fds(stream, 1)?
        .pop()
        .ok_or_else(|| std::io::Error::other("no descriptor"))?;
    if !crate::sys::tty::is_tty(fd.as_fd()) {
        return Err(std::io::Error::other("the descriptor is not a terminal"));
    }
    crate::sys::set_nonblocking(fd.as_fd())?;
    Ok(fd)
}

fn write_line<T: serde::Serialize>(mut stream: &UnixStream, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string(value).map_err(std::io::Error::other)?;
    text.push('\n');
    stream.write_all(text.as_bytes())
}

/// `halves`: the connection for the server thread, and for the writer thread.
fn client_loop(
    id: ClientId,
    [stream, write_half]: [UnixStream; 2],
    reader: BufReader<UnixStream>,
    (hello, token): (crate::protocol::Hello, Option<String>),
    tty: Option<Arc<OwnedFd>>,
    events: EventTx,
) {
    let size = hello.size.unwrap_or((80, 24));
    let (tx, rx) = mpsc::sync_channel(CLIENT_QUEUE_FRAMES);
    let shared = Arc::new(WriterShared::default());
    if spawn_writer(id, write_half, tty.clone(), rx, shared.clone()).is_err() {
        return;
    }
    let writer = ClientWriter {
        tx,
        stream,
        tty: tty.clone(),
        shared,
    };
    // From here the server thread reads the socket itself; what the hello's reader
    // already holds goes with it.
    let pending = reader.buffer().to_vec();
    let _ = events.send(Event::Attach(Box::new(super::Attaching {
        id,
        writer,
        size,
        keys: hello.keys,
        env: hello.env,
        cwd: hello.cwd,
        terminal: hello.terminal.unwrap_or_default(),
        switch: hello.switch,
        reader: reader.into_inner(),
        pending,
        tty,
        resume: hello.resume.filter(|_| token.is_some()),
        token,
    })));
}

fn spawn_writer(
    id: ClientId,
    mut stream: UnixStream,
    tty: Option<Arc<OwnedFd>>,
    rx: Receiver<Out>,
    shared: Arc<WriterShared>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("herdr-write-{id}"))
        .spawn(move || {
            for out in rx {
                let guard = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
                let ok = match (&out, &tty) {
                    (Out::Socket(b), _) => stream.write_all(b).is_ok(),
                    (Out::Tty(b), Some(t)) => write_all_tty(t, b, &shared.closed),
                    (Out::Tty(_), None) => true,
                };
                shared.queued.fetch_sub(1, Ordering::AcqRel);
                drop(guard);
                if !ok {
                    break;
                }
            }
            let _ = stream.shutdown(std::net::Shutdown::Write);
        })?;
    Ok(())
}

/// Writes all of `bytes` to a non-blocking terminal, waiting for room as needed; false
/// if the terminal fails or the connection is closed meanwhile.
fn write_all_tty(tty: &OwnedFd, mut bytes: &[u8], closed: &AtomicBool) -> bool {
    while !bytes.is_empty() {
        if closed.load(Ordering::Acquire) {
            return false;
        }
        match crate::sys::write_nb(tty.as_fd(), bytes) {
            Ok(Some(n)) => bytes = &bytes[n..],
            Ok(None) => {
                // A terminal that stopped reading (scroll lock, a frozen window): wait,
                // looking at `closed` now and then.
                let _ = crate::sys::poll_writable(tty.as_fd(), Duration::from_millis(200));
            }
            Err(_) => return false,
        }
    }
    true
}

/// Writes what the terminal takes right now; returns how many bytes went out.
fn write_dontwait(tty: &OwnedFd, bytes: &[u8]) -> usize {
    let mut done = 0;
    while done < bytes.len() {
        match crate::sys::write_nb(tty.as_fd(), &bytes[done..]) {
            Ok(Some(n)) if n > 0 => done += n,
            _ => break,
        }
    }
    done
}

/// Writes what the socket takes right now (MSG_DONTWAIT: this call only, the socket stays
/// blocking for the writer thread); returns how many bytes went out.
fn send_dontwait(stream: &UnixStream, bytes: &[u8]) -> usize {
    use nix::sys::socket::{send, MsgFlags};
    let mut done = 0;
    while done < bytes.len() {
        match send(
            stream.as_raw_fd(),
            &bytes[done..],
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
        ) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    done
}
