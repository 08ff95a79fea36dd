//! Atomic, symlink-preserving file writes for the saved session.
//!
//! Invariant: a file written here always holds either its complete old content or its
//! complete new content — never a mix, never a truncated file — and a symlink at the given
//! path (dotfile managers keep state files as links) stays a link: the file it points to is
//! what gets replaced. New content goes to a fresh temp file beside the *target* (a rename
//! is only atomic within one filesystem), is fsynced, renamed over the target, and the
//! folder is fsynced so the rename itself survives a crash. A failed write leaves no temp
//! file behind.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;

/// How many symlinks `resolve_links` follows before calling it a loop (Linux allows 40 in
/// total, but a state file behind more than a handful of links is a mistake anyway).
pub const MAX_SYMLINKS: usize = 16;

/// The session holds screen contents and command lines: readable by its owner only.
const MODE: u32 = 0o600;

/// How many names temp-file creation and `move_aside` try before giving up.
const MAX_NAME_TRIES: u32 = 1000;

/// Makes temp names unique within this process; the pid makes them unique across processes.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "{0}: more than {MAX_SYMLINKS} symbolic links to follow (a link loop?); \
         point the link at a real file or remove it"
    )]
    TooManyLinks(PathBuf),
    #[error(
        "{path}: {source}; check that its folder exists and is writable by you and that \
         the disk has space"
    )]
    Io { path: PathBuf, source: io::Error },
    #[error("{0}: does not name a file; give a path that ends in a file name")]
    NotAFile(PathBuf),
    #[error("{0}: {MAX_NAME_TRIES} files named like it already exist; delete the old ones")]
    NoFreeName(PathBuf),
}

/// The points in `write_atomic_with` after which its hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStage {
    /// The temp file exists (mode 0600) and is empty.
    Created,
    /// All bytes are in the temp file.
    Written,
    /// The temp file is fsynced.
    Synced,
    /// The temp file has replaced the target; only the folder fsync is left. A failure
    /// from here on cannot bring the old content back: the rename is the commit point.
    Renamed,
}

fn io_error(path: &Path, source: io::Error) -> FileError {
    FileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folder holding `path`; a bare file name lives in the current folder.
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn file_name(path: &Path) -> Result<&OsStr, FileError> {
    path.file_name()
        .ok_or_else(|| FileError::NotAFile(path.to_path_buf()))
}

/// Follows `path` through symlinks by hand (relative link targets resolve against the
/// link's own folder), at most MAX_SYMLINKS levels, and returns the final target path. A
/// dangling link (target does not exist yet — dotfile managers create these) is fine: its
/// target is returned. A path that is not a link is returned as is.
pub fn resolve_links(path: &Path) -> Result<PathBuf, FileError> {
    let mut current = path.to_path_buf();
    // One pass more than links allowed: the last pass only checks that the path reached
    // after MAX_SYMLINKS hops is not itself a link.
    for _ in 0..=MAX_SYMLINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&current).map_err(|e| io_error(&current, e))?;
                // `join` keeps an absolute target as is. `..` is deliberately not cleaned up
                // lexically: the kernel resolves it physically, as it would through the link.
                current = folder_of(&current).join(target);
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(io_error(&current, e)),
        }
    }
    Err(FileError::TooManyLinks(path.to_path_buf()))
}

/// Removes the temp file when dropped unless disarmed, so no early return (nor a panic)
/// leaves one behind.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            // Best effort: the write already failed and that error is the one to report.
            let _ = fs::remove_file(path);
        }
    }
}

fn create_temp(folder: &Path, name: &OsStr) -> Result<(PathBuf, File), FileError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(MODE);
    for _ in 0..MAX_NAME_TRIES {
        let mut temp_name = OsString::from(".");
        temp_name.push(name);
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        temp_name.push(format!(".tmp-{}-{n}", std::process::id()));
        let temp = folder.join(temp_name);
        // O_EXCL: never write into (or through a link planted at) an existing name; a
        // leftover from a crashed process that had our pid just moves us to the next number.
        match options.open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(&temp, e)),
        }
    }
    Err(FileError::NoFreeName(folder.join(name)))
}

