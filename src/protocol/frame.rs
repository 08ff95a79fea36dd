//! Binary frames of interactive connections: `u32` big-endian length, then a one-byte tag,
//! then the payload; the length counts tag + payload. Tags are never reused: a retired
//! message keeps its number reserved.
//!
//! Decoding is split in two, so a partial frame is never an error: [`Decoder::next`]
//! returns `Ok(None)` until a whole frame is buffered.

use std::io::{self, Read, Write};

/// Frames larger than this are malformed: the connection is closed.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

mod tag {
    // client -> server
    pub const INPUT: u8 = 1;
    pub const RESIZE: u8 = 2;
    pub const DETACH: u8 = 3;
    pub const PING: u8 = 4;
    // server -> client
    pub const OUTPUT: u8 = 101;
    pub const EXIT: u8 = 102;
    pub const RECONNECT: u8 = 103;
    pub const PONG: u8 = 104;
    pub const SWITCH: u8 = 105;
    pub const FRAME: u8 = 106;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMsg {
    /// Bytes the user typed (raw terminal input).
    Input(Vec<u8>),
    /// The client's terminal size: (cols, rows).
    Resize(u16, u16),
    Detach,
    /// Are you there? (a link keepalive; only to servers that offer "ping")
    Ping,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMsg {
    /// Terminal bytes to write to the user's terminal as they are.
    Output(Vec<u8>),
    /// The server ends this attachment; the text says why (shown to the user).
    Exit(String),
    /// The server is being replaced (live update): connect again shortly, the session
    /// stays as it is. The text says why.
    Reconnect(String),
    /// The answer to a ping.
    Pong,
    /// The user chose another session (the session picker): leave this server and
    /// attach to the named session's, starting it if it is only saved. Sent only to
    /// clients whose hello says they can ([`Hello::switch`](crate::protocol::Hello)).
    Switch(String),
    /// Terminal output that is a whole frame, with its number (for clients that take
    /// numbered frames: see `protocol::FEATURE_RESUME`): 8 bytes big-endian, then the
    /// bytes.
    Frame(u64, Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {0} bytes exceeds the limit of {MAX_FRAME}")]
    TooLarge(usize),
    #[error("empty frame")]
    Empty,
    #[error("unknown frame tag {0}")]
    UnknownTag(u8),
    #[error("malformed frame with tag {0}")]
    Malformed(u8),
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn encode(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.extend_from_slice(&((payload.len() + 1) as u32).to_be_bytes());
    out.push(tag);
    out.extend_from_slice(payload);
    out
}

impl ClientMsg {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ClientMsg::Input(b) => encode(tag::INPUT, b),
            ClientMsg::Resize(c, r) => {
                let mut p = c.to_be_bytes().to_vec();
                p.extend_from_slice(&r.to_be_bytes());
                encode(tag::RESIZE, &p)
            }
            ClientMsg::Detach => encode(tag::DETACH, &[]),
            ClientMsg::Ping => encode(tag::PING, &[]),
        }
    }

    fn decode(tag: u8, p: &[u8]) -> Result<ClientMsg, FrameError> {
        match tag {
            tag::INPUT => Ok(ClientMsg::Input(p.to_vec())),
            tag::RESIZE if p.len() == 4 => Ok(ClientMsg::Resize(
                u16::from_be_bytes([p[0], p[1]]),
                u16::from_be_bytes([p[2], p[3]]),
            )),
            tag::DETACH if p.is_empty() => Ok(ClientMsg::Detach),
            tag::PING if p.is_empty() => Ok(ClientMsg::Ping),
            tag::RESIZE | tag::DETACH | tag::PING => Err(FrameError::Malformed(tag)),
            t => Err(FrameError::UnknownTag(t)),
        }
    }
}

impl ServerMsg {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ServerMsg::Output(b) => encode(tag::OUTPUT, b),
            ServerMsg::Exit(s) => encode(tag::EXIT, s.as_bytes()),
            ServerMsg::Reconnect(s) => encode(tag::RECONNECT, s.as_bytes()),
            ServerMsg::Pong => encode(tag::PONG, &[]),
            ServerMsg::Switch(s) => encode(tag::SWITCH, s.as_bytes()),
            ServerMsg::Frame(seq, b) => {
                let mut p = Vec::with_capacity(8 + b.len());
                p.extend_from_slice(&seq.to_be_bytes());
                p.extend_from_slice(b);
                encode(tag::FRAME, &p)
            }
        }
    }

    fn decode(tag: u8, p: &[u8]) -> Result<ServerMsg, FrameError> {
        match tag {
            tag::OUTPUT => Ok(ServerMsg::Output(p.to_vec())),
            tag::EXIT => Ok(ServerMsg::Exit(String::from_utf8_lossy(p).into_owned())),
            tag::RECONNECT => Ok(ServerMsg::Reconnect(
                String::from_utf8_lossy(p).into_owned(),
            )),
            tag::PONG => Ok(ServerMsg::Pong),
            tag::SWITCH => Ok(ServerMsg::Switch(String::from_utf8_lossy(p).into_owned())),
            tag::FRAME => match p.split_first_chunk::<8>() {
                Some((seq, bytes)) => {
                    Ok(ServerMsg::Frame(u64::from_be_bytes(*seq), bytes.to_vec()))
                }
                None => Err(FrameError::Malformed(tag)),
            },
            t => Err(FrameError::UnknownTag(t)),
        }
    }
}

