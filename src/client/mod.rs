//! The interactive client: connects to (or starts) a session's server, puts the user's
//! terminal in raw mode, forwards input and size changes, and writes the frames the server
//! renders. It speaks over any byte stream; losing the stream is an event it handles
//! (restore the terminal, say why, exit non-zero), never a hang.

pub mod connect;

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::paths::SessionName;
use crate::protocol::frame::{ClientMsg, ServerMsg, ServerReader};
use crate::protocol::Role;
use crate::sys::tty::{is_tty, RawModeGuard};

/// Terminal modes the client turns on for the session: alternate screen, mouse reporting
/// (button events + drags, SGR coordinates), bracketed paste.
const ENTER: &[u8] = b"\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[H\x1b[2J";
/// …and everything back off on the way out, including modes a pane may have mirrored.
const LEAVE: &[u8] = b"\x1b[?2026l\x1b[0m\x1b[?1006l\x1b[?1002l\x1b[?1000l\x1b[?2004l\x1b[?1l\x1b>\x1b[?25h\x1b[?1049l";

pub enum Outcome {
    /// The server ended the attachment on purpose (detach, stop, session end).
    Ended(String),
    /// The connection was lost.
    Lost(String),
}

pub fn attach(session: &SessionName) -> anyhow::Result<i32> {
    let stdin = std::io::stdin();
    if !is_tty(stdin.as_fd()) {
        anyhow::bail!("herdr needs a terminal to attach to; run it in a terminal (or use `herdr server start` to start a session in the background)");
    }
    if std::env::var("HERDR_SESSION").ok().as_deref() == Some(session.as_str())
        && std::env::var_os("HERDR_PANE").is_some()
    {
        anyhow::bail!(
            "you are inside a pane of session {session}; attaching to it from here would show it inside itself. \
             Use another session (--session NAME), or detach first"
        );
    }
    let size = crate::sys::get_winsize(std::io::stdout().as_fd())
        .map(|(r, c)| (c, r))
        .unwrap_or((80, 24));
    let (stream, _started) = connect::connect_or_start(session, Role::Client, Some(size))?;
    let outcome = run(stream)?;
    match outcome {
        Outcome::Ended(why) => {
            println!("[{why}]");
            Ok(0)
        }
        Outcome::Lost(why) => {
            eprintln!("herdr: lost the connection to the server of session {session}: {why}");
            Ok(1)
        }
    }
}

/// Runs an attachment over an established, hello'd stream until it ends.
pub fn run(stream: UnixStream) -> anyhow::Result<Outcome> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    let guard =
        RawModeGuard::enter(stdin.as_fd()).context("cannot put the terminal in raw mode")?;
    stdout.write_all(ENTER)?;
    stdout.flush()?;

    let writer = Arc::new(Mutex::new(stream.try_clone()?));
    spawn_input_thread(writer.clone())?;
    spawn_resize_thread(writer)?;

    let mut reader = ServerReader::new(stream);
    let outcome = loop {
        match reader.recv() {
            Ok(Some(ServerMsg::Output(bytes))) => {
                if stdout
                    .write_all(&bytes)
                    .and_then(|_| stdout.flush())
                    .is_err()
                {
                    break Outcome::Lost("cannot write to the terminal".into());
                }
            }
            Ok(Some(ServerMsg::Exit(why))) => break Outcome::Ended(why),
            Ok(None) => break Outcome::Lost("the server closed the connection".into()),
            Err(e) => break Outcome::Lost(e.to_string()),
        }
    };
    let _ = stdout.write_all(LEAVE);
    let _ = stdout.flush();
    drop(guard);
    Ok(outcome)
}

fn send(writer: &Mutex<UnixStream>, msg: ClientMsg) -> std::io::Result<()> {
    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
    w.write_all(&msg.encode())
}

fn spawn_input_thread(writer: Arc<Mutex<UnixStream>>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("herdr-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 16 * 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if send(&writer, ClientMsg::Input(buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
        })?;
    Ok(())
}

fn spawn_resize_thread(writer: Arc<Mutex<UnixStream>>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGWINCH])?;
    std::thread::Builder::new()
        .name("herdr-winch".into())
        .spawn(move || {
            for _ in signals.forever() {
                if let Ok((rows, cols)) = crate::sys::get_winsize(std::io::stdout().as_fd()) {
                    if send(&writer, ClientMsg::Resize(cols, rows)).is_err() {
                        break;
                    }
                }
            }
        })?;
    Ok(())
}
