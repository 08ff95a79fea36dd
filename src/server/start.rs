//! Starting a server: the session's lock and socket, the configuration, signals, the
//! saver, and `herdr server run` itself.

use crate::log;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{persist, Event, EventTx, Server};
use crate::bindings::Bindings;
use crate::config::Config;
use crate::paths::{self, SessionName};

/// Binds the session's socket: refuses to steal one a live server answers on, replaces a
/// stale one, and makes it 0600 in a 0700 folder.
pub fn bind(session: &SessionName) -> Result<(UnixListener, PathBuf, SessionLock), StartError> {
    let dir = paths::runtime_dir();
    paths::ensure_private_dir(&dir)
        .map_err(StartError::io(format!("cannot prepare {}", dir.display())))?;
    let socket = paths::socket_path(session);
    if let Some(to) = paths::renamed_to(session) {
        return Err(StartError::Busy(SessionBusy(format!(
            "the name {session} still leads to session {to}, renamed while running (its programs started before the rename reach it by this name); choose another name, or stop session {to} first"
        ))));
    }
    // One server per session: two clients starting servers at the same moment must not
    // both get past the checks below (the second would delete the first's socket).
    let lock = take_lock(session)?;
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return Err(StartError::Running {
            session: session.to_string(),
            socket,
        });
    }
    let listener = bind_socket(&socket)?;
    Ok((listener, socket, lock))
}

/// Takes the session's lock (a file in the runtime folder, locked for the server's life):
/// refused while another server holds the session or is starting it.
pub(crate) fn take_lock(session: &SessionName) -> Result<SessionLock, StartError> {
    let lock_path = paths::runtime_dir().join(format!("{}.lock", session.as_str()));
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(StartError::io(format!(
            "cannot open {}",
            lock_path.display()
        )))?;
    SessionLock::take(lock_file.into()).map_err(|_| {
        StartError::Busy(SessionBusy(format!(
            "a herdr server for session {session} is already running or starting ({} is locked)",
            lock_path.display()
        )))
    })
}

/// Listens on `socket` (0600), replacing a stale file. The caller has made sure no live
/// server answers there.
pub(crate) fn bind_socket(socket: &std::path::Path) -> Result<UnixListener, StartError> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).map_err(StartError::io(format!(
        "cannot listen on {}",
        socket.display()
    )))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Why a server did not start (or stopped with an error).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Another server holds the session: `herdr server run` exits with
    /// [`crate::protocol::exit::SESSION_BUSY`].
    #[error("{0}")]
    Busy(SessionBusy),
    #[error("a herdr server for session {session} is already running ({})", .socket.display())]
    Running { session: String, socket: PathBuf },
    /// An operation that failed, and the system's reason.
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },
    #[error(transparent)]
    Os(#[from] std::io::Error),
    #[error("{0}")]
    FirstPane(super::panes::PaneError),
}

impl StartError {
    fn io(what: String) -> impl FnOnce(std::io::Error) -> StartError {
        move |cause| StartError::Io { what, cause }
    }
}

/// Another server holds the session: `herdr server run` exits with
/// [`crate::protocol::exit::SESSION_BUSY`], so whoever started it knows to wait for that
/// one.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SessionBusy(String);

/// Held for the life of a server: the session's lock file, exclusively locked.
pub struct SessionLock(std::os::fd::OwnedFd);

impl SessionLock {
    fn take(fd: std::os::fd::OwnedFd) -> std::io::Result<SessionLock> {
        use std::os::fd::AsFd;
        crate::sys::flock_exclusive_nb(fd.as_fd())?;
        Ok(SessionLock(fd))
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }

    /// A lock received from the server that held it: the same open file, so locking it
    /// again succeeds at once; it stays locked as long as either process holds it.
    pub fn adopt(fd: std::os::fd::OwnedFd) -> Result<SessionLock, NotOurLock> {
        SessionLock::take(fd).map_err(NotOurLock)
    }
}

/// A lock handed over by the old server that cannot be locked again: another process
/// holds the session, so this one must not serve it.
#[derive(Debug, thiserror::Error)]
#[error("the handed-over session lock is not ours: {0}")]
pub struct NotOurLock(std::io::Error);

/// Turns SIGTERM and SIGINT into a clean stop; SIGHUP is ignored (a daemon has no
/// terminal to lose).
pub(crate) fn spawn_signal_thread(events: EventTx) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::Builder::new()
        .name("herdr-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if sig != SIGHUP && events.send(Event::Signal(sig)).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
}

/// What a server is configured with: the config file, the key bindings it makes, and the
/// agents' screen rules (`agents/` next to the config file).
pub(crate) struct Loaded {
    pub config: Config,
    pub bindings: Bindings,
    pub rules: std::collections::BTreeMap<String, crate::agent::rules::Rules>,
    /// What is wrong in them (for the log and the status line).
    pub diags: Vec<crate::config::Diagnostic>,
}

pub(crate) fn load_config() -> Loaded {
    load_config_at(&config_path())
}

