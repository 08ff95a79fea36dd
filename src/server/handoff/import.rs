//! The new server's side of a live handoff (`herdr server import`, started by the old
//! server). Until `committed` it holds the session only on loan: its terminals are paused
//! and set to preserve their programs, so if it fails or is killed, nobody dies and the
//! old server carries on. On any doubt before `committed` it exits.

use crate::log;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use super::{recv, recv_word, send, Manifest, PaneRuntime, HANDOFF_VERSION, TOKEN_ENV};
use super::{ImportError, Refusal};
use crate::model::TerminalState;
use crate::paths::SessionName;
use crate::protocol::{version, PROTOCOL_VERSION};
use crate::pty::actor::ActorParts;
use crate::pty::{Program, PtyHandle, TerminalRuntime};
use crate::server::rebuild::PaneStartError;
use crate::server::{Event, Server, SessionLock};
use crate::term::{Emulator, Image};

/// How long to wait for each message from the old server.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the old public socket may take to stop answering.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);
const PROBE_INTERVAL: Duration = Duration::from_millis(50);

/// One pane as received: its facts, screen, unwritten input and master.
struct Incoming {
    runtime: PaneRuntime,
    image: Image,
    emulator: Emulator,
    pending: Vec<u8>,
    master: Option<OwnedFd>,
}

pub fn main(session: SessionName, from: PathBuf) -> Result<(), ImportError> {
    let _ = nix::unistd::setsid();
    crate::sys::startup::few_heaps();
    log::init(&crate::paths::log_path(&session));
    let token = std::env::var(TOKEN_ENV).map_err(ImportError::NotByHand)?;
    // Panes started later must not inherit it (nothing else runs yet in this process).
    std::env::remove_var(TOKEN_ENV);
    // The old server's limit was raised; its panes' programs got the user's, and so will
    // ours (every descriptor it hands over must fit in this process too).
    let told = std::env::var(crate::sys::nofile::ORIGINAL_ENV)
        .ok()
        .and_then(|v| v.parse().ok());
    std::env::remove_var(crate::sys::nofile::ORIGINAL_ENV);
    crate::server::start::raise_open_file_limit(told);
    if crate::server::fault::at("exit-before-validated") {
        std::process::exit(3);
    }
    let mut sock = UnixStream::connect(&from).map_err(|cause| ImportError::NoOldServer {
        path: from.clone(),
        cause,
    })?;
    sock.set_write_timeout(Some(STEP_TIMEOUT))?;
    let version = if crate::server::fault::at("wrong-version") {
        "9.9.9-fault"
    } else {
        version()
    };
    send(
        &mut sock,
        format!("herdr-handoff {HANDOFF_VERSION} {token} {version} {PROTOCOL_VERSION}").as_bytes(),
    )?;
    match receive(&mut sock, &session) {
        Ok((manifest, panes, lock)) => serve(sock, session, manifest, panes, lock),
        Err(e) => {
            let _ = send(&mut sock, format!("refused: {e}").as_bytes());
            Err(ImportError::Refused(e))
        }
    }
}

/// Steps 7 and 8: the manifest, the screens, the descriptors.
fn receive(
    sock: &mut UnixStream,
    session: &SessionName,
) -> Result<(Manifest, Vec<Incoming>, OwnedFd), Refusal> {
    let bytes = recv(sock, STEP_TIMEOUT).map_err(Refusal::NoManifest)?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(Refusal::Unreadable)?;
    if manifest.handoff != HANDOFF_VERSION {
        return Err(Refusal::HandoffVersion(manifest.handoff));
    }
    if manifest.session != session.as_str() {
        return Err(Refusal::Session {
            got: manifest.session.clone(),
            want: session.to_string(),
        });
    }
    if let Some(v) = &manifest.expected_version {
        if v != version() {
            return Err(Refusal::Version {
                ours: version().to_string(),
                want: v.clone(),
            });
        }
    }
    if let Some(p) = manifest.expected_protocol {
        if p != PROTOCOL_VERSION {
            return Err(Refusal::Protocol {
                ours: PROTOCOL_VERSION,
                want: p,
            });
        }
    }
    crate::persist::snapshot::validate(&manifest.snapshot).map_err(Refusal::Snapshot)?;
    let mut raw = Vec::with_capacity(manifest.panes.len());
    for rt in &manifest.panes {
        let data = |cause| Refusal::PaneData {
            pane: rt.pane,
            cause,
        };
        let image = recv(sock, STEP_TIMEOUT).map_err(data)?;
        let pending = recv(sock, STEP_TIMEOUT).map_err(data)?;
        raw.push((rt, image, pending));
    }
    // Rebuilding the emulators is the bulk of the work: on every core.
    let scrollback = crate::config::current().scrollback_lines;
    let built = super::parallel_map(&raw, |(rt, image, _)| {
        Image::decode(image)
            .map(|mut i| {
                let emulator = Emulator::from_image(&mut i, scrollback);
                (i, emulator)
            })
            .map_err(|cause| Refusal::PaneImage {
                pane: rt.pane,
                cause,
            })
    });
    let mut panes = Vec::with_capacity(raw.len());
    for ((rt, _, pending), built) in raw.into_iter().zip(built) {
        let (image, emulator) = built?;
        panes.push(Incoming {
            runtime: rt.clone(),
            image,
            emulator,
            pending,
            master: None,
        });
    }
    send(sock, b"validated")?;
    // One descriptor per pane whose program runs (a finished pane has none).
    let live = panes.iter().filter(|p| p.runtime.ended.is_none()).count();
    let fds = crate::sys::fdpass::recv_fds(sock, 1 + live).map_err(Refusal::Descriptors)?;
    if crate::server::fault::at("crash-after-fds") {
        std::process::abort();
    }
    let mut fds = fds.into_iter();
    let lock = fds.next().ok_or(Refusal::NoLock)?;
    for (p, fd) in panes
        .iter_mut()
        .filter(|p| p.runtime.ended.is_none())
        .zip(fds)
    {
        p.master = Some(fd);
    }
    Ok((manifest, panes, lock))
}

