//! Cold persistence: the session's structure (and, opt-in, its screens) on disk, so a
//! server that stopped or died comes back with the same workspaces, tabs and layout.
//!
//! Files (in the session's state folder, mode 0600): `session.json` (structure only) and,
//! when `[persistence] history = true`, `session-history.json`. Both carry the same
//! generation number; the history is written first, so after a crash between the two
//! writes the reader sees a history whose generation does not match and ignores it —
//! never a history applied to the wrong structure.
//!
//! A `session.json` written by a newer herdr is never written over or removed: the store
//! becomes read-only for the life of this server. A corrupt one is moved aside.

pub mod files;
pub mod schedule;
pub mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use snapshot::{HistorySnapshot, LoadError, SessionSnapshot};

pub const SESSION_FILE: &str = "session.json";
pub const HISTORY_FILE: &str = "session-history.json";

/// What was found on disk at start-up.
#[derive(Debug)]
pub enum Loaded {
    Nothing,
    /// A snapshot, and its history if one exists that belongs to it.
    Snapshot(SessionSnapshot, Option<HistorySnapshot>),
    /// Written by a newer herdr: left alone, nothing restored, nothing saved.
    Newer(String),
    /// Unreadable: moved aside to the given path.
    Corrupt {
        reason: String,
        moved_to: Option<PathBuf>,
    },
}

#[derive(Debug, Clone)]
pub struct Paths {
    pub session: PathBuf,
    pub history: PathBuf,
}

impl Paths {
    pub fn in_dir(dir: &Path) -> Paths {
        Paths {
            session: dir.join(SESSION_FILE),
            history: dir.join(HISTORY_FILE),
        }
    }
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reads the snapshot (and matching history), applying the version and corruption rules.
pub fn load(paths: &Paths) -> Loaded {
    // A server killed mid-save can leave its temp files behind.
    files::remove_stale_temps(&paths.session);
    files::remove_stale_temps(&paths.history);
    let bytes = match files::read_if_exists(&paths.session) {
        Ok(Some(b)) => b,
        Ok(None) => return Loaded::Nothing,
        Err(e) => {
            return Loaded::Corrupt {
                reason: e.to_string(),
                moved_to: None,
            }
        }
    };
    match snapshot::parse(&bytes) {
        Ok(snap) => {
            let history = load_history(&paths.history, snap.generation);
            Loaded::Snapshot(snap, history)
        }
        Err(LoadError::Newer { found }) => Loaded::Newer(found),
        Err(LoadError::Corrupt(reason)) => {
            let moved_to = files::move_aside(&paths.session, unix_now()).ok();
            Loaded::Corrupt { reason, moved_to }
        }
    }
}

/// The history file, only if it parses and belongs to this generation.
fn load_history(path: &Path, generation: u64) -> Option<HistorySnapshot> {
    let bytes = files::read_if_exists(path).ok()??;
    let h: HistorySnapshot = serde_json::from_slice(&bytes).ok()?;
    (h.generation == generation).then_some(h)
}

/// One save: the structure and what to do with the history file.
pub struct SaveJob {
    pub generation: u64,
    pub session: Vec<u8>,
    pub history: HistoryAction,
}

pub enum HistoryAction {
    Write(Vec<u8>),
    /// History is off: the old file must not outlive that choice.
    Delete,
}

#[derive(Debug)]
pub struct SaveReport {
    pub generation: u64,
    pub bytes: usize,
    /// How long writing (both files, fsynced) took.
    pub took: std::time::Duration,
    pub result: Result<(), files::FileError>,
}

/// Writes a job: history first, then the structure (see the module doc for why).
pub fn write(paths: &Paths, job: &SaveJob) -> SaveReport {
    let started = std::time::Instant::now();
    let mut bytes = job.session.len();
    let result = (|| {
        match &job.history {
            HistoryAction::Write(h) => {
                bytes += h.len();
                files::write_atomic(&paths.history, h)?;
            }
            HistoryAction::Delete => files::remove_if_exists(&paths.history)?,
        }
        files::write_atomic(&paths.session, &job.session)
    })();
    SaveReport {
        generation: job.generation,
        bytes,
        took: started.elapsed(),
        result,
    }
}

/// The background writer: one thread, one job at a time, so two saves never overlap.
pub struct Saver {
    tx: Option<Sender<SaveJob>>,
    thread: Option<JoinHandle<()>>,
}

impl Saver {
    pub fn start(
        paths: Paths,
        done: impl Fn(SaveReport) + Send + 'static,
    ) -> std::io::Result<Saver> {
        let (tx, rx): (Sender<SaveJob>, Receiver<SaveJob>) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("herdr-saver".into())
            .spawn(move || {
                for job in rx {
                    done(write(&paths, &job));
                }
            })?;
        Ok(Saver {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn submit(&self, job: SaveJob) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }

    /// Waits for any job in flight to finish (used before the final synchronous save).
    pub fn finish(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        self.finish();
    }
}

/// "2026-11-30 06:59 UTC" for a unix time, without a date library.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm), proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn history_of_another_generation_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::in_dir(dir.path());
        let h = HistorySnapshot {
            version: snapshot::SNAPSHOT_VERSION,
            generation: 4,
            panes: vec![],
        };
        files::write_atomic(&paths.history, &serde_json::to_vec(&h).unwrap()).unwrap();
        assert!(load_history(&paths.history, 5).is_none());
        assert_eq!(load_history(&paths.history, 4), Some(h));
    }

    #[test]
    fn corrupt_session_is_moved_aside_and_newer_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::in_dir(dir.path());
        std::fs::write(&paths.session, b"{ not json").unwrap();
        match load(&paths) {
            Loaded::Corrupt {
                moved_to: Some(p), ..
            } => {
                assert!(p.display().to_string().contains("session.json.corrupt-"));
                assert_eq!(std::fs::read(&p).unwrap(), b"{ not json");
            }
            other => panic!("{other:?}"),
        }
        assert!(!paths.session.exists());
        let newer = br#"{"version": 99, "future": true}"#;
        std::fs::write(&paths.session, newer).unwrap();
        assert!(matches!(load(&paths), Loaded::Newer(v) if v == "99"));
        assert_eq!(std::fs::read(&paths.session).unwrap(), newer);
    }
}
