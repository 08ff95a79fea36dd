//! `herdr worktree create|list|open|remove`: a git worktree per coding agent, each opened
//! in a workspace of its own. Git's side is `crate::worktree`; this side finds the
//! workspace open at a worktree (one with a pane whose folder is inside it), opens,
//! focuses and closes workspaces through the server, and asks before hanging up programs.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use serde_json::{json, Value};

use super::control::{id, s, Output};
use crate::client::api::ApiClient;
use crate::model::ids::WorkspaceNo;
use crate::paths::SessionName;
use crate::protocol::api::{self as req, Request};
use crate::worktree::{self, NewWorktree, Worktree};

#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Make a git worktree on a new branch and open a workspace there, named after the
    /// branch (starting the server if none runs); prints its path and the workspace's id.
    Create {
        /// The new branch (default: a made-up one, `herdr/` and six hex digits).
        #[arg(long, short = 'b')]
        branch: Option<String>,
        /// What the branch starts from: a branch, tag or commit (default: HEAD).
        #[arg(long, value_name = "REF")]
        base: Option<String>,
        /// Where the worktree goes (default: beside the main worktree, as
        /// `<repo>-<branch>` with `/` made `-`).
        #[arg(long, value_name = "PATH")]
        path: Option<PathBuf>,
        #[command(flatten)]
        out: Output,
    },
    /// List the repository's worktrees: path, branch, whether it has uncommitted changes
    /// and the workspace open there.
    List(Output),
    /// Open a workspace at a worktree, or focus the one open there; prints its path and
    /// the workspace's id.
    Open {
        /// A branch, or a worktree's path (default: the worktree this folder is in).
        worktree: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Close the workspace open at a worktree, then remove the worktree (`git worktree
    /// remove`). One with uncommitted changes is refused unless --force.
    Remove {
        /// A branch, or a worktree's path (default: the worktree this folder is in).
        worktree: Option<String>,
        /// Remove it even with uncommitted changes (they are lost).
        #[arg(long)]
        force: bool,
        /// Close its workspace without asking, even where programs other than a shell
        /// run (needed without a terminal).
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(session: &SessionName, command: WorktreeCommand) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    match command {
        WorktreeCommand::Create {
            branch,
            base,
            path,
            out,
        } => create(session, &cwd, NewWorktree { branch, base, path }, out.json),
        WorktreeCommand::List(out) => list(session, &cwd, out.json),
        WorktreeCommand::Open { worktree, out } => open(session, &cwd, worktree, out.json),
        WorktreeCommand::Remove {
            worktree,
            force,
            yes,
        } => remove(session, &cwd, worktree, force, yes),
    }
}

/// The session's server, started if none runs.
fn server(session: &SessionName) -> anyhow::Result<ApiClient> {
    crate::paths::repoint_agent_link(session);
    let (stream, _) =
        crate::client::connect::connect_or_start(session, crate::protocol::Role::Api, None)?;
    Ok(ApiClient::from_stream(stream)?)
}

/// Every pane of the session (`pane.list`).
fn panes(api: &mut ApiClient) -> anyhow::Result<Vec<Value>> {
    let all = api.request(&Request::PaneList(req::PaneList::default()))?;
    Ok(all.as_array().cloned().unwrap_or_default())
}

/// The panes of a running server; none when no server runs (nothing is open anywhere).
fn panes_if_running(session: &SessionName) -> anyhow::Result<Vec<Value>> {
    match ApiClient::connect(session)? {
        Some(mut api) => panes(&mut api),
        None => Ok(Vec::new()),
    }
}

/// The workspaces open at each worktree (in the order of `worktrees`): those with a pane
/// whose folder is in it, each pane counted for the deepest worktree its folder is in.
fn open_at(worktrees: &[Worktree], panes: &[Value]) -> Vec<Vec<String>> {
    let mut open = vec![Vec::new(); worktrees.len()];
    let roots: Vec<PathBuf> = worktrees
        .iter()
        .map(|w| worktree::canonical(&w.path))
        .collect();
    for pane in panes {
        let Some(cwd) = pane.get("cwd").and_then(Value::as_str) else {
            continue;
        };
        let cwd = Path::new(cwd);
        let deepest = (0..worktrees.len())
            .filter(|&i| !worktrees[i].bare && cwd.starts_with(&roots[i]))
            .max_by_key(|&i| roots[i].components().count());
        let ws = s(pane, "workspace");
        if let Some(i) = deepest.filter(|_| !ws.is_empty()) {
            if !open[i].contains(&ws) {
                open[i].push(ws);
            }
        }
    }
    open
}

/// Opens a workspace at `wt`, named after it; its id.
fn open_workspace(api: &mut ApiClient, wt: &Worktree) -> anyhow::Result<String> {
    let made = api.request(&Request::WorkspaceCreate(req::WorkspaceCreate {
        name: Some(wt.name()),
        cwd: Some(worktree::canonical(&wt.path)),
    }))?;
    Ok(s(&made, "id"))
}

/// Prints where a worktree is and the workspace open there (two lines, or JSON).
fn report(wt: &Worktree, workspace: &str, opened: bool, json_out: bool) -> anyhow::Result<i32> {
    if json_out {
        let v = json!({
            "path": wt.path.display().to_string(),
            "branch": wt.branch,
            "workspace": workspace,
            "opened": opened,
        });
        crate::say!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::say!("{}\n{workspace}", wt.path.display());
    }
    Ok(0)
}

fn create(
    session: &SessionName,
    cwd: &Path,
    new: NewWorktree,
    json_out: bool,
) -> anyhow::Result<i32> {
    let wt = worktree::create(cwd, &new)?;
    let opened = server(session)
        .and_then(|mut api| open_workspace(&mut api, &wt))
        .with_context(|| {
            format!(
                "the worktree {} was made, but opening a workspace there failed (retry with `herdr worktree open {}`)",
                wt.path.display(),
                wt.name()
            )
        })?;
    report(&wt, &opened, true, json_out)
}

fn open(
    session: &SessionName,
    cwd: &Path,
    name: Option<String>,
    json_out: bool,
) -> anyhow::Result<i32> {
    let all = worktree::list(cwd)?;
    let wt = worktree::find(&all, name.as_deref(), cwd)?;
    if wt.bare {
        anyhow::bail!(
            "{} is a bare repository: it has no files to open a workspace at",
            wt.path.display()
        );
    }
    let mut api = server(session)?;
    let i = all.iter().position(|w| w == wt).unwrap_or_default();
    let existing = open_at(&all, &panes(&mut api)?).swap_remove(i);
    match existing.first() {
        Some(ws) => {
            api.request(&Request::WorkspaceFocus(req::WorkspaceTarget {
                workspace: Some(id::<WorkspaceNo>(ws)?),
            }))?;
            report(wt, ws, false, json_out)
        }
        None => {
            let ws = open_workspace(&mut api, wt)?;
            report(wt, &ws, true, json_out)
        }
    }
}

fn list(session: &SessionName, cwd: &Path, json_out: bool) -> anyhow::Result<i32> {
    let all = worktree::list(cwd)?;
    let open = open_at(&all, &panes_if_running(session)?);
    let mut rows = Vec::new();
    for (wt, ws) in all.iter().zip(&open) {
        // A bare entry has no files, a pruned one no folder: neither has changes to read.
        let dirty = if wt.bare || wt.prunable {
            None
        } else {
            Some(!worktree::changes(&wt.path)?.is_empty())
        };
        rows.push(json!({
            "path": wt.path.display().to_string(),
            "branch": wt.branch,
            "head": wt.head,
            "dirty": dirty,
            "workspace": ws.first(),
            "bare": wt.bare,
            "locked": wt.locked,
            "prunable": wt.prunable,
        }));
    }
    if json_out {
        crate::say!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for row in &rows {
            crate::say!("{}", human_row(row));
        }
    }
    Ok(0)
}

/// `/src/app-x  feature/x  dirty  w2`.
fn human_row(row: &Value) -> String {
    let branch = match row["branch"].as_str() {
        Some(b) => b.to_string(),
        None if row["bare"] == true => "(bare)".to_string(),
        None => "(detached)".to_string(),
    };
    let state = match row["dirty"].as_bool() {
        Some(true) => "dirty",
        Some(false) => "clean",
        None if row["prunable"] == true => "gone",
        None => "-",
    };
    let ws = row["workspace"].as_str().unwrap_or("-");
    format!("{:<40} {:<24} {:<5} {ws}", s(row, "path"), branch, state)
}

fn remove(
    session: &SessionName,
    cwd: &Path,
    name: Option<String>,
    force: bool,
    yes: bool,
) -> anyhow::Result<i32> {
    let all = worktree::list(cwd)?;
    let wt = worktree::find(&all, name.as_deref(), cwd)?;
    let shown = wt.path.display().to_string();
    // Refused before anything is closed: git would refuse them after.
    if all.first() == Some(wt) && !wt.bare {
        anyhow::bail!("{shown} is the repository's main worktree: git removes only the worktrees made from it");
    }
    if wt.locked {
        anyhow::bail!(
            "the worktree {shown} is locked; unlock it first with `git worktree unlock {shown}`"
        );
    }
    if !force && !wt.prunable {
        let changes = worktree::changes(&wt.path)?;
        if !changes.is_empty() {
            anyhow::bail!(
                "the worktree {shown} has uncommitted changes:\n{}\ncommit or stash them, or remove it anyway, losing them, with `herdr worktree remove {} --force`",
                changes.join("\n"),
                name.as_deref().unwrap_or(&shown)
            );
        }
    }
    if let Some(mut api) = ApiClient::connect(session)? {
        let i = all.iter().position(|w| w == wt).unwrap_or_default();
        let panes = panes(&mut api)?;
        let workspaces = open_at(&all, &panes).swap_remove(i);
        if !close_allowed(&workspaces, &panes, &shown, yes)? {
            crate::say!("kept the worktree {shown} and its workspace");
            return Ok(1);
        }
        for ws in &workspaces {
            api.request(&Request::WorkspaceClose(req::WorkspaceTarget {
                workspace: Some(id::<WorkspaceNo>(ws)?),
            }))?;
            crate::say!("closed workspace {ws}");
        }
    }
    // From the main worktree: the one removed may be where this command runs.
    let from = all.first().map_or(cwd, |main| main.path.as_path());
    worktree::remove(from, &wt.path, force)?;
    crate::say!("removed the worktree {shown}");
    Ok(0)
}

/// Whether the workspaces at a worktree may be closed: yes when only shells run in their
/// panes or with `--yes`; else asked on a terminal, refused without one.
fn close_allowed(
    workspaces: &[String],
    panes: &[Value],
    shown: &str,
    yes: bool,
) -> anyhow::Result<bool> {
    let busy: Vec<String> = panes
        .iter()
        .filter(|p| workspaces.contains(&s(p, "workspace")) && runs_a_program(p))
        .map(|p| format!("{} ({})", s(p, "id"), s(p, "command")))
        .collect();
    if busy.is_empty() || yes {
        return Ok(true);
    }
    let what = format!(
        "workspace {} at {shown} runs {}",
        workspaces.join(", "),
        busy.join(", ")
    );
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("{what}: closing it hangs them up; pass --yes to close it anyway");
    }
    Ok(crate::say::confirm(&format!(
        "The {what}. Close it, hanging them up, and remove the worktree?"
    )))
}