/// Steps 8 to 11: rebuild, take the socket over, wait for `committed`, serve.
fn serve(
    mut sock: UnixStream,
    session: SessionName,
    manifest: Manifest,
    panes: Vec<Incoming>,
    lock: OwnedFd,
) -> Result<(), ImportError> {
    let refuse = |sock: &mut UnixStream, why: Refusal| -> ImportError {
        let _ = send(sock, format!("refused: {why}").as_bytes());
        ImportError::Refused(why)
    };
    let lock = match SessionLock::adopt(lock) {
        Ok(l) => l,
        Err(e) => return Err(refuse(&mut sock, Refusal::Lock(e))),
    };
    let loaded = super::super::load_config();
    let socket = crate::paths::socket_path(&session);
    let mut server = Server::new(session, socket.clone(), loaded.config, loaded.bindings);
    server.agents.activity.rules = loaded.rules;
    server.lock = Some(lock);
    server.report_config(&loaded.diags);
    server.session.size = manifest.size;
    server.session.sidebar = manifest.sidebar;
    let expected = panes.len();
    let unseen: Vec<u32> = panes
        .iter()
        .filter(|p| !p.runtime.seen)
        .map(|p| p.runtime.pane)
        .collect();
    let mut panes: Vec<Option<Incoming>> = panes.into_iter().map(Some).collect();
    let mut make = |server: &mut Server,
                    ps: &crate::persist::snapshot::PaneSnap,
                    _rect: ratatui::layout::Rect,
                    _notes: &mut Vec<String>|
     -> Result<(TerminalState, TerminalRuntime), PaneStartError> {
        let incoming = panes
            .iter_mut()
            .find(|p| p.as_ref().is_some_and(|p| p.runtime.pane == ps.id))
            .and_then(Option::take)
            .ok_or(PaneStartError::NotHandedOver)?;
        import_terminal(server, ps, incoming)
    };
    let notes = server.rebuild(&manifest.snapshot, &mut make);
    for ps in server.session.state.panes.values_mut() {
        if unseen.contains(&ps.no.0) {
            ps.seen = false;
        }
    }
    let imported = server.session.runtimes.len();
    if imported != expected {
        let why = Refusal::Rebuilt {
            imported,
            expected,
            notes: notes.join("; "),
        };
        return Err(refuse(&mut sock, why));
    }
    send(&mut sock, b"restored")?;

    // The old server gives the public socket up; bind it once it truly refuses.
    let word = recv_word(&mut sock, STEP_TIMEOUT).map_err(ImportError::NoRelease)?;
    if word != "released" {
        return Err(ImportError::NotReleased(word));
    }
    wait_until_refused(&socket)?;
    let listener = super::super::bind_socket(&socket)?;
    if crate::server::fault::at("never-ready") {
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
    send(&mut sock, b"ready")?;
    match recv_word(&mut sock, STEP_TIMEOUT) {
        Ok(w) if w == "committed" => {}
        other => {
            // Not ours: leave without touching a program (the old server rolls back and
            // binds the socket again once this process is gone).
            log::warn!(
                "handoff",
                "not committed ({other:?}); leaving the session to the old server"
            );
            std::process::exit(1);
        }
    }
    for tid in server.session.runtimes.ids() {
        if let Some(rt) = server.session.runtimes.get(tid) {
            rt.handle.preserve(false);
            rt.handle.resume();
        }
    }
    send(&mut sock, b"owned")?;
    drop(sock);

    super::super::spawn_signal_thread(server.events.tx.clone())?;
    server.start_persistence();
    if let Some(p) = server.persist.as_mut() {
        p.generation = manifest.persist_generation;
        p.read_only = manifest.persist_read_only.clone();
    }
    log::info!(
        "server",
        "herdr server {} took over session {} from {} ({} panes) and listens on {}",
        version(),
        server.session.name,
        manifest.source_version,
        imported,
        socket.display()
    );
    Ok(server.run(listener)?)
}

/// A terminal from the old server: its emulator rebuilt from the image, an actor that
/// starts paused and leaves the program alone until `committed`.
fn import_terminal(
    server: &mut Server,
    ps: &crate::persist::snapshot::PaneSnap,
    incoming: Incoming,
) -> Result<(TerminalState, TerminalRuntime), PaneStartError> {
    let Incoming {
        runtime,
        image,
        emulator,
        pending,
        master,
    } = incoming;
    let id = server.session.state.alloc_terminal_id();
    let mut emulator = emulator;
    emulator.set_answers(!crate::machine::is_view(&ps.argv));
    let emulator = crate::pty::shared(emulator);
    let (handle, pid) = match runtime.ended {
        // Only its screen: its program is gone.
        Some(_) => (PtyHandle::ended(emulator.clone())?, None),
        None => {
            let master = master.ok_or(PaneStartError::NoDescriptor)?;
            let handle = adopt(server, id, &runtime, master, &emulator, pending)?;
            (handle, Some(runtime.pid as u32))
        }
    };
    let mut term = TerminalState::new(id, ps.cwd.as_ref().map(PathBuf::from), ps.argv.clone());
    term.title = image.title.clone();
    term.exited = runtime.ended.map(|e| e.status);
    term.agent = ps.agent.clone();
    term.agent_session = ps
        .agent_session
        .as_ref()
        .map(crate::agent::SessionRef::from);
    term.agent_source = ps.agent_source.clone();
    term.agent_state = runtime.agent_state;
    term.agent_pid = runtime.agent_pid;
    term.report_seq = runtime.report_seq;
    term.hooked = runtime.hooked;
    term.agent_argv = runtime.agent_argv;
    term.agent_error = runtime.agent_error;
    term.agent_since = runtime
        .agent_since_ms
        .map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms));
    let rt = TerminalRuntime {
        handle,
        emulator,
        pid,
        size: (image.rows, image.cols),
        resized_at: None,
        title_seq: 0,
        foreground_kept: None,
    };
    Ok((term, rt))
}

