//! A small HTTP/1.1 server on 127.0.0.1 for update tests: serves a folder, and on chosen
//! paths misbehaves as real servers do (an error status, a body cut short, a stall).
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub enum Reply {
    Status(u16),
    /// Announces the whole length, sends `send` bytes, closes.
    Truncated {
        send: usize,
    },
    /// Sends `send` bytes, then nothing (until the server stops).
    Stall {
        send: usize,
    },
}

pub struct HttpServer {
    pub port: u16,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    stop: Arc<AtomicBool>,
}

impl HttpServer {
    pub fn start(dir: PathBuf) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (r, h, s) = (routes.clone(), hits.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (r, h, s, dir) = (r.clone(), h.clone(), s.clone(), dir.clone());
                std::thread::spawn(move || serve(conn, &dir, &r, &h, &s));
            }
        });
        HttpServer {
            port,
            routes,
            hits,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn route(&self, path: &str, reply: Reply) {
        self.routes.lock().unwrap().insert(path.to_string(), reply);
    }

    /// Requests seen for `path`.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(
    mut conn: TcpStream,
    dir: &std::path::Path,
    routes: &Mutex<HashMap<String, Reply>>,
    hits: &Mutex<HashMap<String, usize>>,
    stop: &AtomicBool,
) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
        if req.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&req);
    let path = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let reply = routes.lock().unwrap().get(&path).cloned();
    let body = std::fs::read(dir.join(path.trim_start_matches('/'))).ok();
    let head = |status: &str, len: usize| {
        format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    match (reply, body) {
        (Some(Reply::Status(code)), _) => {
            let _ = conn.write_all(head(&format!("{code} Test"), 0).as_bytes());
        }
        (Some(Reply::Truncated { send }), Some(body)) => {
            let _ = conn.write_all(head("200 OK", body.len()).as_bytes());
            let _ = conn.write_all(&body[..send.min(body.len())]);
        }
        (Some(Reply::Stall { send }), Some(body)) => {
            let _ = conn.write_all(head("200 OK", body.len()).as_bytes());
            let _ = conn.write_all(&body[..send.min(body.len())]);
            let end = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::Acquire) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        (None, Some(body)) => {
            let _ = conn.write_all(head("200 OK", body.len()).as_bytes());
            let _ = conn.write_all(&body);
        }
        (_, None) => {
            let _ = conn.write_all(head("404 Not Found", 0).as_bytes());
        }
    }
}
