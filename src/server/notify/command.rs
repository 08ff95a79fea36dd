//! The user's `[notify] command`, run for each notification with the event as one JSON
//! object on its stdin (for ntfy, a phone, a chat webhook).
//!
//! Invariants: the server thread only starts a thread here; that thread starts the
//! program, writes its stdin and waits for it. At most [`MAX_IN_FLIGHT`] run at once (an
//! event beyond is dropped and logged), each is killed with its process group after
//! [`TIMEOUT`], and what it prints to stderr is read up to [`MAX_STDERR`] bytes for the
//! log. Nothing it does can hold the server up, and none outlives the server: those still
//! running when it stops are killed ([`Runner::stop`]).

use crate::log;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Commands running at once, at most.
pub const MAX_IN_FLIGHT: usize = 4;
/// A command still running this long after it started is killed.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// What a failing command printed to stderr is logged up to this many bytes.
const MAX_STDERR: usize = 2048;
/// How often a command is looked at where the kernel has no pidfd to wait on.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// The process groups of the commands running, by their leader's pid. A pid is in it
/// from the spawn until its thread reaps it, under this lock, so a pid in it is never
/// another process's.
type Running = Arc<parking_lot::Mutex<BTreeSet<i32>>>;

/// Starts the commands and counts those running.
#[derive(Debug)]
pub struct Runner {
    in_flight: Arc<AtomicUsize>,
    running: Running,
    timeout: Duration,
}

impl Default for Runner {
    fn default() -> Runner {
        Runner {
            in_flight: Arc::default(),
            running: Running::default(),
            timeout: TIMEOUT,
        }
    }
}

/// Why a command was not started.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{MAX_IN_FLIGHT} notify commands are still running")]
    Busy,
    #[error("cannot start a thread for it: {0}")]
    Thread(std::io::Error),
}

impl Runner {
    /// Runs `argv` with `input` on its stdin, in a thread of its own.
    pub fn run(&self, argv: Vec<String>, input: String) -> Result<(), Refused> {
        let taken = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_IN_FLIGHT).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(Refused::Busy);
        }
        let (count, timeout) = (self.in_flight.clone(), self.timeout);
        let running = self.running.clone();
        std::thread::Builder::new()
            .name("herdr-notify".into())
            .spawn(move || {
                if let Err(e) = run_one(&argv, &input, timeout, &running) {
                    log::warn!("notify", "command {}: {e}", shown(&argv));
                }
                count.fetch_sub(1, Ordering::AcqRel);
            })
            .map(drop)
            .map_err(|e| {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                Refused::Thread(e)
            })
    }

    /// The server stops: the commands still running are killed with what they started.
    pub fn stop(&self) {
        for pid in self.running.lock().iter() {
            crate::sys::signal_group(*pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// The command as the log names it.
pub fn shown(argv: &[String]) -> String {
    format!("{argv:?}")
}

/// What went wrong with one run of the user's notify command (logged with the command).
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error("is empty")]
    Empty,
    #[error("cannot start it: {0}")]
    Start(std::io::Error),
    #[error("still running after {0:?}: killed")]
    Killed(Duration),
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    #[error("failed ({status})")]
    Failed { status: std::process::ExitStatus },
    #[error("failed ({status}): {said}")]
    FailedSaying {
        status: std::process::ExitStatus,
        said: String,
    },
}

/// Starts the program, gives it its input, waits for it (killing it at the deadline).
fn run_one(
    argv: &[String],
    input: &str,
    timeout: Duration,
    running: &Running,
) -> Result<(), RunError> {
    let (program, args) = argv.split_first().ok_or(RunError::Empty)?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own group: a timeout kills what it started too.
        .process_group(0)
        .spawn()
        .map_err(RunError::Start)?;
    let pid = child.id() as i32;
    running.lock().insert(pid);
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input may exit first: not an error.
        let _ = stdin.write_all(input.as_bytes());
    }
    let deadline = Instant::now() + timeout;
    let status = match wait_until(&mut child, deadline, running) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let mut set = running.lock();
            crate::sys::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            set.remove(&pid);
            return Err(RunError::Killed(timeout));
        }
        Err(e) => return Err(RunError::Wait(e)),
    };
    if status.success() {
        return Ok(());
    }
    let said = child.stderr.take().map(stderr_of).unwrap_or_default();
    Err(match said.is_empty() {
        true => RunError::Failed { status },
        false => RunError::FailedSaying { status, said },
    })
}

