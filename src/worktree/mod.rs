//! Git worktrees, for running several coding agents on one repository, each in a
//! checkout of its own: list a repository's worktrees, make one on a new branch, see
//! whether one has uncommitted changes, remove one. Plain git underneath ([`git`]); what
//! herdr opens in them is the CLI's (`herdr worktree …`).
//!
//! A new worktree goes beside the main one by default, as `<repo>-<branch>` with every
//! `/` of the branch made `-` (`~/src/app` and `feature/login` give
//! `~/src/app-feature-login`); without a branch, one is made up: `herdr/<6 hex digits>`.

pub mod git;

use std::path::{Path, PathBuf};

pub use git::GitError;

/// Why a worktree command could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "{0} is a bare repository: it has no main worktree to put a new one beside; pass --path"
    )]
    Bare(PathBuf),
    #[error("no worktree of this repository has the branch or path {0:?} (`herdr worktree list` shows them)")]
    NotFound(String),
    #[error("the folder {0} is not inside any worktree of this repository; name one (`herdr worktree list` shows them)")]
    NotInside(PathBuf),
    #[error("cannot make up a branch name that is not taken (herdr/…); pass --branch")]
    NoFreeBranch,
}

/// One worktree as `git worktree list --porcelain` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Worktree {
    pub path: PathBuf,
    /// The commit checked out (none in a bare repository's entry).
    pub head: Option<String>,
    /// The branch checked out, without `refs/heads/`; none when HEAD is detached.
    pub branch: Option<String>,
    pub bare: bool,
    pub locked: bool,
    /// Its folder is gone (`git worktree prune` would forget it).
    pub prunable: bool,
}

impl Worktree {
    /// What a workspace opened there is named: the branch, else the folder's name.
    pub fn name(&self) -> String {
        match &self.branch {
            Some(b) => b.clone(),
            None => self.path.file_name().map_or_else(
                || self.path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
        }
    }
}

/// Reads `git worktree list --porcelain`: records separated by blank lines, each a
/// `worktree PATH` line and attribute lines (`HEAD`, `branch`, `bare`, `detached`,
/// `locked`, `prunable`).
pub fn parse_porcelain(text: &str) -> Vec<Worktree> {
    let mut found = Vec::new();
    let mut current: Option<Worktree> = None;
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "worktree" => {
                found.extend(current.take());
                current = Some(Worktree {
                    path: PathBuf::from(value),
                    ..Worktree::default()
                });
            }
            _ => {
                let Some(wt) = current.as_mut() else { continue };
                match key {
                    "HEAD" => wt.head = Some(value.to_string()),
                    "branch" => {
                        let b = value.strip_prefix("refs/heads/").unwrap_or(value);
                        wt.branch = Some(b.to_string());
                    }
                    "bare" => wt.bare = true,
                    "locked" => wt.locked = true,
                    "prunable" => wt.prunable = true,
                    _ => {}
                }
            }
        }
    }
    found.extend(current);
    found
}

/// The worktrees of the repository `dir` is in, the main one first.
pub fn list(dir: &Path) -> Result<Vec<Worktree>, Error> {
    let text = git::run(
        dir,
        &["worktree", "list", "--porcelain"],
        "listing the repository's worktrees",
    )?;
    Ok(parse_porcelain(&text))
}