/// The actor of a terminal whose program runs: started paused, leaving the program alone
/// until `committed`, once the descriptor is shown to be that program's terminal.
fn adopt(
    server: &Server,
    id: crate::model::ids::TerminalId,
    runtime: &super::PaneRuntime,
    master: OwnedFd,
    emulator: &crate::pty::SharedEmulator,
    pending: Vec<u8>,
) -> Result<PtyHandle, PaneStartError> {
    crate::sys::set_nonblocking(master.as_fd())?;
    // The program must be the one leading this terminal, and watchable: otherwise this
    // server could neither tell when it ends nor end it.
    match crate::sys::fdpass::tty_session(master.as_fd()) {
        Ok(sid) if sid == runtime.pid => {}
        other => {
            return Err(PaneStartError::NotItsProgram {
                session: format!("{other:?}"),
                pid: runtime.pid,
            })
        }
    }
    let pidfd =
        crate::sys::fdpass::pidfd_open(runtime.pid).map_err(|cause| PaneStartError::NoWatch {
            pid: runtime.pid,
            cause,
        })?;
    let tx = server.events.tx.clone();
    Ok(PtyHandle::start(ActorParts {
        master,
        program: Program::Imported {
            pid: runtime.pid,
            pidfd,
        },
        emulator: emulator.clone(),
        notify: Box::new(move |ev| {
            let _ = tx.send(Event::Pty(id, ev));
        }),
        name: format!("herdr-pty-{}", id.0),
        paused: true,
        preserve: true,
        pending_input: pending,
    })?)
}

/// Connect probes until nobody answers on `socket` (the old server stopped listening).
fn wait_until_refused(socket: &Path) -> Result<(), ImportError> {
    let deadline = Instant::now() + RELEASE_TIMEOUT;
    while UnixStream::connect(socket).is_ok() {
        if Instant::now() >= deadline {
            return Err(ImportError::StillAnswers {
                socket: socket.to_path_buf(),
                secs: RELEASE_TIMEOUT.as_secs(),
            });
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
    Ok(())
}
