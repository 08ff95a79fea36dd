//! A slow link for tests: a TCP relay on 127.0.0.1 that forwards each chunk to its target
//! a fixed delay after it came, in order, both ways (half the round trip each way). No
//! kernel support needed (tc netem is missing on some machines). Its threads end with
//! their connections; the listener when the relay is dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pub struct Relay {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Relays connections to `target` with `rtt` added to each round trip.
    pub fn start(target: SocketAddr, rtt: Duration) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            while !s.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((near, _)) => {
                        near.set_nonblocking(false).unwrap();
                        if let Ok(far) = TcpStream::connect(target) {
                            let (a, b) = (near.try_clone().unwrap(), far.try_clone().unwrap());
                            forward(near, far, rtt / 2);
                            forward(b, a, rtt / 2);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Relay { port, stop }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Copies `from` to `to`, each chunk `delay` after it was read.
fn forward(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0
                || tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        while let Ok((due, chunk)) = rx.recv() {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