/// The uncommitted changes in a worktree, one line per file as `git status --short`
/// shows them (` M src/main.rs`, `?? notes.txt`); empty when it is clean.
pub fn changes(worktree: &Path) -> Result<Vec<String>, Error> {
    let doing = format!("reading the changes in {}", worktree.display());
    let text = git::run(worktree, &["status", "--porcelain"], &doing)?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Where a new worktree for `branch` goes by default: beside the main worktree, named
/// `<repo>-<branch>` with `/` made `-`.
pub fn default_path(main: &Path, branch: &str) -> PathBuf {
    let repo = main
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    let leaf = format!("{repo}-{}", branch.replace('/', "-"));
    main.parent().unwrap_or(main).join(leaf)
}

/// A made-up branch name: `herdr/` and six hex digits.
fn made_up_branch(seed: u64) -> String {
    format!("herdr/{:06x}", seed & 0xff_ffff)
}

/// A made-up branch name no branch of the repository has.
pub fn free_branch(dir: &Path) -> Result<String, Error> {
    use std::hash::{BuildHasher, Hasher};
    for _ in 0..8 {
        // A fresh random key per hasher: different digits each time.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let branch = made_up_branch(h.finish());
        let reference = format!("refs/heads/{branch}");
        if !git::succeeds(dir, &["show-ref", "--verify", "--quiet", &reference]) {
            return Ok(branch);
        }
    }
    Err(Error::NoFreeBranch)
}

/// What `herdr worktree create` asks for.
#[derive(Debug, Clone, Default)]
pub struct NewWorktree {
    /// The new branch (default: a made-up one, see [`free_branch`]).
    pub branch: Option<String>,
    /// What it starts from (default: HEAD).
    pub base: Option<String>,
    /// Where (default: [`default_path`]); relative to `dir`.
    pub path: Option<PathBuf>,
}

/// Makes a worktree on a new branch: `git worktree add -b BRANCH PATH BASE` in `dir`'s
/// repository. The new worktree, as git lists it.
pub fn create(dir: &Path, new: &NewWorktree) -> Result<Worktree, Error> {
    let branch = match &new.branch {
        Some(b) => b.clone(),
        None => free_branch(dir)?,
    };
    let path = match &new.path {
        Some(p) => dir.join(p),
        None => {
            let all = list(dir)?;
            let main = all
                .first()
                .ok_or_else(|| Error::NotInside(dir.to_path_buf()))?;
            if main.bare {
                return Err(Error::Bare(main.path.clone()));
            }
            default_path(&main.path, &branch)
        }
    };
    let base = new.base.as_deref().unwrap_or("HEAD");
    let shown = path.display().to_string();
    let doing = format!("creating the worktree {shown} on a new branch {branch}");
    git::run(
        dir,
        &["worktree", "add", "-b", &branch, &shown, base],
        &doing,
    )?;
    let made = canonical(&path);
    let all = list(dir)?;
    Ok(all
        .into_iter()
        .find(|w| canonical(&w.path) == made)
        .unwrap_or(Worktree {
            path: made,
            branch: Some(branch),
            ..Worktree::default()
        }))
}

/// Removes a worktree (`git worktree remove`, with `--force` when `force`: its changes
/// are lost).
pub fn remove(dir: &Path, worktree: &Path, force: bool) -> Result<(), Error> {
    let shown = worktree.display().to_string();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&shown);
    git::run(dir, &args, &format!("removing the worktree {shown}"))?;
    Ok(())
}

/// A path with its symbolic links resolved, when it exists (else as given).
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The worktree `dir` is in: the deepest one containing it (a worktree may be made inside
/// another's folder).
pub fn containing<'a>(worktrees: &'a [Worktree], dir: &Path) -> Option<&'a Worktree> {
    let dir = canonical(dir);
    worktrees
        .iter()
        .filter(|w| !w.bare && dir.starts_with(canonical(&w.path)))
        .max_by_key(|w| w.path.components().count())
}

/// The worktree a user named: a branch first, else a path (relative to `cwd`); with no
/// name, the one `cwd` is in.
pub fn find<'a>(
    worktrees: &'a [Worktree],
    name: Option<&str>,
    cwd: &Path,
) -> Result<&'a Worktree, Error> {
    let Some(name) = name else {
        return containing(worktrees, cwd).ok_or_else(|| Error::NotInside(cwd.to_path_buf()));
    };
    let by_branch = worktrees.iter().find(|w| w.branch.as_deref() == Some(name));
    let wanted = canonical(&cwd.join(name));
    by_branch
        .or_else(|| worktrees.iter().find(|w| canonical(&w.path) == wanted))
        .ok_or_else(|| Error::NotFound(name.to_string()))
}

#[cfg(test)]
mod tests;
