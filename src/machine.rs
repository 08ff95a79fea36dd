//! Saved machines (`herdr machine add`): other hosts whose herdr session the local one
//! shows beside its own, each reached over SSH as `--remote` reaches it. They are kept in
//! herdr's own state (`machines.json` in the state folder), never in the user's ssh
//! config; an edit is made under a lock and written atomically, so two edits at once
//! both land and a crash leaves the old file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The file's format; a newer one is refused with a clear error, never rewritten.
const FORMAT: u32 = 1;

/// Longest name; names are what `--machine` and the sidebar show.
const NAME_MAX: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    /// The SSH target, as `ssh` takes it (`devbox`, `me@gpu.example.com`).
    pub host: String,
    /// The herdr session on that host.
    #[serde(default = "default_session")]
    pub session: String,
    /// Extra arguments for ssh (`-p 2222`, `-F file`).
    #[serde(default)]
    pub ssh_args: Vec<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_session() -> String {
    crate::paths::SessionName::default_session()
        .as_str()
        .to_string()
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machines {
    #[serde(default)]
    pub format: u32,
    #[serde(default)]
    pub machines: Vec<Machine>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no machine named {0:?} (see `herdr machine list`)")]
    NotFound(String),
    #[error("a machine named {0:?} exists already (rename or remove it first)")]
    Exists(String),
    #[error(
        "bad machine name {0:?}: use 1 to {NAME_MAX} letters, digits, '-' or '_', starting with a letter or digit"
    )]
    BadName(String),
    #[error("bad SSH target {0:?}: give a host name as ssh takes it, e.g. devbox or me@host")]
    BadHost(String),
    #[error("{path}: {source}")]
    File {
        path: PathBuf,
        source: crate::persist::files::FileError,
    },
    #[error(
        "{path} is not a machine list herdr can read ({why}); fix or move it, nothing was changed"
    )]
    Unreadable { path: PathBuf, why: String },
    #[error("{path} was written by a newer herdr (format {found}); update herdr to edit it")]
    Newer { path: PathBuf, found: u32 },
    #[error("bad session name: {0}")]
    BadSession(crate::paths::NameError),
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the machines are saved.
pub fn path() -> PathBuf {
    crate::paths::state_base().join("machines.json")
}

/// A machine's name is checked where it is given: a word for the sidebar and the CLI.
pub fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match ok {
        true => Ok(()),
        false => Err(Error::BadName(name.to_string())),
    }
}

/// An SSH target never starts with `-` (it would be taken for an option) and has no
/// whitespace or control characters.
pub fn check_host(host: &str) -> Result<(), Error> {
    let ok = !host.is_empty()
        && !host.starts_with('-')
        && !host.chars().any(|c| c.is_whitespace() || c.is_control());
    match ok {
        true => Ok(()),
        false => Err(Error::BadHost(host.to_string())),
    }
}

/// The saved machines (none when the file does not exist).
pub fn load() -> Result<Machines, Error> {
    let path = path();
    let bytes = crate::persist::files::read_if_exists(&path)
        .map_err(|source| Error::File {
            path: path.clone(),
            source,
        })?
        .unwrap_or_default();
    if bytes.is_empty() {
        return Ok(Machines {
            format: FORMAT,
            machines: Vec::new(),
        });
    }
    let list: Machines = serde_json::from_slice(&bytes).map_err(|e| Error::Unreadable {
        path: path.clone(),
        why: e.to_string(),
    })?;
    if list.format > FORMAT {
        return Err(Error::Newer {
            path,
            found: list.format,
        });
    }
    Ok(list)
}

impl Machines {
    pub fn get(&self, name: &str) -> Result<&Machine, Error> {
        self.machines
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    pub fn get_mut(&mut self, name: &str) -> Result<&mut Machine, Error> {
        self.machines
            .iter_mut()
            .find(|m| m.name == name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }
}

/// Changes the saved machines under the file's lock: `change` sees the list as it is on
/// disk now, and what it leaves is written (nothing, when it fails).
pub fn edit<T>(change: impl FnOnce(&mut Machines) -> Result<T, Error>) -> Result<T, Error> {
    let path = path();
    let dir = crate::paths::state_base();
    std::fs::create_dir_all(&dir).map_err(|source| Error::Lock {
        path: dir.clone(),
        source,
    })?;
    let lock_path = dir.join("machines.lock");
    let _lock = lock(&lock_path)?;
    let mut list = load()?;
    let out = change(&mut list)?;
    list.format = FORMAT;
    let mut text = serde_json::to_vec_pretty(&list).expect("machines serialize");
    text.push(b'\n');
    crate::persist::files::write_atomic(&path, &text)
        .map_err(|source| Error::File { path, source })?;
    Ok(out)
}

/// Holds the edit lock until dropped (another edit waits for it, 5 s at most).
fn lock(path: &std::path::Path) -> Result<std::fs::File, Error> {
    let failed = |source| Error::Lock {
        path: path.into(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(failed)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match crate::sys::flock_exclusive_nb(std::os::fd::AsFd::as_fd(&file)) {
            Ok(()) => return Ok(file),
            Err(e) if std::time::Instant::now() >= deadline => return Err(failed(e)),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// The command line of a pane that shows `pane` of machine `name` (the host's focused
/// pane when None): `herdr machine view`.
pub fn view_argv(exe: &std::path::Path, name: &str, pane: Option<&str>) -> Vec<String> {
    let mut argv = vec![
        exe.display().to_string(),
        "machine".into(),
        "view".into(),
        name.into(),
    ];
    argv.extend(pane.map(String::from));
    argv
}

/// Whether a pane started with `argv` shows a machine's pane ([`view_argv`]).
pub fn is_view(argv: &[String]) -> bool {
    crate::model::state::viewed_machine(argv).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hosts_are_checked() {
        for good in ["gpu", "dev-box_2", "9lives"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", "a b", "x/y", &"a".repeat(33), "é"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_host("me@gpu.example.com").is_ok());
        for bad in ["", "-oProxyCommand=x", "a b", "a\nb"] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_old_file_reads_with_defaults() {
        let list: Machines =
            serde_json::from_str(r#"{"machines":[{"name":"gpu","host":"gpu"}]}"#).unwrap();
        let m = &list.machines[0];
        assert_eq!(m.session, "default");
        assert!(m.enabled);
        assert!(m.ssh_args.is_empty());
    }

    #[test]
    fn a_view_pane_is_known_by_its_command_line() {
        let exe = std::path::Path::new("/opt/herdr");
        let argv = super::view_argv(exe, "gpu", Some("p3"));
        assert_eq!(argv, ["/opt/herdr", "machine", "view", "gpu", "p3"]);
        assert!(super::is_view(&argv));
        assert!(super::is_view(&super::view_argv(exe, "gpu", None)));
        for other in [
            vec![],
            vec!["vim".to_string()],
            vec!["herdr".into(), "machine".into(), "link".into()],
        ] {
            assert!(!super::is_view(&other), "{other:?}");
        }
    }
}
