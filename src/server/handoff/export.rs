//! The old server's side of a live handoff: a transaction over the parts of the server
//! it borrows ([`Parts`]), run on the server thread from start to end — nothing else
//! happens in the session meanwhile (clients were told to come back).
//!
//! [`Handoff::run`] validates, exports (every step before `committed`, each of which can
//! be undone), then commits; on any failure before `committed` it rolls back: the new
//! process is killed, every pane resumes, the public socket is bound again if it was
//! given up. After `committed` the new server owns the session.

use crate::log;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{
    recv_word, send, Ended, HandoffError, Manifest, PaneRuntime, HANDOFF_VERSION, TOKEN_ENV,
};
use crate::model::ids::TerminalId;
use crate::paths;
use crate::protocol::frame::ServerMsg;
use crate::protocol::{version, PROTOCOL_VERSION};
use crate::pty::Paused;
use crate::server::api::ApiState;
use crate::server::conn::Acceptor;
use crate::server::start::SessionLock;
use crate::server::{ClientId, Clients, EventTx, Listen, Session};

/// All panes together get this long to stop reading.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(2);
/// The new process must connect within this time.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Each step's answer must come within this time (plus a little per pane for `restored`).
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
const PER_PANE: Duration = Duration::from_millis(20);
/// How long the clients' writers get to deliver "reconnect" (a stuck client gets a closed
/// connection instead, and reconnects like after any drop if it can).
const CLIENT_NOTICE_TIMEOUT: Duration = Duration::from_secs(1);

/// What `server.live_handoff` asks for.
pub struct Request {
    pub binary: PathBuf,
    pub expected_version: Option<String>,
    pub expected_protocol: Option<u32>,
}

/// A completed handoff, for the reply and the docs' figures.
pub struct Done {
    pub pid: u32,
    pub version: String,
    pub protocol: u32,
    pub panes: usize,
    /// From the request to `owned`.
    pub total: Duration,
    /// From `committed` to `owned`: the stretch where neither side can take things back.
    pub window: Duration,
}

/// What a handoff borrows from the server, and all it may touch: the session (read
/// only: its panes are paused and described, not changed), the clients and API
/// connections it sends away, the listening socket it gives up, and what it hands on.
pub(in crate::server) struct Parts<'a> {
    pub(in crate::server) session: &'a Session,
    pub(in crate::server) clients: &'a mut Clients,
    pub(in crate::server) api: &'a mut ApiState,
    pub(in crate::server) listen: &'a mut Listen,
    /// For accepting connections again after a rollback.
    pub(in crate::server) events: &'a EventTx,
    /// The saver's generation and why it must not write (if so), carried on.
    pub(in crate::server) persist: (u64, Option<String>),
    pub(in crate::server) lock: Option<&'a SessionLock>,
}

/// One handoff: its parts, its request, and what to undo if it fails.
pub(in crate::server) struct Handoff<'a> {
    parts: Parts<'a>,
    req: Request,
    started: Instant,
    progress: Progress,
}

/// Undo information, filled in as steps happen.
#[derive(Default)]
struct Progress {
    child: Option<Child>,
    paused: Vec<TerminalId>,
    /// The public socket was given up (its acceptor stopped, maybe its file removed).
    released: bool,
    handoff_socket: Option<PathBuf>,
}

/// The session as exported and not yet committed: the new server holds a copy of
/// everything and waits for `committed`.
struct Exported {
    sock: UnixStream,
    pid: u32,
    version: String,
    protocol: u32,
    panes: usize,
    phases: Phases,
}

/// What is sent for the panes: the manifest, each pane's screen and unwritten input, and
/// (borrowed from the paused terminals) each master.
struct Described<'p> {
    manifest: Manifest,
    images: Vec<(Vec<u8>, Vec<u8>)>,
    masters: Vec<BorrowedFd<'p>>,
}

