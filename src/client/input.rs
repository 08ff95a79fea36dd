//! What the client reads from its terminal while attached over a byte stream: the keys
//! (sent, guessed ahead of the host's echo, or — with no link — counted as not sent, but
//! for the ones that give up), and its size changes. A server that took the terminal
//! over reads the keys itself meanwhile (`Keys`).

use std::io::Read;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use super::{echo, lock, send, terminal_size, SharedWriter, TtyHandover};
use crate::protocol::frame::ClientMsg;

/// Who reads the keys typed into the terminal: the input thread, unless the server took
/// the terminal over (then the thread leaves it alone until the link ends).
pub(super) struct Keys {
    server_reads: Arc<AtomicBool>,
    waker: crate::sys::Waker,
}

impl Keys {
    /// Keys read here for now; the wake pipe is the input thread's.
    pub(super) fn new() -> std::io::Result<(Keys, crate::sys::WakePipe)> {
        let wake = crate::sys::WakePipe::new()?;
        let keys = Keys {
            server_reads: Arc::new(AtomicBool::new(false)),
            waker: wake.waker(),
        };
        Ok((keys, wake))
    }

    pub(super) fn hand_over(&self, tty: Option<TtyHandover>) {
        let Some(tty) = tty else {
            return;
        };
        self.server_reads.store(true, Ordering::Release);
        self.waker.wake();
        if tty.hand_over().is_err() {
            // The server waits for it in vain and ends the link; until then, keys are ours.
            self.take_back();
        }
    }

    pub(super) fn take_back(&self) {
        self.server_reads.store(false, Ordering::Release);
        self.waker.wake();
    }
}

pub(super) fn spawn_input_thread(
    writer: SharedWriter,
    quit: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    (keys, wake): (&Keys, crate::sys::WakePipe),
    echo: Option<echo::Echo>,
) -> std::io::Result<()> {
    let server_reads = keys.server_reads.clone();
    std::thread::Builder::new()
        .name("herdr-stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut buf = [0u8; 16 * 1024];
            let mut after_prefix = false;
            // (Keys may come as escape sequences: kitty keys, modifyOtherKeys.)
            let mut parser = crate::input::InputParser::new();
            loop {
                let mut fds = vec![wake.fd()];
                if !server_reads.load(Ordering::Acquire) {
                    fds.push(stdin.as_fd());
                }
                // (Woken to take back a guess the host did not echo in time.)
                let due = echo.as_ref().and_then(echo::Echo::deadline);
                let timeout = due.map(|d| d.saturating_duration_since(std::time::Instant::now()));
                let Ok(ready) = crate::sys::poll_readable(&fds, timeout) else {
                    break;
                };
                // (Only once a guess's time is up: a keystroke that woke the poll
                // redraws the guesses itself.)
                let now = std::time::Instant::now();
                if let Some(echo) = echo.as_ref().filter(|_| due.is_some_and(|d| now >= d)) {
                    echo.tick();
                }
                if ready[0] {
                    wake.drain();
                }
                if !ready.get(1).copied().unwrap_or(false) || server_reads.load(Ordering::Acquire) {
                    continue;
                }
                match stdin.lock().read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let tokens = parser.feed(&buf[..n]);
                        // Guessed before it is sent, so the echo can never come first.
                        let echo = echo.as_ref().filter(|_| lock(&writer).is_some());
                        if let Some(echo) = echo {
                            echo.typed(&tokens);
                        }
                        if !send(&writer, ClientMsg::Input(buf[..n].to_vec())) {
                            if let Some(echo) = echo {
                                echo.forget();
                            }
                            // Not connected: only ctrl-c, or the prefix then q, mean something.
                            for key in typed_keys(tokens) {
                                if key == crate::input::Key::ctrl('c')
                                    || (after_prefix
                                        && key
                                            == crate::input::Key::plain(
                                                crate::input::KeyCode::Char('q'),
                                            ))
                                {
                                    quit.store(true, Ordering::Release);
                                } else if key != crate::input::Key::ctrl('b') {
                                    refused.fetch_add(1, Ordering::AcqRel);
                                }
                                after_prefix = key == crate::input::Key::ctrl('b');
                            }
                        }
                    }
                }
            }
        })?;
    Ok(())
}

pub(super) fn spawn_resize_thread(
    writer: SharedWriter,
    resizes: Arc<std::sync::atomic::AtomicU64>,
) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGWINCH])?;
    std::thread::Builder::new()
        .name("herdr-winch".into())
        .spawn(move || {
            for _ in signals.forever() {
                resizes.fetch_add(1, Ordering::AcqRel);
                let (cols, rows) = terminal_size();
                send(&writer, ClientMsg::Resize(cols, rows));
            }
        })?;
    Ok(())
}

/// The keys in what was typed (releases and the like left out).
fn typed_keys(tokens: Vec<crate::input::Token>) -> Vec<crate::input::Key> {
    use crate::input::Token;
    let mut keys = Vec::new();
    for t in tokens {
        match t {
            Token::Key { key, .. } => keys.push(key),
            Token::Text(text) => keys.extend(
                text.chars()
                    .map(|c| crate::input::Key::plain(crate::input::KeyCode::Char(c))),
            ),
            _ => {}
        }
    }
    keys
}
