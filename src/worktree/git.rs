//! Running git: arguments as a list (never through a shell), in a given folder, with its
//! output captured. A git that fails is reported as it failed: its exit status and its
//! own words (stderr), after what herdr was doing when it ran it.

use std::path::Path;
use std::process::{Command, ExitStatus};

/// Why a git command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{doing}: cannot run git: {source} (is git installed and on PATH?)")]
    Spawn {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{doing}: `git {args}` failed ({status}):\n{stderr}")]
    Failed {
        doing: String,
        args: String,
        status: String,
        stderr: String,
    },
}

/// What an ended git exited with, as people read it: `exit status 128`, or the signal.
fn shown_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("ended by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// Runs `git ARGS…` in `dir`; its stdout when it succeeded. `doing` says what herdr was
/// doing, for the error ("creating the worktree").
pub fn run(dir: &Path, args: &[&str], doing: &str) -> Result<String, GitError> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        // Git's words as git says them, not translated or paged.
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn {
            doing: doing.to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(GitError::Failed {
            doing: doing.to_string(),
            args: args.join(" "),
            status: shown_status(out.status),
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `git ARGS…` in `dir` succeeds (for questions like "does this branch exist").
pub fn succeeds(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_git_is_reported_with_its_status_and_words() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(
            dir.path(),
            &["rev-parse", "--show-toplevel"],
            "finding the repository",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("finding the repository: `git rev-parse --show-toplevel` failed (exit status 128):\nfatal: not a git repository"), "{e}");
    }
}
