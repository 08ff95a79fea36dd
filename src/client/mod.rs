//! The interactive client: connects to (or starts) a session's server, puts the user's
//! terminal in raw mode, forwards input and size changes, and writes the frames the server
//! renders. It speaks over any byte stream; losing the stream is an event it handles
//! (restore the terminal, say why, exit non-zero), never a hang.

pub mod api;
pub mod connect;
mod echo;
mod error;
pub mod handoff;
mod input;
pub(crate) mod keepalive;
pub mod notify;
mod predict;
pub mod probe;
pub mod sessions;
pub mod terminal;

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use error::Doing;
pub use error::{with_causes, Error};
use input::{spawn_input_thread, spawn_resize_thread, Keys};
use keepalive::{watch, SharedWatch, Watch};

use crate::paths::SessionName;
use crate::protocol::frame::{ClientMsg, ServerMsg, ServerReader};
use crate::protocol::terminal::TerminalInfo;
use crate::protocol::{Hello, HelloReply, Resume, Role, FEATURE_KEYS, FEATURE_TTY};
use crate::sys::tty::is_tty;

pub enum Outcome {
    /// The server ended the attachment on purpose (detach, stop, session end).
    Ended(String),
    /// The connection was lost.
    Lost(String),
    /// The user gave up while the client was reconnecting.
    GaveUp,
}

/// A byte stream to a server that has accepted our hello: frames go out on `writer`,
/// come in on `reader`.
pub struct Link {
    pub reader: Box<dyn Read + Send>,
    pub writer: Box<dyn Write + Send>,
    /// Over a network: ends the link when it has gone silent (the server answers pings),
    /// so the client notices a dead link itself, whatever the transport's own timeouts.
    pub watchdog: Option<Box<dyn Fn() + Send>>,
    /// The server takes the terminal: hand it over once the screen is set up.
    pub tty: Option<TtyHandover>,
    /// The server reads extended key reports (kitty, modifyOtherKeys): they are turned
    /// on in the terminal.
    pub keys: bool,
    /// The server numbers its frames and named this attachment so (a link that drops is
    /// picked up where it left off: `protocol::FEATURE_RESUME`).
    pub token: Option<String>,
}

impl Link {
    pub fn unix(stream: UnixStream) -> std::io::Result<Link> {
        Ok(Link {
            reader: Box::new(stream.try_clone()?),
            writer: Box::new(stream),
            watchdog: None,
            tty: None,
            keys: false,
            token: None,
        })
    }

    /// A link to a server on this machine, which takes the terminal if it said so.
    fn local(
        stream: UnixStream,
        reply: &HelloReply,
        tty: Option<OwnedFd>,
    ) -> std::io::Result<Link> {
        let mut link = Link::unix(stream.try_clone()?)?;
        link.keys = reply.features.iter().any(|f| f == FEATURE_KEYS);
        link.token = reply.token.clone();
        if reply.features.iter().any(|f| f == FEATURE_TTY) {
            link.tty = tty.map(|fd| TtyHandover { stream, fd });
        }
        Ok(link)
    }
}

/// The terminal, to be sent to the server that agreed to take it (protocol::FEATURE_TTY).
pub struct TtyHandover {
    stream: UnixStream,
    fd: OwnedFd,
}

impl TtyHandover {
    fn hand_over(self) -> std::io::Result<()> {
        crate::sys::fdpass::send_fds(&self.stream, &[self.fd.as_fd()])
    }
}

/// How the client reaches its server, again after a drop when `reconnect` says so.
pub trait Transport {
    /// Opens a link and says hello with the current terminal size (and where the screen
    /// stands, for a link that picks up after one that dropped).
    fn open(&mut self, size: (u16, u16), resume: Option<&Resume>) -> Result<Link, Error>;
    /// Opens a link to a server that is being replaced (live update): never starts one.
    fn reopen(&mut self, size: (u16, u16), resume: Option<&Resume>) -> Result<Link, Error> {
        self.open(size, resume)
    }
    /// Whether a lost link is retried (remote) or the end (local).
    fn reconnects(&self) -> bool;
    /// Set when the user gives up: an `open` that is waiting (a link that does not
    /// answer) should stop waiting and fail.
    fn cancel_on(&mut self, _flag: Arc<AtomicBool>) {}
    /// For messages: "session work on devbox".
    fn describe(&self) -> String;
    /// The session the next `open` attaches to (the user picked another one).
    fn switch(&mut self, to: SessionName);
    /// The session it attaches to.
    fn session(&self) -> SessionName;
}