/// The config file in force: `$XDG_CONFIG_HOME/herdr/config.toml` or its default.
pub(crate) fn config_path() -> PathBuf {
    crate::config::default_path().unwrap_or_else(|| PathBuf::from("config.toml"))
}

/// Everything a server would make of the config file at `config_path`, and every problem
/// in it (what `herdr config check` reports).
pub(crate) fn load_config_at(config_path: &std::path::Path) -> Loaded {
    let (config, mut diags) = crate::config::load(config_path);
    let (bindings, more) = Bindings::from_config(&config, config_path);
    diags.extend(more);
    // In the file's order (the agents' rules, in files of their own, after).
    diags.sort_by_key(|d| (d.path != config_path, d.line));
    let (rules, problems) =
        crate::agent::rules::load(config_path.parent().map(|d| d.join("agents")).as_deref());
    diags.extend(
        problems
            .into_iter()
            .map(|(path, e)| crate::config::Diagnostic::new(&path, None, None, e)),
    );
    Loaded {
        config,
        bindings,
        rules,
        diags,
    }
}

/// The status line's word on config problems: how many, where to see them all, and the
/// first (the line is cut to fit the screen; the log has every one).
pub(crate) fn problems_line(diags: &[crate::config::Diagnostic]) -> String {
    let n = diags.len();
    let plural = if n == 1 { "" } else { "s" };
    let first = diags.first().map(|d| match (d.line, &d.key) {
        (Some(line), Some(key)) => format!("line {line}: {key}: {}", d.message),
        _ => d.to_string(),
    });
    format!(
        "config: {n} problem{plural} (herdr config check): {}",
        first.unwrap_or_default()
    )
}

impl Server {
    /// Tells the status line how many config problems there are (and the first); all of
    /// them go to the log.
    pub(crate) fn report_config(&mut self, diags: &[crate::config::Diagnostic]) {
        for d in diags {
            log::warn!("config", "{d}");
        }
        if !diags.is_empty() {
            self.clients.message = Some((
                problems_line(diags),
                Instant::now() + Duration::from_secs(10),
            ));
        }
    }

    /// Starts the background saver (a server without one still serves, unsaved).
    pub(crate) fn start_persistence(&mut self) {
        match paths::ensure_state_dir(&self.session.name) {
            Ok(dir) => match persist::Persistence::start(dir, self.events.tx.clone()) {
                Ok(p) => self.persist = Some(p),
                Err(e) => {
                    log::error!(
                        "persistence",
                        "cannot start the saver: {e}; the session will not be saved"
                    )
                }
            },
            Err(e) => log::error!(
                "persistence",
                "cannot create the state folder: {e}; the session will not be saved"
            ),
        }
    }
}

/// Raises the soft open-file limit to the hard one (each pane holds about 4 descriptors,
/// and a handoff needs one more per pane in both processes) and says so in the log.
/// `told`: the user's soft limit, when a live handoff passed it on.
pub(crate) fn raise_open_file_limit(told: Option<u64>) {
    match crate::sys::nofile::raise(told) {
        Ok(l) => log::info!(
            "server",
            "open files: limit {} (the hard limit; it was {} for this login), programs in panes get {}",
            l.soft, l.user_soft, l.user_soft
        ),
        Err((l, e)) => log::warn!(
            "server",
            "open files: cannot raise the soft limit {} to the hard limit {}: {e}; \
             about {} panes fit",
            l.soft,
            l.hard,
            l.soft / 4
        ),
    }
}

/// Entry point of `herdr server run`: detaches from any terminal, loads the config, creates
/// the first pane, serves. `ready`: a pipe to write one byte to once the socket listens
/// (connections made from then on wait in its backlog until we serve them).
pub fn main(session: SessionName, ready: Option<std::os::fd::OwnedFd>) -> Result<(), StartError> {
    let _ = nix::unistd::setsid();
    crate::sys::startup::few_heaps();
    log::init(&paths::log_path(&session));
    raise_open_file_limit(None);
    let loaded = load_config();
    let (listener, socket, lock) = bind(&session)?;
    if let Some(fd) = ready {
        // Whoever started us may have gone; then nobody needs the byte.
        let _ = std::fs::File::from(fd).write_all(b"1");
    }
    let mut server = Server::new(session, socket.clone(), loaded.config, loaded.bindings);
    server.agents.activity.rules = loaded.rules;
    server.lock = Some(lock);
    server.report_config(&loaded.diags);
    // Signals are handled from the start: a SIGHUP during a long restore must not end the
    // server (its default action would, silently).
    spawn_signal_thread(server.events.tx.clone())?;
    server.start_persistence();
    if !server.persist_restore() {
        // The first pane starts where the server was started: the folder of the client
        // that started it (or of `herdr server start`), as tmux's does.
        if let Err(e) = server.create_workspace(None, std::env::current_dir().ok()) {
            let _ = std::fs::remove_file(&socket);
            return Err(StartError::FirstPane(e));
        }
    }
    log::info!(
        "server",
        "herdr server {} for session {} listening on {}",
        crate::protocol::version(),
        server.session.name,
        socket.display()
    );
    Ok(server.run(listener)?)
}
