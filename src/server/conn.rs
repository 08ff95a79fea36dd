//! Connections: the accept thread, the hello handshake, and per-connection reader/writer
//! threads. Nothing here touches session state: everything becomes an [`Event`] for the
//! server's single owner thread.
//!
//! Invariants: a connection from another uid is refused before reading a byte; a
//! malformed hello or frame closes that connection only; a client that stops reading
//! never blocks the server (its writer queue is bounded and frames are skipped instead).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::time::Duration;

use crate::protocol::frame::Decoder;
use crate::protocol::{check_hello, HelloReply, Role, MAX_HELLO_LEN};

use super::Event;

/// Frames queued per client before the server starts skipping frames for it.
const CLIENT_QUEUE_FRAMES: usize = 8;
/// A peer must finish its hello within this time.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

pub type ClientId = u64;

/// The server's handle on one interactive client's outgoing byte stream.
pub struct ClientWriter {
    tx: SyncSender<Vec<u8>>,
    stream: UnixStream,
}

impl ClientWriter {
    /// Queues an encoded frame; false if the client is behind (the frame was not queued).
    pub fn try_send(&self, bytes: Vec<u8>) -> bool {
        match self.tx.try_send(bytes) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Ends the connection (unblocks both threads).
    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// Queues a last message, waiting briefly for room; then closes the write side once it
    /// is flushed.
    pub fn send_last(self, bytes: Vec<u8>) {
        let _ = self.tx.send_timeout_compat(bytes);
        drop(self.tx);
    }
}

trait SendTimeoutCompat {
    fn send_timeout_compat(&self, bytes: Vec<u8>) -> Result<(), ()>;
}

impl SendTimeoutCompat for SyncSender<Vec<u8>> {
    /// `SyncSender` has no send_timeout on stable; retry try_send for up to 200 ms so a
    /// stuck client cannot hold the server.
    fn send_timeout_compat(&self, mut bytes: Vec<u8>) -> Result<(), ()> {
        for _ in 0..20 {
            match self.try_send(bytes) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(b)) => {
                    bytes = b;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TrySendError::Disconnected(_)) => return Err(()),
            }
        }
        Err(())
    }
}

pub fn spawn_acceptor(listener: UnixListener, events: Sender<Event>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("herdr-accept".into())
        .spawn(move || {
            let mut next_id: ClientId = 0;
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                next_id += 1;
                let id = next_id;
                let events = events.clone();
                let _ = std::thread::Builder::new()
                    .name(format!("herdr-conn-{id}"))
                    .spawn(move || handle_connection(id, stream, events));
            }
        })?;
    Ok(())
}

fn handle_connection(id: ClientId, stream: UnixStream, events: Sender<Event>) {
    let uid = nix::unistd::getuid().as_raw();
    match crate::sys::peer_uid(stream.as_fd()) {
        Ok(peer) if peer == uid => {}
        _ => return, // another user's process: close without a word
    }
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
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
            let _ = write_line(&stream, &HelloReply::reject(msg));
            return;
        }
    };
    if write_line(&stream, &HelloReply::accept()).is_err() {
        return;
    }
    let _ = stream.set_read_timeout(None);
    match hello.role {
        Role::Client => client_loop(id, stream, reader, hello.size.unwrap_or((80, 24)), events),
        Role::Api => api_loop(id, stream, reader, events),
    }
}

fn write_line<T: serde::Serialize>(mut stream: &UnixStream, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string(value).map_err(std::io::Error::other)?;
    text.push('\n');
    stream.write_all(text.as_bytes())
}

fn client_loop(
    id: ClientId,
    stream: UnixStream,
    mut reader: BufReader<UnixStream>,
    size: (u16, u16),
    events: Sender<Event>,
) {
    let (tx, rx) = mpsc::sync_channel(CLIENT_QUEUE_FRAMES);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    if spawn_writer(id, write_half, rx).is_err() {
        return;
    }
    let writer = ClientWriter { tx, stream };
    if events.send(Event::Attach { id, writer, size }).is_err() {
        return;
    }
    let mut dec = Decoder::default();
    // Bytes the BufReader already holds belong to the frame stream.
    dec.push(reader.buffer());
    let mut buf = vec![0u8; 64 * 1024];
    let reason = loop {
        match dec.next_client() {
            Ok(Some(msg)) => {
                if events.send(Event::ClientMsg(id, msg)).is_err() {
                    return;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => break Some(e.to_string()),
        }
        match reader.get_mut().read(&mut buf) {
            Ok(0) | Err(_) => break None,
            Ok(n) => dec.push(&buf[..n]),
        }
    };
    let _ = events.send(Event::ClientGone(id, reason));
}

fn spawn_writer(
    id: ClientId,
    mut stream: UnixStream,
    rx: Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("herdr-write-{id}"))
        .spawn(move || {
            for bytes in rx {
                if stream.write_all(&bytes).is_err() {
                    break;
                }
            }
            let _ = stream.shutdown(std::net::Shutdown::Write);
        })?;
    Ok(())
}

/// Longest API request line; a longer one is answered with an error and the connection
/// closed, so a peer cannot make the server buffer without limit.
pub const MAX_API_LINE: usize = 1024 * 1024;
/// Reply and event lines queued per API connection; a peer that stops reading is
/// disconnected when its queue is full.
const API_QUEUE_LINES: usize = 4096;

/// The server's handle on one API connection's outgoing lines.
pub struct ApiWriter {
    tx: SyncSender<String>,
    stream: UnixStream,
}

impl ApiWriter {
    /// Queues one line (without its newline); false if the peer is not keeping up.
    pub fn try_send(&self, line: String) -> bool {
        self.tx.try_send(line).is_ok()
    }

    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

fn api_loop(
    id: ClientId,
    stream: UnixStream,
    mut reader: BufReader<UnixStream>,
    events: Sender<Event>,
) {
    let (tx, rx) = mpsc::sync_channel::<String>(API_QUEUE_LINES);
    let Ok(mut write_half) = stream.try_clone() else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name(format!("herdr-api-write-{id}"))
        .spawn(move || {
            for mut line in rx {
                line.push('\n');
                if write_half.write_all(line.as_bytes()).is_err() {
                    break;
                }
            }
            let _ = write_half.shutdown(std::net::Shutdown::Both);
        });
    if spawned.is_err() {
        return;
    }
    let writer = ApiWriter { tx, stream };
    if events.send(Event::ApiOpen { id, writer }).is_err() {
        return;
    }
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_API_LINE as u64 + 1;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            if line.len() > MAX_API_LINE {
                let _ = events.send(Event::ApiTooLong(id));
            }
            // Otherwise: end of stream in the middle of a line, nothing to answer.
            break;
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        if events.send(Event::ApiRequest { id, line: text }).is_err() {
            break;
        }
    }
    let _ = events.send(Event::ApiClosed(id));
}