struct Local(SessionName, TerminalInfo);

/// A client's hello, offering the terminal when stdin and stdout are one (the server then
/// reads keys from it and draws on it directly: no hop through this process).
fn local_hello(
    size: (u16, u16),
    terminal: &TerminalInfo,
    resume: Option<&Resume>,
) -> (Hello, Option<OwnedFd>) {
    let tty = crate::sys::tty::reopen_stdio_terminal();
    let mut hello = Hello::new(Role::Client, Some(size));
    hello.tty = tty.is_some();
    hello.terminal = Some(terminal.clone());
    hello.resume = resume.cloned();
    (hello, tty)
}

impl Transport for Local {
    fn open(&mut self, size: (u16, u16), resume: Option<&Resume>) -> Result<Link, Error> {
        let (hello, tty) = local_hello(size, &self.1, resume);
        let (stream, reply, _started) = connect::connect_or_start_with(&self.0, &hello)?;
        Ok(Link::local(stream, &reply, tty)?)
    }

    fn reopen(&mut self, size: (u16, u16), resume: Option<&Resume>) -> Result<Link, Error> {
        let (hello, tty) = local_hello(size, &self.1, resume);
        match connect::connect_with(&self.0, &hello)? {
            Some((stream, reply)) => Ok(Link::local(stream, &reply, tty)?),
            None => Err(Error::NotListening),
        }
    }

    fn reconnects(&self) -> bool {
        false
    }

    fn describe(&self) -> String {
        format!("the server of session {}", self.0)
    }

    fn switch(&mut self, to: SessionName) {
        // The agent link of the session now attached to serves its panes.
        crate::paths::repoint_agent_link(&to);
        self.0 = to;
    }

    fn session(&self) -> SessionName {
        self.0.clone()
    }
}

pub fn check_terminal() -> Result<(), Error> {
    if !is_tty(std::io::stdin().as_fd()) {
        return Err(Error::NoTerminal);
    }
    Ok(())
}

pub fn terminal_size() -> (u16, u16) {
    crate::sys::get_winsize(std::io::stdout().as_fd())
        .ok()
        .filter(|(r, c)| *r > 0 && *c > 0)
        .map(|(r, c)| (c, r))
        .unwrap_or((80, 24))
}

pub fn attach(session: &SessionName) -> Result<i32, Error> {
    check_terminal()?;
    if std::env::var("HERDR_SESSION").ok().as_deref() == Some(session.as_str())
        && std::env::var_os("HERDR_PANE").is_some()
    {
        return Err(Error::InsidePane(session.clone()));
    }
    // What the terminal supports (asked in raw mode, which is left again at once), then
    // connect before touching the terminal further, so errors print plainly.
    let terminal = probe::probe();
    let mut transport = Local(session.clone(), terminal.clone());
    crate::paths::repoint_agent_link(session);
    let first = transport.open(terminal_size(), None)?;
    Ok(report(
        run(&mut transport, first, &terminal)?,
        &transport.describe(),
        None,
    ))
}

/// Prints how an attachment ended; the exit code.
pub fn report(outcome: Outcome, what: &str, reattach: Option<&str>) -> i32 {
    let hint = reattach
        .map(|c| format!("\nreattach with: {c}"))
        .unwrap_or_default();
    match outcome {
        Outcome::Ended(why) => {
            crate::say!("[{why}]{hint}");
            0
        }
        Outcome::GaveUp => {
            crate::say!("[gave up reconnecting to {what}]{hint}");
            0
        }
        Outcome::Lost(why) => {
            eprintln!("herdr: lost the connection to {what}: {why}{hint}");
            1
        }
    }
}

type SharedWriter = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// While a server is replaced (live update): how often to try, and for how long.
const REPLACED_RETRY: Duration = Duration::from_millis(50);
const REPLACED_WINDOW: Duration = Duration::from_secs(60);

/// Why a link ended without the server ending the attachment.
enum Drop {
    Lost(String),
    /// The server is being replaced and asked us to come back.
    Replaced(String),
    /// The user chose another session: attach to it.
    Switch(String),
}

