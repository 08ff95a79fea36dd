//! Why `herdr integration` left an agent's config file alone. Each message names the file
//! and what to do; a parse or I/O failure underneath is the error's `source()`, which the
//! binary prints after the message.

use std::path::PathBuf;

use crate::persist::files::FileError;

#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    #[error("cannot read {}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create {}", .dir.display())]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Write(FileError),
    #[error("cannot back up {} to {}: {error}", .path.display(), .backup.display())]
    Backup {
        path: PathBuf,
        backup: PathBuf,
        error: FileError,
    },
    #[error("{} is not UTF-8 text; fix it first", .path.display())]
    NotUtf8 {
        path: PathBuf,
        source: std::string::FromUtf8Error,
    },
    #[error("{} is not valid JSON; fix it first", .path.display())]
    NotJson {
        path: PathBuf,
        source: super::json_text::JsonError,
    },
    #[error("{} does not hold a JSON object (an agent's hook settings are one); fix it first", .0.display())]
    NotAnObject(PathBuf),
    #[error("\"hooks\" in {} is not an object; fix it first", .0.display())]
    HooksNotAnObject(PathBuf),
    #[error("\"hooks.{event}\" in {} is not a list; fix it first", .path.display())]
    EventNotAList { event: &'static str, path: PathBuf },
    #[error("{} is not valid TOML; fix it first", .path.display())]
    NotToml {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("\"notify\" in {} is not a list of strings; fix it first", .path.display())]
    NotifyNotStrings {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("{} already sets notify to herdr's hook (without herdr's markers); remove that line and install again", .0.display())]
    HookByHand(PathBuf),
    #[error("adding herdr's hook would break {}; it was left as it was", .path.display())]
    WouldBreak {
        path: PathBuf,
        source: toml::de::Error,
    },
}

/// An error as the binary prints it: its message, then each cause's, joined by ": ".
#[cfg(test)]
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
