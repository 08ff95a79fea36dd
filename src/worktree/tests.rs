//! The worktree list as git prints it, the default place of a new one, and how a name
//! given on the command line finds one.

use super::*;

const PORCELAIN: &str = "worktree /src/app
HEAD 1111111111111111111111111111111111111111
branch refs/heads/main

worktree /src/app-feature-login
HEAD 2222222222222222222222222222222222222222
branch refs/heads/feature/login
locked

worktree /src/app/nested
HEAD 3333333333333333333333333333333333333333
detached
prunable gitdir file points to non-existent location
";

fn tree(path: &str, branch: Option<&str>) -> Worktree {
    Worktree {
        path: PathBuf::from(path),
        branch: branch.map(str::to_string),
        ..Worktree::default()
    }
}

#[test]
fn the_porcelain_list_gives_each_worktree_its_branch_and_state() {
    let all = parse_porcelain(PORCELAIN);
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].path, PathBuf::from("/src/app"));
    assert_eq!(all[0].branch.as_deref(), Some("main"));
    assert_eq!(all[1].branch.as_deref(), Some("feature/login"));
    assert!(all[1].locked && !all[1].prunable);
    assert_eq!(all[2].branch, None);
    assert!(all[2].prunable);
    assert_eq!(all[2].name(), "nested");
    assert_eq!(all[1].name(), "feature/login");
}

#[test]
fn a_bare_repository_is_marked_bare() {
    let all = parse_porcelain(
        "worktree /src/app.git\nbare\n\nworktree /src/x\nHEAD 1\nbranch refs/heads/x\n",
    );
    assert!(all[0].bare && all[0].head.is_none());
    assert!(!all[1].bare);
}

#[test]
fn a_new_worktree_goes_beside_the_main_one_with_slashes_made_dashes() {
    assert_eq!(
        default_path(Path::new("/src/app"), "feature/login"),
        PathBuf::from("/src/app-feature-login")
    );
    assert_eq!(made_up_branch(0xabc_123456), "herdr/123456");
}

#[test]
fn a_name_is_a_branch_first_then_a_path_and_none_is_where_one_stands() {
    let all = vec![
        tree("/src/app", Some("main")),
        tree("/src/app-x", Some("x")),
        tree("/src/app/nested", None),
    ];
    let cwd = Path::new("/src");
    assert_eq!(
        find(&all, Some("x"), cwd).unwrap().path,
        PathBuf::from("/src/app-x")
    );
    assert_eq!(
        find(&all, Some("app-x"), cwd).unwrap().branch.as_deref(),
        Some("x")
    );
    assert_eq!(
        find(&all, Some("/src/app/nested"), cwd).unwrap().branch,
        None
    );
    let e = find(&all, Some("y"), cwd).unwrap_err().to_string();
    assert!(
        e.contains("\"y\"") && e.contains("herdr worktree list"),
        "{e}"
    );
    // Inside the nested worktree is that one, not the main one around it.
    let here = find(&all, None, Path::new("/src/app/nested/src")).unwrap();
    assert_eq!(here.path, PathBuf::from("/src/app/nested"));
    assert_eq!(
        find(&all, None, Path::new("/src/app/lib"))
            .unwrap()
            .branch
            .as_deref(),
        Some("main")
    );
    assert!(find(&all, None, Path::new("/elsewhere")).is_err());
}