/// Runs an attachment until it ends: raw mode and the alternate screen for its whole life,
/// across reconnections when the transport allows them (the server sends a full frame on
/// each attach, so the screen comes back as it is now).
pub fn run(
    transport: &mut dyn Transport,
    first: Link,
    terminal: &TerminalInfo,
) -> Result<Outcome, Error> {
    let mut stdout = std::io::stdout();
    let guard = terminal::Raw::enter().doing(|| "cannot put the terminal in raw mode".into())?;
    let mut screen = terminal::Screen::enter(terminal)?;
    screen.set_keys(first.keys);

    // The terminal goes first: nothing else may be sent on a link before it (the server
    // reads the descriptor's message right after its reply).
    let (keys, keys_wake) = Keys::new()?;
    keys.hand_over(first.tty);
    let writer: SharedWriter = Arc::new(Mutex::new(Some(first.writer)));
    let quit = Arc::new(AtomicBool::new(false));
    transport.cancel_on(quit.clone());
    // Keys typed while there is no link: not sent, and the note says how many.
    let refused = Arc::new(AtomicUsize::new(0));
    let watched: SharedWatch = Arc::new(Mutex::new(Watch::default()));
    watch(&watched).attach(first.watchdog);
    // Over a network, keys are shown ahead of the host's echo where that can be guessed.
    let echo = transport
        .reconnects()
        .then(|| echo::Echo::new(watched.clone(), terminal_size()))
        .flatten();
    spawn_input_thread(
        writer.clone(),
        quit.clone(),
        refused.clone(),
        (&keys, keys_wake),
        echo.clone(),
    )?;
    let resizes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    spawn_resize_thread(writer.clone(), resizes.clone())?;
    let done = Arc::new(AtomicBool::new(false));
    // Set on a wake or SIGCONT: a reconnection attempt is made at once.
    let nudged = Arc::new(AtomicBool::new(false));
    // Only links over a network are watched; a local client wakes for nothing.
    if transport.reconnects() {
        let w = writer.clone();
        keepalive::spawn(
            Box::new(move || {
                send(&w, ClientMsg::Ping);
            }),
            watched.clone(),
            done.clone(),
            nudged.clone(),
        )?;
    }

    // Where the screen stands, for a link that picks up after one that dropped.
    let mut resume = Drawn {
        resume: first.token.clone().map(|token| Resume { token, frame: 0 }),
        resizes,
        at_frame: 0,
    };
    let attach = |link, screen: &mut _, resume: &mut _| {
        attach_link(link, &watched, screen, &keys, &writer, resume)
    };
    let mut reader = Some(first.reader);
    let mut pace = keepalive::Pace::default();
    // Set while a replaced server is awaited: until when.
    let mut replaced_until: Option<std::time::Instant> = None;
    // What parsing the command line, the config and the first answers left free in the
    // heap is given back: the client waits here for the session's whole length.
    crate::sys::startup::trim_heaps();
    let outcome = loop {
        let lost = match reader.take() {
            Some(r) => {
                let pumped = pump(r, &mut stdout, &watched, &mut resume, echo.as_ref());
                // Nothing more goes to that link (keys typed from now on are refused,
                // and never guessed on screen after its guesses were taken back).
                *lock(&writer) = None;
                if let Some(echo) = &echo {
                    echo.forget();
                }
                // That link is over: nothing may watch (or kill) it any more, and keys
                // are read here again.
                watch(&watched).detach();
                keys.take_back();
                match pumped {
                    Ok(outcome) => break outcome,
                    Err(Drop::Lost(why)) => why,
                    Err(Drop::Replaced(why)) => {
                        replaced_until = Some(std::time::Instant::now() + REPLACED_WINDOW);
                        why
                    }
                    Err(Drop::Switch(to)) => {
                        *lock(&writer) = None;
                        match switch(transport, &to, &mut stdout) {
                            Some(link) => {
                                pace.reset();
                                replaced_until = None;
                                reader = Some(attach(link, &mut screen, &mut resume));
                                continue;
                            }
                            None => String::from("cannot switch sessions"),
                        }
                    }
                }
            }
            None => String::from("not connected"),
        };
        *lock(&writer) = None;
        let replacing = replaced_until.is_some_and(|t| std::time::Instant::now() < t);
        if !transport.reconnects() && !replacing {
            break Outcome::Lost(match replaced_until {
                Some(_) => format!("{lost} (the server did not come back after a live update)"),
                None => lost,
            });
        }
        // Over the last screen: say what is going on, then retry (paced: each attempt is
        // short, and they follow each other closely while the link is down).
        let what = transport.describe();
        show_note(
            &mut stdout,
            &format!("reconnecting to {what}… ({lost})"),
            &refused,
        );
        let pause = if replacing {
            REPLACED_RETRY
        } else {
            pace.wait(std::time::Instant::now())
        };
        if wait_or_quit(pause, &quit, &nudged) {
            break Outcome::GaveUp;
        }
        pace.attempt(std::time::Instant::now());
        let opened = if replacing {
            transport.reopen(terminal_size(), resume.resume().as_ref())
        } else {
            transport.open(terminal_size(), resume.resume().as_ref())
        };
        match opened {
            Ok(link) => {
                // (`replaced_until` stays: a link that drops again soon, to a server that
                // was on its way out, is retried the same way.)
                pace.reset();
                nudged.store(false, Ordering::Release);
                refused.store(0, Ordering::Release);
                reader = Some(attach(link, &mut screen, &mut resume));
            }
            Err(e) => {
                let why = error::with_causes(&e);
                show_note(
                    &mut stdout,
                    &format!("reconnecting to {what}: {why}"),
                    &refused,
                );
            }
        }
        if quit.load(Ordering::Acquire) {
            break Outcome::GaveUp;
        }
    };
    done.store(true, Ordering::Release);
    *lock(&writer) = None;
    screen.leave();
    drop(guard);
    Ok(outcome)
}