impl<'a> Handoff<'a> {
    pub(in crate::server) fn new(parts: Parts<'a>, req: Request) -> Handoff<'a> {
        Handoff {
            parts,
            req,
            started: Instant::now(),
            progress: Progress::default(),
        }
    }

    /// Hands the session to `req.binary`. On success this server must exit at once
    /// without touching any program (the caller does that); on error everything is as
    /// before and the error says what went wrong.
    pub(in crate::server) fn run(mut self, requester: ClientId) -> Result<Done, HandoffError> {
        self.validate()?;
        // The terminals' actors read them again before they are paused and moved.
        self.parts.clients.lend.suspend();
        // A bug in a step must still roll back (the server's own panic guard would leave
        // every pane paused).
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let exported = self.export(requester)?;
            self.commit(exported)
        }))
        .unwrap_or(Err(HandoffError::Internal));
        match outcome {
            Ok(done) => {
                if let Some(p) = self.progress.handoff_socket.take() {
                    let _ = std::fs::remove_file(p);
                }
                Ok(done)
            }
            Err(e) => {
                self.roll_back();
                self.parts.clients.lend.resume();
                log::error!("handoff", "rolled back: {e}");
                Err(e)
            }
        }
    }

    /// Everything that can be checked before anything changes.
    fn validate(&self) -> Result<(), HandoffError> {
        let req = &self.req;
        let meta = std::fs::metadata(&req.binary).map_err(|cause| HandoffError::NoBinary {
            path: req.binary.clone(),
            cause,
        })?;
        if !meta.is_file()
            || nix::unistd::access(&req.binary, nix::unistd::AccessFlags::X_OK).is_err()
        {
            return Err(HandoffError::NotExecutable(req.binary.clone()));
        }
        // Each pane's master travels as one more descriptor in both processes.
        let panes = self.parts.session.runtimes.len();
        let needed = crate::sys::open_fds().len() + panes + 64;
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_err(HandoffError::NoLimit)?;
        if needed as u64 > soft {
            return Err(HandoffError::TooManyFiles {
                panes,
                needed,
                soft,
            });
        }
        Ok(())
    }

    /// Every step before `committed`: each is recorded in `progress`, so a failure at any
    /// point can be rolled back.
    fn export(&mut self, requester: ClientId) -> Result<Exported, HandoffError> {
        // 1. A private socket and a token.
        let session = self.parts.session;
        let sock_path = paths::handoff_socket_path(&session.name, std::process::id());
        let _ = std::fs::remove_file(&sock_path);
        let listener = UnixListener::bind(&sock_path).map_err(HandoffError::io(format!(
            "cannot create {}",
            sock_path.display()
        )))?;
        self.progress.handoff_socket = Some(sock_path.clone());
        std::fs::set_permissions(&sock_path, std::fs::Permissions::from_mode(0o600)).map_err(
            HandoffError::io(format!("cannot protect {}", sock_path.display())),
        )?;
        let token = super::token().map_err(HandoffError::io("cannot make a token"))?;

        // 2. Nobody else is served from here on.
        self.send_everyone_away(requester);

        // 3. Every pane stops reading: from here on, unread output waits in the kernel.
        let paused = self.pause_all()?;
        let mut phases = Phases::new(self.started);
        phases.mark("quiesced");

        // 4. The session and each pane's state, in the snapshot's pane order.
        let described = self.describe(&paused)?;
        let panes = described.manifest.panes.len();
        phases.mark("captured");

        // 5. The new process.
        let mut cmd = Command::new(&self.req.binary);
        if let Some(user) = crate::sys::nofile::user_soft_limit() {
            cmd.env(crate::sys::nofile::ORIGINAL_ENV, user.to_string());
        }
        let child = cmd
            .args([
                "server",
                "import",
                "--session",
                session.name.as_str(),
                "--from",
            ])
            .arg(&sock_path)
            .env(TOKEN_ENV, &token)
            .stdin(Stdio::null())
            .spawn()
            .map_err(HandoffError::io(format!(
                "cannot start {}",
                self.req.binary.display()
            )))?;
        let pid = child.id();
        self.progress.child = Some(child);

        // 6. It connects and proves it is the one we started.
        let mut sock = accept_from(&listener, &mut self.progress, CONNECT_TIMEOUT)?;
        // Every write is bounded too: a new server that stops reading must not hang us.
        sock.set_write_timeout(Some(STEP_TIMEOUT))
            .map_err(HandoffError::io("handoff socket"))?;
        let hello = recv_word(&mut sock, STEP_TIMEOUT).map_err(HandoffError::NoHello)?;
        let (version, protocol) = check_hello(&hello, &token, &self.req)?;
        phases.mark("connected");

        // 7. The manifest and the screens; the new side checks it can take them.
        let json = serde_json::to_vec(&described.manifest).map_err(HandoffError::Manifest)?;
        send(&mut sock, &json).map_err(send_failed)?;
        for (image, pending) in &described.images {
            send(&mut sock, image).map_err(send_failed)?;
            send(&mut sock, pending).map_err(send_failed)?;
        }
        expect(&mut sock, "validated", STEP_TIMEOUT)?;
        phases.mark("validated");

        // 8. The descriptors: the session lock first, then every master.
        let lock = self.parts.lock.ok_or(HandoffError::NoLock)?;
        let mut fds = vec![lock.fd()];
        fds.extend(described.masters.iter().copied());
        crate::sys::fdpass::send_fds(&sock, &fds).map_err(send_failed)?;
        expect(
            &mut sock,
            "restored",
            STEP_TIMEOUT + PER_PANE * panes as u32,
        )?;
        phases.mark("restored");

        // 9. Give up the public socket; the new server binds it once it refuses here.
        let _ = std::fs::remove_file(&session.socket);
        send(&mut sock, b"released").map_err(send_failed)?;
        expect(&mut sock, "ready", STEP_TIMEOUT)?;
        phases.mark("ready");
        Ok(Exported {
            sock,
            pid,
            version,
            protocol,
            panes,
            phases,
        })
    }

    /// No new connections to a server on its way out: the socket stays (connecting is
    /// refused) until the new server replaces it. Clients come back by themselves once the
    /// new server listens (so the word must reach them before we go); API connections
    /// other than the requester's are closed.
    fn send_everyone_away(&mut self, requester: ClientId) {
        let Parts {
            session,
            clients,
            api,
            listen,
            ..
        } = &mut self.parts;
        if let Some(a) = listen.acceptor.take() {
            listen.next_conn_id = Some(a.stop());
        }
        self.progress.released = true;
        // A paste still coming in (its end not read yet) is closed here; what is left of
        // it reaches the new server as typed text.
        let pastes: Vec<_> = clients.by_id.values_mut().map(|c| c.paste.take()).collect();
        for paste in pastes {
            if let Err(e) = session.close_paste(paste) {
                clients.say(format!("input dropped: {e}"));
            }
        }
        let why = "live update in progress; reconnecting when it completes";
        let msg = ServerMsg::Reconnect(why.into()).encode();
        let writers: Vec<_> = std::mem::take(&mut clients.by_id)
            .into_values()
            .map(|c| c.writer)
            .collect();
        std::thread::scope(|s| {
            for w in writers {
                let msg = msg.clone();
                s.spawn(move || w.send_last_and_wait(msg, CLIENT_NOTICE_TIMEOUT));
            }
        });
        clients.active = None;
        api.end_for_handoff(requester);
    }

    /// Asks every pane to stop reading, all at once, then waits for them all (they stop
    /// in parallel). A terminal that is asked is counted as paused, so a rollback
    /// resumes it whatever it answered.
    fn pause_all(&mut self) -> Result<Vec<(TerminalId, Paused)>, HandoffError> {
        let runtimes = &self.parts.session.runtimes;
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        let mut tickets = Vec::new();
        let state = &self.parts.session.state;
        for tid in runtimes.ids() {
            let Some(rt) = runtimes.get(tid) else {
                continue;
            };
            // A finished pane has nothing to pause: only its screen moves.
            if state.exit_status(tid).is_some() {
                continue;
            }
            let ticket = rt
                .handle
                .request_pause()
                .map_err(|cause| HandoffError::Pause {
                    terminal: tid.0,
                    cause,
                })?;
            self.progress.paused.push(tid);
            tickets.push((tid, ticket));
        }
        let mut paused = Vec::new();
        for (tid, ticket) in tickets {
            let left = deadline.saturating_duration_since(Instant::now());
            let p = ticket.wait(left).map_err(|cause| HandoffError::Pause {
                terminal: tid.0,
                cause,
            })?;
            paused.push((tid, p));
        }
        Ok(paused)
    }

    /// The manifest, screens and masters of every paused pane; all panes or an error.
    fn describe<'p>(
        &self,
        paused: &'p [(TerminalId, Paused)],
    ) -> Result<Described<'p>, HandoffError> {
        let session = self.parts.session;
        let snapshot = session.capture(true);
        let mut panes = Vec::new();
        let mut emulators = Vec::new();
        let mut pending = Vec::new();
        let mut masters: Vec<BorrowedFd> = Vec::new();
        for ps in snapshot
            .workspaces
            .iter()
            .flat_map(|w| &w.tabs)
            .flat_map(|t| &t.panes)
        {
            let Some(tid) = session.terminal_of_pane_no(ps.id) else {
                continue;
            };
            let (Some(rt), Some(term)) =
                (session.runtimes.get(tid), session.state.terminals.get(&tid))
            else {
                continue;
            };
            let ended = term.exited.map(|status| Ended { status });
            let live = paused.iter().find(|(t, _)| *t == tid).map(|(_, p)| p);
            let pid = match (live, ended) {
                (Some(p), None) => {
                    let Some(pid) = rt.pid else {
                        continue;
                    };
                    pending.push(p.pending_input.clone());
                    masters.push(p.master.as_fd());
                    pid as i32
                }
                (None, Some(_)) => {
                    pending.push(Vec::new());
                    0
                }
                _ => continue,
            };
            panes.push(PaneRuntime {
                pane: ps.id,
                pid,
                rows: 0,
                cols: 0,
                agent_state: term.agent_state.clone(),
                agent_pid: term.agent_pid,
                report_seq: term.report_seq.clone(),
                hooked: term.hooked,
                agent_argv: term.agent_argv.clone(),
                agent_error: term.agent_error.clone(),
                agent_since_ms: term.agent_since_ms(),
                seen: session
                    .state
                    .pane_of_terminal(tid)
                    .and_then(|p| session.state.panes.get(&p))
                    .is_none_or(|p| p.seen),
                ended,
            });
            emulators.push(rt.emulator.clone());
        }
        // Images are the bulk of the work: taken on every core.
        let encoded = super::parallel_map(&emulators, |e| crate::pty::lock(e).encoded_image());
        let mut images = Vec::with_capacity(encoded.len());
        for ((pane, (rows, cols, image)), input) in panes.iter_mut().zip(encoded).zip(pending) {
            pane.rows = rows;
            pane.cols = cols;
            images.push((image, input));
        }
        if panes.len() != session.runtimes.len() {
            return Err(HandoffError::Undescribed {
                described: panes.len(),
                all: session.runtimes.len(),
            });
        }
        let (persist_generation, persist_read_only) = self.parts.persist.clone();
        let manifest = Manifest {
            handoff: HANDOFF_VERSION,
            source_version: version().into(),
            source_protocol: PROTOCOL_VERSION,
            expected_version: self.req.expected_version.clone(),
            expected_protocol: self.req.expected_protocol,
            session: session.name.as_str().into(),
            snapshot,
            size: session.size,
            sidebar: session.sidebar,
            persist_generation,
            persist_read_only,
            panes,
        };
        Ok(Described {
            manifest,
            images,
            masters,
        })
    }

    /// Step 10, with no way back: the new server owns the session once it reads
    /// `committed`, and this side only makes sure no program is touched on exit.
    fn commit(&mut self, mut ex: Exported) -> Result<Done, HandoffError> {
        send(&mut ex.sock, b"committed").map_err(send_failed)?;
        let committed = Instant::now();
        self.progress.child = None;
        let runtimes = &self.parts.session.runtimes;
        for tid in runtimes.ids() {
            if let Some(rt) = runtimes.get(tid) {
                rt.handle.preserve(true);
            }
        }
        if let Err(e) = expect(&mut ex.sock, "owned", STEP_TIMEOUT) {
            // Nothing to undo: the new server has the session (or died with it).
            log::warn!(
                "handoff",
                "committed, but the new server did not confirm: {e}"
            );
        }
        ex.phases.mark("owned");
        log::info!("handoff", "{} panes; {}", ex.panes, ex.phases.report());
        Ok(Done {
            pid: ex.pid,
            version: ex.version,
            protocol: ex.protocol,
            panes: ex.panes,
            total: self.started.elapsed(),
            window: committed.elapsed(),
        })
    }

    /// Undoes whatever `progress` says happened.
    fn roll_back(&mut self) {
        let progress = std::mem::take(&mut self.progress);
        if let Some(mut child) = progress.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        let Parts {
            session,
            clients,
            listen,
            events,
            ..
        } = &mut self.parts;
        if progress.released {
            // The new process is gone, so a socket file it may have bound is stale.
            match crate::server::bind_socket(&session.socket) {
                Ok(listener) => {
                    match Acceptor::spawn(listener, (*events).clone(), listen.next_conn_id.take()) {
                        Ok(a) => listen.acceptor = Some(a),
                        Err(e) => log::error!("handoff", "cannot accept connections again: {e}"),
                    }
                }
                Err(e) => log::error!("handoff", "cannot listen again: {e:#}"),
            }
        }
        for tid in progress.paused {
            if let Some(rt) = session.runtimes.get(tid) {
                rt.handle.preserve(false);
                rt.handle.resume();
            }
        }
        if let Some(p) = progress.handoff_socket {
            let _ = std::fs::remove_file(p);
        }
        clients.request_frame();
    }
}