/// Makes renames in `folder` durable: without it a crash can bring back the old entry.
fn sync_folder(folder: &Path) -> Result<(), FileError> {
    match File::open(folder).and_then(|dir| dir.sync_all()) {
        Ok(()) => Ok(()),
        // Some filesystems cannot fsync a folder at all; the rename is as durable as they
        // make it, and failing every save there would help nobody.
        Err(e) if e.raw_os_error() == Some(Errno::EINVAL as i32) => Ok(()),
        Err(e) => Err(io_error(folder, e)),
    }
}

/// Atomically replaces the file at `path` (after `resolve_links`, so a link stays a link
/// and its target gets the new content) with `bytes`, mode 0600. On failure the temp file
/// is removed and the old file is left untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_atomic_with(path, bytes, &mut |_| Ok(()))
}

/// `write_atomic` with a hook run after each stage; an `Err` from it fails the write at
/// that point. A test seam to prove the clean-up: production code passes a no-op hook.
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    hook: &mut dyn FnMut(WriteStage) -> io::Result<()>,
) -> Result<(), FileError> {
    write_with_mode(path, bytes, MODE, hook)
}

/// `write_atomic` for a file that belongs to the user rather than to herdr (an agent's
/// settings): the replaced file keeps the permission bits it had (a 0644 file stays
/// 0644); a file that did not exist yet is made 0600.
pub fn write_atomic_keeping_mode(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let target = resolve_links(path)?;
    let mode = unless_missing(fs::metadata(&target), &target)?
        .map_or(MODE, |meta| meta.permissions().mode() & 0o777);
    write_with_mode(path, bytes, mode, &mut |_| Ok(()))
}

fn write_with_mode(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    hook: &mut dyn FnMut(WriteStage) -> io::Result<()>,
) -> Result<(), FileError> {
    let target = resolve_links(path)?;
    let folder = folder_of(&target);
    let (temp, mut file) = create_temp(folder, file_name(&target)?)?;
    let mut guard = TempGuard(Some(temp.clone()));
    let fail = |e| io_error(&target, e);
    // The umask may have cleared bits of the mode at creation; fchmod sets it exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(fail)?;
    hook(WriteStage::Created).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    hook(WriteStage::Written).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    hook(WriteStage::Synced).map_err(fail)?;
    drop(file);
    fs::rename(&temp, &target).map_err(fail)?;
    guard.0 = None;
    hook(WriteStage::Renamed).map_err(fail)?;
    sync_folder(folder)
}

/// `Ok(None)` for a missing file: here absence is a normal state, not an error.
fn unless_missing<T>(result: io::Result<T>, path: &Path) -> Result<Option<T>, FileError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Reads a file through the same link resolution; `Ok(None)` when it does not exist.
pub fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    let target = resolve_links(path)?;
    unless_missing(fs::read(&target), &target)
}

/// Gives `from` the name `to` unless `to` exists: `Ok(false)` then. A plain rename would
/// silently overwrite an earlier corrupt copy, which is evidence worth keeping.
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<bool> {
    // link(2) fails atomically when `to` exists; then the old name is dropped.
    match fs::hard_link(from, to) {
        Ok(()) => match fs::remove_file(from) {
            Ok(()) => Ok(true),
            Err(e) => {
                let _ = fs::remove_file(to);
                Err(e)
            }
        },
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        // No hard links here (some filesystems lack them): check, then rename. The race
        // left needs another process picking the same name in the same second.
        Err(_) => match fs::symlink_metadata(to) {
            Ok(_) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::rename(from, to).map(|()| true),
            Err(e) => Err(e),
        },
    }
}

/// Moves a file aside to `<path>.corrupt-<unix seconds>` (following links: the target is
/// moved, the link is left dangling), returning the new path; never overwrites an existing
/// file (`-1`, `-2`, … is appended if needed).
pub fn move_aside(path: &Path, now_unix: u64) -> Result<PathBuf, FileError> {
    let target = resolve_links(path)?;
    let folder = folder_of(&target);
    let name = file_name(&target)?;
    for n in 0..MAX_NAME_TRIES {
        let mut aside = name.to_os_string();
        aside.push(format!(".corrupt-{now_unix}"));
        if n > 0 {
            aside.push(format!("-{n}"));
        }
        let aside = folder.join(aside);
        if rename_no_replace(&target, &aside).map_err(|e| io_error(&target, e))? {
            sync_folder(folder)?;
            return Ok(aside);
        }
    }
    Err(FileError::NoFreeName(target))
}

