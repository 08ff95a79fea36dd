//! The old server's side of a live handoff. Runs on the server thread from start to end:
//! nothing else happens in the session meanwhile (clients were told to come back).
//!
//! Every step before `committed` can be undone, and [`Server::live_handoff`] undoes it
//! on any failure: the new process is killed, every pane resumes, the public socket is
//! bound again if it was given up. After `committed` the new server owns the session.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{recv_word, send, HandoffError, Manifest, PaneRuntime, HANDOFF_VERSION, TOKEN_ENV};
use crate::model::ids::TerminalId;
use crate::paths;
use crate::protocol::frame::ServerMsg;
use crate::protocol::{version, PROTOCOL_VERSION};
use crate::pty::Paused;
use crate::server::conn::Acceptor;
use crate::server::{ClientId, Server};

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

/// Undo information, filled in as steps happen.
#[derive(Default)]
struct Progress {
    child: Option<Child>,
    paused: Vec<TerminalId>,
    /// The public socket was given up (its acceptor stopped, maybe its file removed).
    released: bool,
    handoff_socket: Option<PathBuf>,
}

impl Server {
    /// Hands the session to `req.binary`. On success this server must exit at once
    /// without touching any program (the caller does that); on error everything is as
    /// before and the error says what went wrong.
    pub(crate) fn live_handoff(
        &mut self,
        requester: ClientId,
        req: Request,
    ) -> Result<Done, HandoffError> {
        let started = Instant::now();
        self.check_handoff(&req)?;
        // The terminals' actors read them again before they are paused and moved.
        self.clients.lend.suspend();
        let mut progress = Progress::default();
        // A bug in a step must still roll back (the server's own panic guard would leave
        // every pane paused).
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handoff_steps(requester, &req, &mut progress, started)
        }))
        .unwrap_or(Err(HandoffError::Internal));
        match outcome {
            Ok(done) => {
                if let Some(p) = progress.handoff_socket {
                    let _ = std::fs::remove_file(p);
                }
                Ok(done)
            }
            Err(e) => {
                self.roll_back(progress);
                self.clients.lend.resume();
                eprintln!("handoff: rolled back: {e}");
                Err(e)
            }
        }
    }

    /// Everything that can be checked before anything changes.
    fn check_handoff(&self, req: &Request) -> Result<(), HandoffError> {
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
        let needed = crate::sys::open_fds().len() + self.session.runtimes.len() + 64;
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_err(HandoffError::NoLimit)?;
        if needed as u64 > soft {
            return Err(HandoffError::TooManyFiles {
                panes: self.session.runtimes.len(),
                needed,
                soft,
            });
        }
        Ok(())
    }

    fn handoff_steps(
        &mut self,
        requester: ClientId,
        req: &Request,
        progress: &mut Progress,
        started: Instant,
    ) -> Result<Done, HandoffError> {
        // 1. A private socket and a token.
        let sock_path = paths::handoff_socket_path(&self.session.name, std::process::id());
        let _ = std::fs::remove_file(&sock_path);
        let listener = UnixListener::bind(&sock_path).map_err(HandoffError::io(format!(
            "cannot create {}",
            sock_path.display()
        )))?;
        progress.handoff_socket = Some(sock_path.clone());
        std::fs::set_permissions(&sock_path, std::fs::Permissions::from_mode(0o600)).map_err(
            HandoffError::io(format!("cannot protect {}", sock_path.display())),
        )?;
        let token = super::token().map_err(HandoffError::io("cannot make a token"))?;

        // 2. No new connections to a server on its way out: the socket stays (connecting
        // is refused) until the new server replaces it. Clients come back by themselves
        // once the new server listens (so the word must reach them before we go).
        if let Some(a) = self.listen.acceptor.take() {
            self.listen.next_conn_id = Some(a.stop());
        }
        progress.released = true;
        // A paste still coming in (its end not read yet) is closed here; what is left of
        // it reaches the new server as typed text.
        let pastes: Vec<_> = self
            .clients
            .by_id
            .values_mut()
            .map(|c| c.paste.take())
            .collect();
        for paste in pastes {
            self.abandon_paste(paste);
        }
        let why = "live update in progress; reconnecting when it completes";
        let msg = ServerMsg::Reconnect(why.into()).encode();
        let writers: Vec<_> = std::mem::take(&mut self.clients.by_id)
            .into_values()
            .map(|c| c.writer)
            .collect();
        std::thread::scope(|s| {
            for w in writers {
                let msg = msg.clone();
                s.spawn(move || w.send_last_and_wait(msg, CLIENT_NOTICE_TIMEOUT));
            }
        });
        self.clients.active = None;
        self.api.end_for_handoff(requester);

        // 3. Every pane stops reading: from here on, unread output waits in the kernel.
        // (All asked at once, then all awaited: they stop in parallel.) A terminal that
        // is asked is counted as paused, so a rollback resumes it whatever it answered.
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        let mut tickets = Vec::new();
        for tid in self.session.runtimes.ids() {
            let Some(rt) = self.session.runtimes.get(tid) else {
                continue;
            };
            let ticket = rt
                .handle
                .request_pause()
                .map_err(|cause| HandoffError::Pause {
                    terminal: tid.0,
                    cause,
                })?;
            progress.paused.push(tid);
            tickets.push((tid, ticket));
        }
        let mut paused: Vec<(TerminalId, Paused)> = Vec::new();
        for (tid, ticket) in tickets {
            let left = deadline.saturating_duration_since(Instant::now());
            let p = ticket.wait(left).map_err(|cause| HandoffError::Pause {
                terminal: tid.0,
                cause,
            })?;
            paused.push((tid, p));
        }

        let mut phases = Phases::new(started);
        phases.mark("quiesced");
        // 4. The session and each pane's state, in the snapshot's pane order.
        let snapshot = self.session.capture(true);
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
            let Some(tid) = self.terminal_of_pane_no(ps.id) else {
                continue;
            };
            let (Some(rt), Some(term), Some((_, p))) = (
                self.session.runtimes.get(tid),
                self.session.state.terminals.get(&tid),
                paused.iter().find(|(t, _)| *t == tid),
            ) else {
                continue;
            };
            let Some(pid) = rt.pid else {
                continue;
            };
            panes.push(PaneRuntime {
                pane: ps.id,
                pid: pid as i32,
                rows: 0,
                cols: 0,
                agent_state: term.agent_state.clone(),
                agent_pid: term.agent_pid,
                report_seq: term.report_seq.clone(),
                hooked: term.hooked,
                agent_argv: term.agent_argv.clone(),
                agent_error: term.agent_error.clone(),
                agent_since_ms: term.agent_since_ms(),
                seen: self
                    .session
                    .state
                    .pane_of_terminal(tid)
                    .and_then(|p| self.session.state.panes.get(&p))
                    .is_none_or(|p| p.seen),
            });
            emulators.push(rt.emulator.clone());
            pending.push(p.pending_input.clone());
            masters.push(p.master.as_fd());
        }
        // Images are the bulk of the work: taken on every core.
        let encoded = super::parallel_map(&emulators, |e| crate::pty::lock(e).encoded_image());
        let mut images = Vec::with_capacity(encoded.len());
        for ((pane, (rows, cols, image)), input) in panes.iter_mut().zip(encoded).zip(pending) {
            pane.rows = rows;
            pane.cols = cols;
            images.push((image, input));
        }
        if panes.len() != self.session.runtimes.len() {
            return Err(HandoffError::Undescribed {
                described: panes.len(),
                all: self.session.runtimes.len(),
            });
        }
        let manifest = Manifest {
            handoff: HANDOFF_VERSION,
            source_version: version().into(),
            source_protocol: PROTOCOL_VERSION,
            expected_version: req.expected_version.clone(),
            expected_protocol: req.expected_protocol,
            session: self.session.name.as_str().into(),
            snapshot,
            size: self.session.size,
            sidebar: self.session.sidebar,
            persist_generation: self.persist.as_ref().map_or(0, |p| p.generation),
            persist_read_only: self.persist.as_ref().and_then(|p| p.read_only.clone()),
            panes,
        };

        phases.mark("captured");
        // 5. The new process.
        let mut cmd = Command::new(&req.binary);
        if let Some(user) = crate::sys::nofile::user_soft_limit() {
            cmd.env(crate::sys::nofile::ORIGINAL_ENV, user.to_string());
        }
        let child = cmd
            .args([
                "server",
                "import",
                "--session",
                self.session.name.as_str(),
                "--from",
            ])
            .arg(&sock_path)
            .env(TOKEN_ENV, &token)
            .stdin(Stdio::null())
            .spawn()
            .map_err(HandoffError::io(format!(
                "cannot start {}",
                req.binary.display()
            )))?;
        let new_pid = child.id();
        progress.child = Some(child);

        // 6. It connects and proves it is the one we started.
        let mut sock = accept_from(&listener, progress, CONNECT_TIMEOUT)?;
        // Every write is bounded too: a new server that stops reading must not hang us.
        sock.set_write_timeout(Some(STEP_TIMEOUT))
            .map_err(HandoffError::io("handoff socket"))?;
        let hello = recv_word(&mut sock, STEP_TIMEOUT).map_err(HandoffError::NoHello)?;
        let (version, protocol) = check_hello(&hello, &token, req)?;

        phases.mark("connected");
        // 7. The manifest and the screens; the new side checks it can take them.
        let json = serde_json::to_vec(&manifest).map_err(HandoffError::Manifest)?;
        let io = |cause| HandoffError::Io {
            what: "cannot send to the new server".into(),
            cause,
        };
        send(&mut sock, &json).map_err(io)?;
        for (image, pending) in &images {
            send(&mut sock, image).map_err(io)?;
            send(&mut sock, pending).map_err(io)?;
        }
        expect(&mut sock, "validated", STEP_TIMEOUT)?;
        phases.mark("validated");

        // 8. The descriptors: the session lock first, then every master.
        let lock = self.lock.as_ref().ok_or(HandoffError::NoLock)?;
        let mut fds = vec![lock.fd()];
        fds.extend(masters.iter().copied());
        crate::sys::fdpass::send_fds(&sock, &fds).map_err(io)?;
        expect(
            &mut sock,
            "restored",
            STEP_TIMEOUT + PER_PANE * manifest.panes.len() as u32,
        )?;

        phases.mark("restored");
        // 9. Give up the public socket; the new server binds it once it refuses here.
        let _ = std::fs::remove_file(&self.session.socket);
        send(&mut sock, b"released").map_err(io)?;
        expect(&mut sock, "ready", STEP_TIMEOUT)?;
        phases.mark("ready");

        // 10. No way back from here.
        send(&mut sock, b"committed").map_err(io)?;
        let committed = Instant::now();
        progress.child = None;
        for tid in self.session.runtimes.ids() {
            if let Some(rt) = self.session.runtimes.get(tid) {
                rt.handle.preserve(true);
            }
        }
        if let Err(e) = expect(&mut sock, "owned", STEP_TIMEOUT) {
            // Nothing to undo: the new server has the session (or died with it).
            eprintln!("handoff: committed, but the new server did not confirm: {e}");
        }
        phases.mark("owned");
        eprintln!(
            "handoff: {} panes; {}",
            manifest.panes.len(),
            phases.report()
        );
        Ok(Done {
            pid: new_pid,
            version,
            protocol,
            panes: manifest.panes.len(),
            total: started.elapsed(),
            window: committed.elapsed(),
        })
    }

    fn terminal_of_pane_no(&self, no: u32) -> Option<TerminalId> {
        self.session
            .state
            .panes
            .values()
            .find(|p| p.no.0 == no)
            .map(|p| p.terminal)
    }

    /// Undoes whatever `progress` says happened.
    fn roll_back(&mut self, progress: Progress) {
        if let Some(mut child) = progress.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if progress.released {
            // The new process is gone, so a socket file it may have bound is stale.
            match crate::server::bind_socket(&self.session.socket) {
                Ok(listener) => {
                    match Acceptor::spawn(
                        listener,
                        self.events.tx.clone(),
                        self.listen.next_conn_id.take(),
                    ) {
                        Ok(a) => self.listen.acceptor = Some(a),
                        Err(e) => eprintln!("handoff: cannot accept connections again: {e}"),
                    }
                }
                Err(e) => eprintln!("handoff: cannot listen again: {e:#}"),
            }
        }
        for tid in progress.paused {
            if let Some(rt) = self.session.runtimes.get(tid) {
                rt.handle.preserve(false);
                rt.handle.resume();
            }
        }
        if let Some(p) = progress.handoff_socket {
            let _ = std::fs::remove_file(p);
        }
        self.request_render();
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