fn send_failed(cause: std::io::Error) -> HandoffError {
    HandoffError::Io {
        what: "cannot send to the new server".into(),
        cause,
    }
}

/// When each step ended, for the log (where a slow handoff spends its time).
struct Phases {
    last: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    fn new(started: Instant) -> Phases {
        Phases {
            last: started,
            done: Vec::new(),
        }
    }

    fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.done.push((name, now - self.last));
        self.last = now;
    }

    fn report(&self) -> String {
        let parts: Vec<String> = self
            .done
            .iter()
            .map(|(n, d)| format!("{n} +{:.1} ms", d.as_secs_f64() * 1000.0))
            .collect();
        parts.join(", ")
    }
}

/// Waits for the new process to connect, noticing if it exits first.
fn accept_from(
    listener: &UnixListener,
    progress: &mut Progress,
    timeout: Duration,
) -> Result<UnixStream, HandoffError> {
    listener
        .set_nonblocking(true)
        .map_err(HandoffError::io("handoff socket"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(HandoffError::io("handoff socket"))?;
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(HandoffError::io("handoff socket")(e)),
        }
        if let Some(child) = progress.child.as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                progress.child = None;
                return Err(HandoffError::ExitedEarly(status));
            }
        }
        if Instant::now() >= deadline {
            return Err(HandoffError::NoConnection(timeout.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `herdr-handoff <handoff version> <token> <version> <protocol>`.
fn check_hello(line: &str, token: &str, req: &Request) -> Result<(String, u32), HandoffError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [magic, hv, tok, version, protocol] = words[..] else {
        return Err(HandoffError::NotAHello(line.to_string()));
    };
    if magic != "herdr-handoff" || !super::same_token(tok, token) {
        return Err(HandoffError::WrongToken);
    }
    if hv != HANDOFF_VERSION.to_string() {
        return Err(HandoffError::HandoffVersion(hv.to_string()));
    }
    let protocol: u32 = protocol
        .parse()
        .map_err(|_| HandoffError::BadProtocol(protocol.to_string()))?;
    if let Some(want) = &req.expected_version {
        if want != version {
            return Err(HandoffError::Version {
                got: version.to_string(),
                want: want.clone(),
            });
        }
    }
    if let Some(want) = req.expected_protocol {
        if want != protocol {
            return Err(HandoffError::Protocol {
                got: protocol,
                want,
            });
        }
    }
    Ok((version.to_string(), protocol))
}

/// Reads the next step word; anything else (a refusal with its reason) is an error.
fn expect(
    sock: &mut UnixStream,
    word: &'static str,
    timeout: Duration,
) -> Result<(), HandoffError> {
    let got = recv_word(sock, timeout).map_err(|cause| HandoffError::NoAnswer { word, cause })?;
    if got == word {
        Ok(())
    } else {
        Err(HandoffError::Refused { got, word })
    }
}