/// Incremental decoder over a byte stream.
#[derive(Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Whether it holds the start of a frame whose rest has not come yet.
    pub fn holds_part(&self) -> bool {
        !self.buf.is_empty()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame as (tag, payload), `Ok(None)` if more bytes are needed.
    fn next_raw(&mut self) -> Result<Option<(u8, Vec<u8>)>, FrameError> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len == 0 {
            return Err(FrameError::Empty);
        }
        if len > MAX_FRAME {
            return Err(FrameError::TooLarge(len));
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let tag = self.buf[4];
        let payload = self.buf[5..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some((tag, payload)))
    }

    pub fn next_client(&mut self) -> Result<Option<ClientMsg>, FrameError> {
        match self.next_raw()? {
            Some((t, p)) => ClientMsg::decode(t, &p).map(Some),
            None => Ok(None),
        }
    }

    pub fn next_server(&mut self) -> Result<Option<ServerMsg>, FrameError> {
        match self.next_raw()? {
            Some((t, p)) => ServerMsg::decode(t, &p).map(Some),
            None => Ok(None),
        }
    }
}

/// Blocking reader of server messages (the client side).
pub struct ServerReader<R> {
    inner: R,
    dec: Decoder,
    buf: Vec<u8>,
}

impl<R: Read> ServerReader<R> {
    pub fn new(inner: R) -> Self {
        ServerReader {
            inner,
            dec: Decoder::default(),
            buf: vec![0; 64 * 1024],
        }
    }

    /// `Ok(None)` at a clean end of stream.
    pub fn recv(&mut self) -> Result<Option<ServerMsg>, FrameError> {
        loop {
            if let Some(m) = self.dec.next_server()? {
                return Ok(Some(m));
            }
            let n = self.inner.read(&mut self.buf)?;
            if n == 0 {
                return Ok(None);
            }
            self.dec.push(&self.buf[..n]);
        }
    }
}

pub fn send<W: Write>(w: &mut W, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_bytes() {
        assert_eq!(
            ClientMsg::Input(b"a".to_vec()).encode(),
            [0, 0, 0, 2, 1, b'a']
        );
        assert_eq!(
            ClientMsg::Resize(80, 24).encode(),
            [0, 0, 0, 5, 2, 0, 80, 0, 24]
        );
        assert_eq!(ClientMsg::Detach.encode(), [0, 0, 0, 1, 3]);
        assert_eq!(
            ServerMsg::Exit("x".into()).encode(),
            [0, 0, 0, 2, 102, b'x']
        );
        let switch = ServerMsg::Switch("work".into()).encode();
        assert_eq!(switch, [0, 0, 0, 5, 105, b'w', b'o', b'r', b'k']);
        let mut d = Decoder::default();
        d.push(&switch);
        assert_eq!(
            d.next_server().unwrap(),
            Some(ServerMsg::Switch("work".into()))
        );
        let frame = ServerMsg::Frame(258, b"ab".to_vec()).encode();
        assert_eq!(
            frame,
            [0, 0, 0, 11, 106, 0, 0, 0, 0, 0, 0, 1, 2, b'a', b'b']
        );
        d.push(&frame);
        assert_eq!(
            d.next_server().unwrap(),
            Some(ServerMsg::Frame(258, b"ab".to_vec()))
        );
        d.push(&[0, 0, 0, 4, 106, 0, 0, 1]);
        assert!(matches!(d.next_server(), Err(FrameError::Malformed(106))));
    }

    #[test]
    fn partial_frames_wait_for_more() {
        let bytes = ClientMsg::Resize(100, 30).encode();
        let mut d = Decoder::default();
        for b in &bytes[..bytes.len() - 1] {
            d.push(&[*b]);
            assert!(d.next_client().unwrap().is_none());
        }
        d.push(&bytes[bytes.len() - 1..]);
        assert_eq!(d.next_client().unwrap(), Some(ClientMsg::Resize(100, 30)));
    }

    #[test]
    fn malformed_frames_are_errors() {
        let mut d = Decoder::default();
        d.push(&[0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(d.next_client(), Err(FrameError::TooLarge(_))));
        let mut d = Decoder::default();
        d.push(&[0, 0, 0, 1, 77]);
        assert!(matches!(d.next_client(), Err(FrameError::UnknownTag(77))));
        let mut d = Decoder::default();
        d.push(&[0, 0, 0, 2, 2, 0]);
        assert!(matches!(d.next_client(), Err(FrameError::Malformed(2))));
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn arb_client() -> impl Strategy<Value = ClientMsg> {
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..300).prop_map(ClientMsg::Input),
                (any::<u16>(), any::<u16>()).prop_map(|(c, r)| ClientMsg::Resize(c, r)),
                Just(ClientMsg::Detach),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_bytes_in_any_chunks_never_panic(
                bytes in prop::collection::vec(any::<u8>(), 0..600),
                cut in 1usize..50,
            ) {
                let mut d = Decoder::default();
                for chunk in bytes.chunks(cut) {
                    d.push(chunk);
                    while let Ok(Some(_)) = d.next_client() {}
                }
                // Buffered bytes never exceed what was pushed.
                prop_assert!(d.buf.len() <= bytes.len());
            }

            #[test]
            fn messages_round_trip_through_any_chunking(
                msgs in prop::collection::vec(arb_client(), 1..8),
                cut in 1usize..64,
            ) {
                let wire: Vec<u8> = msgs.iter().flat_map(|m| m.encode()).collect();
                let mut d = Decoder::default();
                let mut got = Vec::new();
                for chunk in wire.chunks(cut) {
                    d.push(chunk);
                    while let Some(m) = d.next_client().unwrap() {
                        got.push(m);
                    }
                }
                prop_assert_eq!(got, msgs);
            }
        }
    }
}