/// Removes the file (the target of links; the link itself stays) if it exists.
pub fn remove_if_exists(path: &Path) -> Result<(), FileError> {
    let target = resolve_links(path)?;
    unless_missing(fs::remove_file(&target), &target).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(dir: &Path) -> Vec<String> {
        let entries = fs::read_dir(dir).unwrap();
        let mut names: Vec<String> = entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn assert_private_file(path: &Path, bytes: &[u8]) {
        assert_eq!(fs::read(path).unwrap(), bytes);
        assert_eq!(
            fs::metadata(path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    fn is_link(path: &Path) -> bool {
        fs::symlink_metadata(path).unwrap().is_symlink()
    }

    /// `link-1` → `link-2` → … → `link-n` → `link-(n+1)`, all relative; returns both ends.
    fn chain(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
        for i in 1..=n {
            symlink(format!("link-{}", i + 1), dir.join(format!("link-{i}"))).unwrap();
        }
        (dir.join("link-1"), dir.join(format!("link-{}", n + 1)))
    }

    #[test]
    fn plain_write_read_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert_eq!(read_if_exists(&path).unwrap(), None);
        write_atomic(&path, b"one").unwrap();
        assert_eq!(read_if_exists(&path).unwrap(), Some(b"one".to_vec()));
        assert_private_file(&path, b"one");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_private_file(&path, b"two");
        assert_eq!(names(dir.path()), ["state.json"]);
    }

    #[test]
    fn keeping_mode_keeps_the_mode_and_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("settings.json");
        let link = dir.path().join("link.json");
        symlink("settings.json", &link).unwrap();
        write_atomic_keeping_mode(&link, b"new").unwrap();
        assert_private_file(&real, b"new");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic_keeping_mode(&link, b"again").unwrap();
        assert_eq!(fs::read(&real).unwrap(), b"again");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert!(is_link(&link));
        assert_eq!(names(dir.path()), ["link.json", "settings.json"]);
    }

    #[test]
    fn failure_at_each_stage_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let old = vec![7u8; 100_000];
        write_atomic(&path, &old).unwrap();
        let stages = [WriteStage::Created, WriteStage::Written, WriteStage::Synced];
        for stage in stages.into_iter().chain([WriteStage::Renamed]) {
            let mut hook = |s| match s {
                s if s == stage => Err(io::Error::other("simulated")),
                _ => Ok(()),
            };
            let err = write_atomic_with(&path, b"new", &mut hook).unwrap_err();
            assert!(matches!(err, FileError::Io { .. }), "{stage:?}: {err}");
            assert_eq!(names(dir.path()), ["state.json"], "{stage:?}");
            // Past the rename the new content is committed; the error still tells the
            // caller that its folder fsync did not happen.
            let committed = stage == WriteStage::Renamed;
            let expected = if committed {
                b"new".to_vec()
            } else {
                old.clone()
            };
            assert_eq!(fs::read(&path).unwrap(), expected, "{stage:?}");
        }
    }

    #[test]
    fn dangling_chain_of_three_links_gets_target_created_and_stays_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        symlink(&real, dir.path().join("link-3")).unwrap(); // absolute
        symlink("link-3", dir.path().join("link-2")).unwrap();
        symlink("link-2", dir.path().join("link-1")).unwrap();
        let path = dir.path().join("link-1");
        assert_eq!(read_if_exists(&path).unwrap(), None);
        write_atomic(&path, b"first").unwrap();
        assert_private_file(&real, b"first");
        write_atomic(&path, b"content").unwrap();
        assert_private_file(&real, b"content");
        for link in ["link-1", "link-2", "link-3"] {
            assert!(is_link(&dir.path().join(link)), "{link}");
        }
        assert_eq!(read_if_exists(&path).unwrap(), Some(b"content".to_vec()));
        assert_eq!(names(dir.path()), ["link-1", "link-2", "link-3", "real"]);
    }

    #[test]
    fn relative_link_resolves_against_its_own_folder() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("conf")).unwrap();
        fs::create_dir_all(dir.path().join("store")).unwrap();
        let link = dir.path().join("conf/state.json");
        symlink("../store/state.json", &link).unwrap();
        let resolved = dir.path().join("conf/../store/state.json");
        assert_eq!(resolve_links(&link).unwrap(), resolved);
        write_atomic(&link, b"x").unwrap();
        assert_eq!(fs::read(dir.path().join("store/state.json")).unwrap(), b"x");
        assert!(is_link(&link));
        // The temp file lived beside the target, and is gone.
        assert_eq!(names(&dir.path().join("store")), ["state.json"]);
        assert_eq!(names(&dir.path().join("conf")), ["state.json"]);
    }

    #[test]
    fn link_loops_and_too_deep_chains_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        symlink("self", dir.path().join("self")).unwrap();
        for name in ["a", "self"] {
            let path = dir.path().join(name);
            let err = write_atomic(&path, b"x").unwrap_err();
            assert!(matches!(&err, FileError::TooManyLinks(p) if *p == path));
            assert!(err.to_string().contains(name));
            assert!(read_if_exists(&path).is_err());
        }
        assert_eq!(names(dir.path()), ["a", "b", "self"]);

        let ok = tempfile::tempdir().unwrap();
        let (first, real) = chain(ok.path(), MAX_SYMLINKS);
        write_atomic(&first, b"deep").unwrap();
        assert_private_file(&real, b"deep");
        let too_deep = tempfile::tempdir().unwrap();
        let (first, real) = chain(too_deep.path(), MAX_SYMLINKS + 1);
        let result = write_atomic(&first, b"x");
        assert!(matches!(result, Err(FileError::TooManyLinks(_))));
        assert!(!real.exists());
    }

    #[test]
    fn move_aside_names_never_overwrite_and_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"first").unwrap();
        let aside = move_aside(&path, 1_700_000_000).unwrap();
        assert_eq!(aside, dir.path().join("state.json.corrupt-1700000000"));
        assert!(!path.exists());
        write_atomic(&path, b"second").unwrap();
        let aside2 = move_aside(&path, 1_700_000_000).unwrap();
        assert_eq!(aside2, dir.path().join("state.json.corrupt-1700000000-1"));
        assert_eq!(fs::read(&aside).unwrap(), b"first");
        assert_eq!(fs::read(&aside2).unwrap(), b"second");
        assert!(matches!(move_aside(&path, 1), Err(FileError::Io { .. })));

        let link = dir.path().join("link.json");
        symlink("real.json", &link).unwrap();
        write_atomic(&link, b"bad").unwrap();
        let aside = move_aside(&link, 42).unwrap();
        assert_eq!(aside, dir.path().join("real.json.corrupt-42"));
        assert_eq!(fs::read(&aside).unwrap(), b"bad");
        assert!(is_link(&link) && !link.exists()); // left dangling
    }

    #[test]
    fn remove_if_exists_handles_missing_files_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        remove_if_exists(&path).unwrap();
        let link = dir.path().join("link");
        symlink("state.json", &link).unwrap();
        write_atomic(&link, b"y").unwrap();
        remove_if_exists(&link).unwrap();
        assert!(is_link(&link) && !path.exists());
        remove_if_exists(&link).unwrap();
        write_atomic(&path, b"x").unwrap();
        remove_if_exists(&path).unwrap();
        assert_eq!(names(dir.path()), ["link"]);
    }
}

/// Removes temp files that a writer killed mid-write left next to `path`'s target
/// (`.<name>.tmp-<pid>-<n>` whose pid no longer runs). Best effort.
pub fn remove_stale_temps(path: &Path) {
    let Ok(target) = resolve_links(path) else {
        return;
    };
    let (Some(folder), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        if pid.is_some() && !alive {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod stale_tests {
    use super::*;

    #[test]
    fn stale_temps_of_dead_writers_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        fs::write(&path, b"{}").unwrap();
        let dead = dir.path().join(".session.json.tmp-999999999-3");
        let alive = dir
            .path()
            .join(format!(".session.json.tmp-{}-1", std::process::id()));
        let other = dir.path().join(".other.json.tmp-999999999-1");
        for f in [&dead, &alive, &other] {
            fs::write(f, b"x").unwrap();
        }
        remove_stale_temps(&path);
        assert!(!dead.exists());
        assert!(alive.exists() && other.exists() && path.exists());
    }
}
