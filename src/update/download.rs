//! HTTP downloads for updates: a manifest (small, in memory) and an artifact (streamed to
//! a file while hashing, never held whole in memory). Bounded everywhere: connect and
//! stall timeouts, a bounded number of attempts, a size limit.

use std::io::{IsTerminal, Read, Seek, Write};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Attempts per download (the first and two retries).
const ATTEMPTS: u32 = 3;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A manifest larger than this is not one.
const MAX_MANIFEST: u64 = 1024 * 1024;

pub struct Http {
    client: reqwest::blocking::Client,
}

/// Why a download failed. Every message is whole (its cause included): the last attempt's
/// is wrapped in how many were made, so none is left to a `source()`.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("cannot set up HTTP: {0}")]
    Setup(reqwest::Error),
    #[error("cannot reach {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("{url} answered HTTP {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("reading {url}: {error}")]
    Read { url: String, error: std::io::Error },
    #[error("{url} is larger than a manifest can be")]
    TooLarge { url: String },
    #[error("cannot write the download: {0}")]
    Write(std::io::Error),
    #[error("downloading {url}: {why} after {got} of {size} bytes")]
    Broken {
        url: String,
        why: String,
        got: u64,
        size: u64,
    },
    #[error("{url} sent more than the {size} bytes the manifest announced")]
    TooMuch { url: String, size: u64 },
    #[error("downloading {url}: the server closed the connection after {got} of {size} bytes")]
    Closed { url: String, got: u64, size: u64 },
    #[error("{last} (tried {attempts} times)")]
    GaveUp {
        last: Box<DownloadError>,
        attempts: u32,
    },
}

/// Whether an error may go away on another attempt.
enum Failure {
    Retry(DownloadError),
    Final(DownloadError),
}

impl Http {
    /// `stall`: how long a transfer may go without progress.
    pub fn new(stall: Duration) -> Result<Http, DownloadError> {
        // rustls needs its crypto provider chosen once per process (ring: no OpenSSL).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(stall)
            .user_agent(format!("herdr/{}", crate::protocol::version()))
            .build()
            .map_err(DownloadError::Setup)?;
        Ok(Http { client })
    }

    /// A small document (the manifest), whole.
    pub fn fetch(&self, url: &str) -> Result<Vec<u8>, DownloadError> {
        self.with_retries(url, |resp| {
            let mut body = Vec::new();
            resp.take(MAX_MANIFEST + 1)
                .read_to_end(&mut body)
                .map_err(|error| {
                    Failure::Retry(DownloadError::Read {
                        url: url.into(),
                        error,
                    })
                })?;
            if body.len() as u64 > MAX_MANIFEST {
                return Err(Failure::Final(DownloadError::TooLarge { url: url.into() }));
            }
            Ok(body)
        })
    }

    /// Streams `url` into `file` (from its start) while hashing; exactly `size` bytes must
    /// come. Returns the SHA-256, hex.
    pub fn download(
        &self,
        url: &str,
        size: u64,
        file: &mut std::fs::File,
        label: &str,
    ) -> Result<String, DownloadError> {
        let show = std::io::stderr().is_terminal();
        self.with_retries(url, |mut resp| {
            file.set_len(0)
                .and_then(|_| file.rewind())
                .map_err(|e| Failure::Final(DownloadError::Write(e)))?;
            let mut hasher = Sha256::new();
            let mut got: u64 = 0;
            let mut buf = vec![0u8; 256 * 1024];
            let started = Instant::now();
            let mut shown = started;
            loop {
                let n = match resp.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        return Err(Failure::Retry(DownloadError::Broken {
                            url: url.into(),
                            why: describe_io(&e),
                            got,
                            size,
                        }))
                    }
                };
                got += n as u64;
                if got > size {
                    return Err(Failure::Final(DownloadError::TooMuch {
                        url: url.into(),
                        size,
                    }));
                }
                hasher.update(&buf[..n]);
                file.write_all(&buf[..n])
                    .map_err(|e| Failure::Final(DownloadError::Write(e)))?;
                if show && shown.elapsed() >= Duration::from_millis(100) {
                    shown = Instant::now();
                    progress(label, got, size, started.elapsed());
                }
            }
            if got < size {
                return Err(Failure::Retry(DownloadError::Closed {
                    url: url.into(),
                    got,
                    size,
                }));
            }
            if show {
                progress(label, got, size, started.elapsed());
                eprintln!();
            }
            file.sync_all()
                .map_err(|e| Failure::Final(DownloadError::Write(e)))?;
            Ok(hex(&hasher.finalize()))
        })
    }

    fn with_retries<T>(
        &self,
        url: &str,
        mut body: impl FnMut(reqwest::blocking::Response) -> Result<T, Failure>,
    ) -> Result<T, DownloadError> {
        let mut attempt = 1;
        loop {
            let outcome = match self.client.get(url).send() {
                Err(e) => Failure::Retry(DownloadError::Unreachable {
                    url: url.into(),
                    why: describe(&e),
                }),
                Ok(resp) if resp.status().is_server_error() => {
                    Failure::Retry(DownloadError::Status {
                        url: url.into(),
                        status: resp.status(),
                    })
                }
                Ok(resp) if !resp.status().is_success() => Failure::Final(DownloadError::Status {
                    url: url.into(),
                    status: resp.status(),
                }),
                Ok(resp) => match body(resp) {
                    Ok(v) => return Ok(v),
                    Err(f) => f,
                },
            };
            match outcome {
                Failure::Final(e) => return Err(e),
                Failure::Retry(last) if attempt >= ATTEMPTS => {
                    return Err(DownloadError::GaveUp {
                        last: Box::new(last),
                        attempts: ATTEMPTS,
                    })
                }
                Failure::Retry(_) => {}
            }
            std::thread::sleep(Duration::from_millis(500 * u64::from(attempt)));
            attempt += 1;
        }
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("connection failed ({e})")
    } else {
        e.to_string()
    }
}

fn describe_io(e: &std::io::Error) -> String {
    // The cause may be a few errors down (an I/O error wrapping the HTTP client's).
    let mut timed_out = e.kind() == std::io::ErrorKind::TimedOut;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|r| r as _);
    while let Some(c) = cause {
        if c.downcast_ref::<reqwest::Error>()
            .is_some_and(|r| r.is_timeout())
            || c.to_string().contains("timed out")
        {
            timed_out = true;
        }
        cause = c.source();
    }
    if timed_out {
        "the transfer stalled (no data within the timeout)".into()
    } else {
        e.to_string()
    }
}

fn progress(label: &str, got: u64, size: u64, elapsed: Duration) {
    let mb = |b: u64| b as f64 / 1_000_000.0;
    let rate = mb(got) / elapsed.as_secs_f64().max(0.001);
    let pct = (got * 100).checked_div(size).unwrap_or(100);
    eprint!(
        "\r\x1b[K{label}: {:.1} of {:.1} MB ({pct}%), {rate:.1} MB/s",
        mb(got),
        mb(size)
    );
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
