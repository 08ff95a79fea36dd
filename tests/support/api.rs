//! A JSON API connection to a test's server: the hello, then requests written ahead of
//! their replies when a test needs many (one round trip per request would dominate).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Env, WAIT};

/// The hello of an API connection.
pub const HELLO: &[u8] =
    b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"t\",\"role\":\"api\"}\n";

/// A raw API connection after its hello: the stream to write requests to and a reader of
/// the lines that come back.
pub fn api_conn(env: &Env) -> (UnixStream, BufReader<UnixStream>) {
    let mut s = UnixStream::connect(env.socket()).expect("connect to the API");
    s.set_read_timeout(Some(WAIT)).expect("read timeout");
    s.write_all(HELLO).expect("hello");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut line = String::new();
    r.read_line(&mut line).expect("hello reply");
    assert!(line.contains("\"ok\":true"), "{line}");
    (s, r)
}

/// Sends one request line on a raw connection and returns the next line that comes back.
pub fn request(s: &mut UnixStream, r: &mut BufReader<UnixStream>, line: &str) -> Value {
    s.write_all(line.as_bytes()).expect("send a request");
    s.write_all(b"\n").expect("send a request");
    let mut answer = String::new();
    r.read_line(&mut answer).expect("read a reply");
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

/// Pings the server every 50 ms on a connection of its own until `stop`; the slowest
/// answer.
pub fn pinger(env: &Env, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Duration> {
    let mut api = Api::connect(env);
    std::thread::spawn(move || {
        let mut worst = Duration::ZERO;
        while !stop.load(Ordering::Acquire) {
            let t = Instant::now();
            let pong = api.call("ping", serde_json::json!({}));
            assert_eq!(pong["pong"], true, "{pong}");
            worst = worst.max(t.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        worst
    })
}

pub struct Api {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl Api {
    pub fn connect(env: &Env) -> Api {
        let mut stream = UnixStream::connect(env.socket()).expect("connect to the API");
        stream.set_read_timeout(Some(WAIT)).expect("read timeout");
        stream
            .write_all(b"{\"herdr\":\"herdr\",\"protocol\":1,\"version\":\"t\",\"role\":\"api\"}\n")
            .expect("hello");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("hello reply");
        assert!(line.contains("\"ok\":true"), "{line}");
        Api {
            stream,
            reader,
            next_id: 1,
        }
    }

    /// Sends a request without waiting for its reply; its id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut line =
            serde_json::json!({"id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.stream
            .write_all(line.as_bytes())
            .expect("send a request");
        id
    }

    /// The next line the server sends.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a reply");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Sends a request and returns its result; panics on an error reply.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let reply = self.recv();
        assert_eq!(reply["id"], id, "{reply}");
        match reply.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {reply}"),
        }
    }
}