/// Shows `text` in reverse video over the last line of the screen, with the keys typed
/// meanwhile that were not sent (never dropped without a word) and how to give up.
fn show_note(stdout: &mut std::io::Stdout, text: &str, refused: &AtomicUsize) {
    // (First, where a narrow terminal cannot cut it off.)
    let refused = match refused.load(Ordering::Acquire) {
        0 => String::new(),
        1 => "1 key typed meanwhile not sent; ".into(),
        n => format!("{n} keys typed meanwhile not sent; "),
    };
    note_line(stdout, &format!("{refused}{text} — ctrl-c to give up"));
}

/// Draws `text` in reverse video over the last row alone: cut to the terminal's width
/// (and autowrap off besides), so a long note never scrolls the screen — a link that
/// picks up where the last one left off is sent only the rows that changed, and this one.
fn note_line(stdout: &mut std::io::Stdout, text: &str) {
    let padded = format!(" {text} ");
    let text = fit_width(&padded, usize::from(terminal_size().0).saturating_sub(1));
    let note = format!("\x1b7\x1b[?7l\x1b[999;1H\x1b[0;7m{text}\x1b[0m\x1b[K\x1b[?7h\x1b8");
    let _ = stdout
        .write_all(note.as_bytes())
        .and_then(|_| stdout.flush());
}

/// The longest start of `text` that takes at most `columns` cells.
fn fit_width(text: &str, columns: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used > columns {
            return &text[..i];
        }
    }
    text
}

/// Makes `link` the one in use: watched, its key reporting on, the terminal handed over,
/// its writer shared and its token kept; returns its reader.
fn attach_link(
    link: Link,
    watched: &SharedWatch,
    screen: &mut terminal::Screen,
    keys: &Keys,
    writer: &SharedWriter,
    resume: &mut Drawn,
) -> Box<dyn Read + Send> {
    // (A server that picked up where the last link left off keeps the token and goes
    // on numbering; another starts afresh.)
    resume.resume = match (link.token, resume.resume.take()) {
        (Some(token), Some(r)) if r.token == token => Some(r),
        (Some(token), _) => Some(Resume { token, frame: 0 }),
        (None, _) => None,
    };
    watch(watched).attach(link.watchdog);
    screen.set_keys(link.keys);
    keys.hand_over(link.tty);
    *lock(writer) = Some(link.writer);
    link.reader
}

/// Opens a link to session `to` for a client the server moved there; if that fails, says
/// why over the last screen and goes back to the session it came from (`None` when that
/// fails too).
fn switch(transport: &mut dyn Transport, to: &str, stdout: &mut std::io::Stdout) -> Option<Link> {
    let from = transport.describe();
    let failed = match SessionName::parse(to) {
        Ok(name) => {
            let back = transport.session();
            transport.switch(name);
            match transport.open(terminal_size(), None) {
                Ok(link) => return Some(link),
                Err(e) => {
                    transport.switch(back);
                    error::with_causes(&e)
                }
            }
        }
        Err(e) => e.to_string(),
    };
    note_line(
        stdout,
        &format!("cannot attach to session {to}: {failed}; staying with {from}"),
    );
    transport.open(terminal_size(), None).ok()
}

