//! A JSON API connection to a test's server: the hello, then requests written ahead of
//! their replies when a test needs many (one round trip per request would dominate).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use serde_json::Value;

use super::{Env, WAIT};

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
