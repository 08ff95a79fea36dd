//! Replacing the herdr binary on disk: never half-written, never unverified, the previous
//! one kept for `--rollback`.

use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// When `binary` belongs to a package manager: the command to use instead.
pub fn package_manager(binary: &Path) -> Option<String> {
    let p = binary.to_string_lossy();
    let home = std::env::var("HOME").unwrap_or_default();
    let cargo_home = std::env::var("CARGO_HOME")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| format!("{home}/.cargo"));
    if p.contains("/Cellar/")
        || p.starts_with("/opt/homebrew/")
        || p.starts_with("/home/linuxbrew/")
    {
        return Some("Homebrew manages this herdr: run `brew upgrade herdr`".into());
    }
    if p.starts_with("/nix/store/") || p.contains("/.nix-profile/") {
        return Some(
            "Nix manages this herdr: update it through your Nix profile or configuration (e.g. `nix profile upgrade`)".into(),
        );
    }
    if p.contains("/mise/installs/") {
        return Some("mise manages this herdr: run `mise upgrade herdr`".into());
    }
    if binary.starts_with(Path::new(&cargo_home).join("bin")) {
        return Some(
            "cargo install put this herdr here: run `cargo install herdr --locked` (or reinstall from your checkout)".into(),
        );
    }
    if ["/usr/bin/", "/bin/", "/usr/sbin/", "/usr/local/Cellar/"]
        .iter()
        .any(|d| p.starts_with(d))
    {
        return Some(
            "a system package manages this herdr: update it with your distribution's package manager (apt, dnf, pacman…)".into(),
        );
    }
    None
}

/// The file that keeps the binary an update replaced.
pub fn previous_of(binary: &Path) -> PathBuf {
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "herdr".into());
    binary.with_file_name(format!("{name}.previous"))
}

/// Why the binary could not be staged, replaced or rolled back. Each message says which
/// step failed and, with its cause, why.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0} has no folder")]
    NoFolder(PathBuf),
    #[error("cannot write in {dir} ({error}); herdr updates itself in its own folder")]
    Unwritable { dir: PathBuf, error: io::Error },
    #[error("the download is already closed")]
    Closed,
    #[error("cannot make the new binary executable: {0}")]
    NotExecutable(io::Error),
    #[error("cannot put the new binary in place: {0}")]
    Replace(io::Error),
    #[error("cannot keep the current binary for rollback: {0}")]
    KeepPrevious(io::Error),
    #[error("there is no previous binary to go back to ({} does not exist)", .0.display())]
    NoPrevious(PathBuf),
    #[error("cannot keep the current binary: {0}")]
    KeepCurrent(io::Error),
    #[error("cannot put the previous binary back: {0}")]
    RestorePrevious(io::Error),
    #[error("cannot keep the replaced binary: {0}")]
    KeepReplaced(io::Error),
}

/// A download in progress beside the binary it will replace (same folder, so the final
/// rename is atomic). Removed when dropped unless installed.
pub struct Staged {
    path: PathBuf,
    /// Open while downloading; closed before the file is run or installed (a file open
    /// for writing cannot be executed).
    file: Option<std::fs::File>,
    installed: bool,
}

impl Staged {
    pub fn create(binary: &Path) -> Result<Staged, InstallError> {
        let dir = binary
            .parent()
            .ok_or_else(|| InstallError::NoFolder(binary.into()))?;
        let path = dir.join(format!(".herdr-update-{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&path);
        remove_abandoned(dir);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            // Not executable until verified.
            .mode(0o600)
            .open(&path)
            .map_err(|error| InstallError::Unwritable {
                dir: dir.into(),
                error,
            })?;
        Ok(Staged {
            path,
            file: Some(file),
            installed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file to download into (until [`Staged::close`]).
    pub fn file(&mut self) -> Result<&mut std::fs::File, InstallError> {
        self.file.as_mut().ok_or(InstallError::Closed)
    }

    pub fn close(&mut self) {
        self.file = None;
    }

    /// After the checksum matched: executable, then atomically in place of `binary`, the
    /// old one kept as `<binary>.previous`.
    pub fn install(mut self, binary: &Path) -> Result<(), InstallError> {
        self.close();
        std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755))
            .map_err(InstallError::NotExecutable)?;
        keep_previous(binary)?;
        std::fs::rename(&self.path, binary).map_err(InstallError::Replace)?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Downloads of updates that were killed midway (their process is gone).
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(".herdr-update-")
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Hard-links (or copies) the current binary to `<binary>.previous`, atomically.
fn keep_previous(binary: &Path) -> Result<(), InstallError> {
    let previous = previous_of(binary);
    let tmp = previous.with_extension(format!("previous.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(binary, &tmp).is_err() {
        std::fs::copy(binary, &tmp).map_err(InstallError::KeepPrevious)?;
    }
    std::fs::rename(&tmp, &previous).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        InstallError::KeepPrevious(e)
    })
}

/// `herdr update --rollback`: the previous binary back in place; the replaced one becomes
/// the previous (so a second rollback undoes the first).
pub fn rollback(binary: &Path) -> Result<(), InstallError> {
    let previous = previous_of(binary);
    if !previous.exists() {
        return Err(InstallError::NoPrevious(previous));
    }
    let swap = binary.with_extension(format!("rollback.{}.tmp", std::process::id()));
    std::fs::hard_link(binary, &swap)
        .or_else(|_| std::fs::copy(binary, &swap).map(|_| ()))
        .map_err(InstallError::KeepCurrent)?;
    std::fs::rename(&previous, binary).map_err(|e| {
        let _ = std::fs::remove_file(&swap);
        InstallError::RestorePrevious(e)
    })?;
    std::fs::rename(&swap, &previous).map_err(InstallError::KeepReplaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_managers_are_recognised_by_path() {
        for (p, says) in [
            ("/opt/homebrew/bin/herdr", "brew upgrade"),
            ("/usr/local/Cellar/herdr/0.1.0/bin/herdr", "brew upgrade"),
            ("/nix/store/abc-herdr/bin/herdr", "Nix"),
            (
                "/home/u/.local/share/mise/installs/herdr/0.1/bin/herdr",
                "mise upgrade",
            ),
            ("/usr/bin/herdr", "package manager"),
        ] {
            let advice = package_manager(Path::new(p)).unwrap_or_default();
            assert!(advice.contains(says), "{p}: {advice}");
        }
        assert!(package_manager(Path::new("/home/u/.local/bin/herdr")).is_none());
    }

    #[test]
    fn install_keeps_the_previous_binary_and_rollback_swaps_back() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("herdr");
        std::fs::write(&bin, "old").unwrap();
        let mut staged = Staged::create(&bin).unwrap();
        std::io::Write::write_all(staged.file().unwrap(), b"new").unwrap();
        let tmp = staged.path().to_path_buf();
        staged.install(&bin).unwrap();
        assert!(!tmp.exists());
        assert_eq!(std::fs::read_to_string(&bin).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(previous_of(&bin)).unwrap(), "old");
        let mode = std::fs::metadata(&bin).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        rollback(&bin).unwrap();
        assert_eq!(std::fs::read_to_string(&bin).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(previous_of(&bin)).unwrap(), "new");
        // A staged download that is never installed leaves nothing behind.
        let staged = Staged::create(&bin).unwrap();
        let tmp = staged.path().to_path_buf();
        drop(staged);
        assert!(!tmp.exists());
    }
}