/// Copies frames to the terminal until the server ends the attachment (Ok) or the link
/// ends otherwise (Err with why).
fn pump(
    reader: Box<dyn Read + Send>,
    stdout: &mut std::io::Stdout,
    watched: &SharedWatch,
    resume: &mut Drawn,
    echo: Option<&echo::Echo>,
) -> Result<Outcome, Drop> {
    let mut draw = |bytes: &[u8]| match echo {
        Some(echo) => echo.output(bytes),
        None => draw(stdout, bytes),
    };
    // Every byte counts as life (a large frame over a slow link is not silence).
    let heard = Heard {
        inner: reader,
        watched: watched.clone(),
    };
    let mut reader = ServerReader::new(Box::new(heard));
    loop {
        match reader.recv() {
            Ok(Some(ServerMsg::Pong)) => keepalive::ponged(watched),
            Ok(Some(ServerMsg::Output(bytes))) => {
                if !draw(&bytes) {
                    return Ok(Outcome::Lost("cannot write to the terminal".into()));
                }
            }
            Ok(Some(ServerMsg::Frame(seq, bytes))) => {
                if !draw(&bytes) {
                    return Ok(Outcome::Lost("cannot write to the terminal".into()));
                }
                // Drawn whole: the screen stands at this frame.
                resume.drawn(seq);
            }
            Ok(Some(ServerMsg::Exit(why))) => return Ok(Outcome::Ended(why)),
            Ok(Some(ServerMsg::Reconnect(why))) => return Err(Drop::Replaced(why)),
            Ok(Some(ServerMsg::Switch(to))) => return Err(Drop::Switch(to)),
            Ok(None) => return Err(Drop::Lost("the server closed the connection".into())),
            Err(e) => return Err(Drop::Lost(e.to_string())),
        }
    }
}

/// Writes a server's output to the terminal; false if it cannot.
fn draw(stdout: &mut std::io::Stdout, bytes: &[u8]) -> bool {
    stdout.write_all(bytes).and_then(|_| stdout.flush()).is_ok()
}

/// A link's reader that notes when it last brought anything.
struct Heard {
    inner: Box<dyn Read + Send>,
    watched: SharedWatch,
}

impl Read for Heard {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            keepalive::heard(&self.watched);
        }
        Ok(n)
    }
}

/// Sleeps up to `d`, returning early (true) if the user asked to quit, or (false) when
/// `nudged` is set (a wake or SIGCONT: try now).
fn wait_or_quit(d: Duration, quit: &AtomicBool, nudged: &AtomicBool) -> bool {
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end {
        if quit.load(Ordering::Acquire) {
            return true;
        }
        if nudged.swap(false, Ordering::AcqRel) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    quit.load(Ordering::Acquire)
}

fn lock(w: &SharedWriter) -> std::sync::MutexGuard<'_, Option<Box<dyn Write + Send>>> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

fn send(writer: &SharedWriter, msg: ClientMsg) -> bool {
    let mut w = lock(writer);
    match w.as_mut() {
        Some(out) => {
            let sent = out
                .write_all(&msg.encode())
                .and_then(|_| out.flush())
                .is_ok();
            if !sent {
                *w = None;
            }
            sent
        }
        None => false,
    }
}

/// Where the client's screen stands, for a link that picks up after one that dropped:
/// the attachment's token and the last frame drawn whole — unless the terminal was
/// resized after that frame (it may have cut or reflowed what it showed, even if it is
/// back at the same size).
struct Drawn {
    resume: Option<Resume>,
    /// SIGWINCHs so far, and their count when the last frame was drawn.
    resizes: Arc<std::sync::atomic::AtomicU64>,
    at_frame: u64,
}

impl Drawn {
    fn drawn(&mut self, seq: u64) {
        if let Some(r) = self.resume.as_mut() {
            r.frame = seq;
        }
        self.at_frame = self.resizes.load(Ordering::Acquire);
    }

    /// What a new link's hello says (frame 0, nothing to pick up, after a resize).
    fn resume(&self) -> Option<Resume> {
        let resized = self.resizes.load(Ordering::Acquire) != self.at_frame;
        self.resume.clone().map(|mut r| {
            if resized {
                r.frame = 0;
            }
            r
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_note_is_cut_to_the_columns_it_may_take() {
        assert_eq!(super::fit_width(" reconnecting ", 6), " recon");
        assert_eq!(super::fit_width("漢字漢", 5), "漢字");
        assert_eq!(super::fit_width("ok", 80), "ok");
        assert_eq!(super::fit_width("ok", 0), "");
    }
}
