//! End-to-end: `herdr worktree create|list|open|remove` on a real git repository made in
//! the test's folder, against the session's real server: the workspace opened at a new
//! worktree, the list with its dirty flags and workspaces, focusing instead of opening a
//! second, removal refused while there are changes or programs, and git's own errors.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use portable_pty::CommandBuilder;
use serde_json::Value;
use support::{json, ok, pane_list, started, submit, wait_foreground, wait_until, Env, Term, BIN};

/// Runs git in `dir` with the test's environment; its stdout (it must succeed).
fn git(env: &Env, dir: &Path, args: &[&str]) -> String {
    let mut cmd = env.command("git", args);
    cmd.current_dir(dir);
    ok(cmd.output().expect("run git"))
}

/// A repository at `~/app` with one commit.
fn repo(env: &Env) -> PathBuf {
    let dir = env.home().join("app");
    std::fs::create_dir_all(&dir).unwrap();
    git(env, &dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git(env, &dir, &["add", "README"]);
    let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
    git(
        env,
        &dir,
        &[&who[..], &["commit", "-q", "-m", "init"]].concat(),
    );
    std::fs::canonicalize(dir).unwrap()
}

/// `herdr worktree ARGS…` run in `dir` (stdin not a terminal).
fn worktree(env: &Env, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = env.command(BIN, &["--session", &env.session, "worktree"]);
    cmd.args(args).current_dir(dir);
    cmd.output().expect("run herdr worktree")
}

/// `herdr worktree ARGS…` run in `dir` on a terminal of its own.
fn on_a_terminal(env: &Env, dir: &Path, args: &[&str]) -> Term {
    let mut cmd = CommandBuilder::new(BIN);
    cmd.env_clear();
    for (k, v) in env.vars() {
        cmd.env(k, v);
    }
    cmd.args(["--session", &env.session, "worktree"]);
    cmd.args(args);
    cmd.cwd(dir);
    Term::spawn(cmd, 200, 30)
}

/// `worktree create` that must succeed: the path and workspace it printed.
fn create(env: &Env, dir: &Path, args: &[&str]) -> (PathBuf, String) {
    let out = ok(worktree(env, dir, &[&["create"], args].concat()));
    let mut lines = out.lines();
    let path = PathBuf::from(lines.next().expect("a path line"));
    let ws = lines.next().expect("a workspace line").to_string();
    (path, ws)
}

fn workspaces(env: &Env) -> Vec<Value> {
    json(env.herdr(&["workspace", "list", "--json"]))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The panes of workspace `ws`.
fn panes_of(env: &Env, ws: &str) -> Vec<Value> {
    pane_list(env)
        .into_iter()
        .filter(|p| p["workspace"] == ws)
        .collect()
}

/// Waits until the workspace's pane has its shell in `dir`.
fn wait_cwd(env: &Env, ws: &str, dir: &Path) {
    let want = dir.display().to_string();
    wait_until(&format!("a pane of {ws} in {want}"), || {
        panes_of(env, ws).iter().any(|p| p["cwd"] == want.as_str())
    });
}

/// `worktree list --json`, the entry at `path`.
fn listed(env: &Env, dir: &Path, path: &Path) -> Value {
    let all = json(worktree(env, dir, &["list", "--json"]));
    let shown = path.display().to_string();
    all.as_array()
        .and_then(|a| a.iter().find(|w| w["path"] == shown.as_str()).cloned())
        .unwrap_or_else(|| panic!("{shown} not in {all:#}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn create_opens_a_workspace_at_the_new_worktree_and_list_and_open_find_it() {
    // No server runs yet: create starts one.
    let env = Env::new("wt-create");
    let app = repo(&env);
    let (path, ws) = create(&env, &app, &["--branch", "feature/login"]);
    assert_eq!(
        path,
        env.home().canonicalize().unwrap().join("app-feature-login")
    );
    assert!(path.join("README").exists());
    let named: Vec<Value> = workspaces(&env)
        .into_iter()
        .filter(|w| w["id"] == ws.as_str())
        .collect();
    assert_eq!(named.len(), 1, "{ws} in {:#?}", workspaces(&env));
    assert_eq!(named[0]["name"], "feature/login");
    wait_cwd(&env, &ws, &path);

    // Without a branch, one is made up, and the worktree goes beside the repository.
    let (made_up, other) = create(&env, &app, &[]);
    let leaf = made_up.file_name().unwrap().to_string_lossy().into_owned();
    let digits = leaf.strip_prefix("app-herdr-").expect("app-herdr-<id>");
    assert!(
        digits.len() == 6 && digits.chars().all(|c| c.is_ascii_hexdigit()),
        "{leaf}"
    );
    wait_cwd(&env, &other, &made_up);

    // The list: each worktree's branch, path, dirty flag and the workspace open there.
    let entry = listed(&env, &app, &path);
    assert_eq!(entry["branch"], "feature/login");
    assert_eq!(entry["dirty"], false);
    assert_eq!(entry["workspace"], ws.as_str());
    assert_eq!(listed(&env, &app, &app)["branch"], "main");
    std::fs::write(path.join("notes.txt"), "todo\n").unwrap();
    assert_eq!(listed(&env, &app, &path)["dirty"], true);
    let human = ok(worktree(&env, &app, &["list"]));
    assert!(
        human.contains("feature/login") && human.contains("dirty"),
        "{human}"
    );

    // Open focuses the workspace already there rather than opening a second one.
    let before = workspaces(&env).len();
    let opened = json(worktree(&env, &app, &["open", "feature/login", "--json"]));
    assert_eq!(opened["workspace"], ws.as_str());
    assert_eq!(opened["opened"], false);
    let now = workspaces(&env);
    assert_eq!(now.len(), before);
    let focused = now.iter().find(|w| w["focused"] == true).unwrap();
    assert_eq!(focused["id"], ws.as_str());
}

#[test]
fn remove_refuses_changes_and_programs_then_force_closes_the_workspace() {
    let env = started("wt-remove");
    let app = repo(&env);
    let (path, ws) = create(&env, &app, &["--branch", "fix"]);
    wait_cwd(&env, &ws, &path);
    std::fs::write(path.join("notes.txt"), "todo\n").unwrap();

    // Uncommitted changes: refused, naming the file and how to force.
    let out = worktree(&env, &app, &["remove", "fix"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("?? notes.txt") && said.contains("--force"),
        "{said}"
    );
    assert!(path.exists());

    // A program in the workspace, and no terminal to ask on: refused without --yes.
    let pane = s(&panes_of(&env, &ws)[0], "id");
    support::prompt(&env, &pane);
    submit(&env, &pane, "sleep 300");
    wait_foreground(&env, &pane, "sleep");
    let out = worktree(&env, &app, &["remove", "fix", "--force"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("sleep 300") && said.contains("--yes"),
        "{said}"
    );
    assert!(workspaces(&env).iter().any(|w| w["id"] == ws.as_str()));

    // On a terminal it asks; anything but yes keeps both.
    let mut t = on_a_terminal(&env, &app, &["remove", "fix", "--force"]);
    t.wait_text("[y/N]");
    assert!(t.contents().contains("sleep 300"), "{}", t.contents());
    t.send(b"n\r");
    assert_eq!(t.wait_exit(), 1);
    assert!(workspaces(&env).iter().any(|w| w["id"] == ws.as_str()));
    assert!(path.exists());

    // Forced, and yes: the workspace is closed and the worktree is gone.
    let said = ok(worktree(&env, &app, &["remove", "fix", "--force", "--yes"]));
    assert!(said.contains(&format!("closed workspace {ws}")), "{said}");
    assert!(!workspaces(&env).iter().any(|w| w["id"] == ws.as_str()));
    let left = git(&env, &app, &["worktree", "list", "--porcelain"]);
    assert!(!left.contains(&path.display().to_string()), "{left}");
    assert!(!path.exists());
}

#[test]
fn a_git_error_is_shown_as_git_gave_it() {
    let env = Env::new("wt-git-error");
    let app = repo(&env);
    git(&env, &app, &["branch", "taken"]);
    let out = worktree(&env, &app, &["create", "--branch", "taken"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(said.starts_with("herdr: creating the worktree"), "{said}");
    assert!(said.contains("exit status"), "{said}");
    assert!(
        said.contains("fatal: a branch named 'taken' already exists"),
        "{said}"
    );
    // Nothing was opened: no server was started for it.
    assert!(!env.socket().exists());

    // The main worktree is not git's to remove: refused before anything is closed.
    let out = worktree(&env, &app, &["remove", "main", "--force", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("main worktree"), "{}", stderr(&out));
    assert!(app.join("README").exists());

    // Outside a repository, git says so.
    let out = worktree(&env, &env.home(), &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a git repository"),
        "{}",
        stderr(&out)
    );
}

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}