/// Whether a program other than the pane's shell runs in it: one it was started with, or
/// one in front of its shell (its `command` is not the shell's command line).
fn runs_a_program(pane: &Value) -> bool {
    if !pane["exited"].is_null() {
        return false;
    }
    if pane["argv"].as_array().is_some_and(|a| !a.is_empty()) {
        return true;
    }
    let Some(command) = pane["command"].as_str() else {
        return false;
    };
    let shell = pane["pid"]
        .as_i64()
        .and_then(|pid| crate::pty::proc::cmdline(pid as i32))
        .map(|argv| argv.join(" "));
    match shell {
        Some(shell) => command != shell,
        None => !looks_like_a_shell(command),
    }
}

/// Where the shell's own command line cannot be read: whether `command` names a shell.
fn looks_like_a_shell(command: &str) -> bool {
    const SHELLS: &[&str] = &[
        "bash", "zsh", "fish", "sh", "dash", "ksh", "tcsh", "csh", "nu",
    ];
    let first = command.split_whitespace().next().unwrap_or_default();
    let name = first
        .rsplit('/')
        .next()
        .unwrap_or(first)
        .trim_start_matches('-');
    SHELLS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(path: &str) -> Worktree {
        Worktree {
            path: PathBuf::from(path),
            ..Worktree::default()
        }
    }

    #[test]
    fn a_workspace_is_open_at_the_deepest_worktree_its_panes_are_in() {
        let all = vec![tree("/nonexistent/app"), tree("/nonexistent/app/inner")];
        let panes = vec![
            json!({"workspace": "w1", "cwd": "/nonexistent/app/src"}),
            json!({"workspace": "w2", "cwd": "/nonexistent/app/inner/src"}),
            json!({"workspace": "w2", "cwd": "/nonexistent/app/inner"}),
            json!({"workspace": "w3", "cwd": "/elsewhere"}),
            json!({"workspace": "w4", "cwd": null}),
        ];
        assert_eq!(open_at(&all, &panes), vec![vec!["w1"], vec!["w2"]]);
    }

    #[test]
    fn a_shell_in_front_is_no_program_and_anything_else_is() {
        let shell = json!({"exited": null, "argv": [], "command": "-bash", "pid": null});
        assert!(!runs_a_program(&shell));
        let vim = json!({"exited": null, "argv": [], "command": "vim notes", "pid": null});
        assert!(runs_a_program(&vim));
        let started = json!({"exited": null, "argv": ["make"], "command": "make"});
        assert!(runs_a_program(&started));
        let ended = json!({"exited": 0, "argv": ["make"], "command": null});
        assert!(!runs_a_program(&ended));
    }
}