/// Waits for the child until `deadline`: on its pidfd where the kernel has them, else by
/// looking every [`POLL_EVERY`]. `None` if it is still running then. Reaped under the
/// lock of `running`, and taken out of it then.
fn wait_until(
    child: &mut Child,
    deadline: Instant,
    running: &Running,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let pid = child.id() as i32;
    let pidfd = crate::sys::fdpass::pidfd_open(pid).ok();
    loop {
        {
            let mut set = running.lock();
            let waited = child.try_wait();
            if !matches!(waited, Ok(None)) {
                set.remove(&pid);
                return waited;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        match &pidfd {
            Some(fd) => {
                let _ = crate::sys::poll_readable(&[fd.as_fd()], Some(left));
            }
            None => std::thread::sleep(POLL_EVERY.min(left)),
        }
    }
}

/// What the command wrote to stderr, as one line of at most [`MAX_STDERR`] bytes, without
/// waiting for a writer that is still alive (something it started in the background).
fn stderr_of(stderr: std::process::ChildStderr) -> String {
    if crate::sys::set_nonblocking(stderr.as_fd()).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = stderr.take(MAX_STDERR as u64).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Running {
        Running::default()
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn the_input_reaches_stdin_and_failures_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("got");
        let script = format!("cat > '{}'", file.display());
        assert!(run_one(&sh(&script), "{\"a\":1}", TIMEOUT, &none()).is_ok());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"a\":1}");
        let err = run_one(
            &sh("echo 'no such topic' >&2; exit 3"),
            "",
            TIMEOUT,
            &none(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("exit status: 3") && err.contains("no such topic"),
            "{err}"
        );
        let err = run_one(&["/nonexistent/ntfy".to_string()], "", TIMEOUT, &none()).unwrap_err();
        assert!(matches!(err, RunError::Start(_)), "{err}");
        assert!(err.to_string().starts_with("cannot start it"), "{err}");
    }

    #[test]
    fn at_most_a_few_run_at_once_and_each_is_killed_at_its_deadline() {
        let runner = Runner {
            timeout: Duration::from_millis(300),
            ..Runner::default()
        };
        for _ in 0..MAX_IN_FLIGHT {
            runner.run(sh("sleep 1000"), String::new()).unwrap();
        }
        assert!(matches!(
            runner.run(sh("true"), String::new()),
            Err(Refused::Busy)
        ));
        let deadline = Instant::now() + Duration::from_secs(20);
        while runner.in_flight.load(Ordering::Acquire) > 0 {
            assert!(
                Instant::now() < deadline,
                "the hanging commands were not killed"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        runner.run(sh("true"), String::new()).unwrap();
        assert!(runner.running.lock().len() <= 1);
        let err = run_one(&sh("sleep 1000"), "", Duration::from_millis(50), &none()).unwrap_err();
        assert!(matches!(err, RunError::Killed(_)), "{err}");
        assert!(err.to_string().contains("killed"), "{err}");
    }

    #[test]
    fn none_outlives_a_stop() {
        let runner = Runner::default();
        runner
            .run(
                vec!["/bin/sh".into(), "-c".into(), "sleep 1000".into()],
                String::new(),
            )
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while runner.running.lock().is_empty() {
            assert!(Instant::now() < deadline, "it never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        runner.stop();
        while runner.in_flight.load(Ordering::Acquire) > 0 {
            assert!(Instant::now() < deadline, "still running after the stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(runner.running.lock().is_empty());
    }
}
