//! End-to-end: cold persistence. The server stops (or is killed) and comes back with the
//! same workspaces, tabs, layout, ids and folders.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{json, ok, prompt, wait_until, Env, Term, PROMPT};

/// Like `ok`, and on failure also shows the server's log (for rare failures on CI).
fn ok_logged(env: &Env, out: std::process::Output) -> String {
    if !out.status.success() {
        let log = std::fs::read_to_string(env.server_log()).unwrap_or_default();
        eprintln!("server log:\n{log}");
        let again = env.herdr(&["server", "status", "--json"]);
        eprintln!(
            "status now: {} {}",
            String::from_utf8_lossy(&again.stdout),
            String::from_utf8_lossy(&again.stderr)
        );
        let ps = std::process::Command::new("ps")
            .args(["-eo", "pid,ppid,stat,args"])
            .output()
            .unwrap();
        for l in String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains(&env.session))
        {
            eprintln!("ps: {l}");
        }
    }
    ok(out)
}

/// What must survive a restart, per pane (pid, command and title are new).
fn shape(env: &Env) -> Vec<Value> {
    support::pane_list(env)
        .iter()
        .map(|p| {
            serde_json::json!({
                "id": p["id"], "workspace": p["workspace"], "tab": p["tab"], "cwd": p["cwd"],
                "label": p["label"], "rows": p["rows"], "cols": p["cols"], "focused": p["focused"],
                "zoomed": p["zoomed"],
            })
        })
        .collect()
}

/// The box-drawing skeleton of a screen: where dividers and borders are.
fn skeleton(t: &Term) -> Vec<String> {
    t.rows()
        .iter()
        .map(|r| {
            r.chars()
                .map(|c| if "│─".contains(c) { c } else { ' ' })
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

fn restart(env: &Env) {
    ok(env.herdr(&["server", "stop"]));
    ok(env.herdr(&["server", "start"]));
}

#[test]
fn a_stopped_session_comes_back_with_its_layout_ids_and_folders() {
    let env = Env::new("restore");
    let dirs: Vec<PathBuf> = ["alpha", "beta", "gamma", "beta/deep"]
        .iter()
        .map(|d| env.home().join(d))
        .collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let d = |i: usize| dirs[i].display().to_string();
    ok(env.herdr(&["server", "start"]));
    ok(env.herdr(&["pane", "split", "--direction", "right", "--cwd", &d(0)]));
    ok(env.herdr(&["pane", "resize", "--direction", "left", "--cells", "7"]));
    ok(env.herdr(&["tab", "create", "--cwd", &d(1), "--name", "builds"]));
    ok(env.herdr(&["pane", "split", "--direction", "down", "--cwd", &d(3)]));
    ok(env.herdr(&["workspace", "create", "--cwd", &d(2), "--name", "third"]));
    let p = ok(env.herdr(&["pane", "split", "--cwd", &d(2)]));
    ok(env.herdr(&["pane", "rename", "--pane", &p, "watcher"]));
    ok(env.herdr(&["pane", "zoom", "--pane", &p, "--on"]));
    ok(env.herdr(&["workspace", "create", "--cwd", &d(1)]));
    ok(env.herdr(&["workspace", "focus", "w1"]));
    ok(env.herdr(&["tab", "focus", "t2"]));
    let t = env.client(140, 40);
    t.wait_text(PROMPT);
    let before = shape(&env);
    let screen_before = skeleton(&t);
    let tabs_before = json(env.herdr(&["tab", "list", "--json"]));
    drop(t);
    restart(&env);
    let t = env.client(140, 40);
    t.wait_text(PROMPT);
    assert_eq!(shape(&env), before);
    assert_eq!(
        json(env.herdr(&["tab", "list", "--json"]))["name"],
        tabs_before["name"]
    );
    let names: Vec<Value> = json(env.herdr(&["workspace", "list", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].clone())
        .collect();
    assert_eq!(names, ["~", "third", "beta"].map(Value::from));
    t.wait("the same layout on screen", |t| {
        skeleton(t) == screen_before
    });
    // New ids continue after the restored ones.
    let next = ok(env.herdr(&["pane", "split"]));
    let max_before = before
        .iter()
        .map(|p| p["id"].as_str().unwrap()[1..].parse::<u32>().unwrap())
        .max()
        .unwrap();
    assert_eq!(next, format!("p{}", max_before + 1));
    // A folder that vanished falls back to home, with a note.
    std::fs::remove_dir_all(&dirs[2]).unwrap();
    restart(&env);
    let panes = json(env.herdr(&["pane", "list", "--json", "--workspace", "w2"]));
    for p in panes.as_array().unwrap() {
        assert_eq!(p["cwd"], env.home().display().to_string().as_str());
    }
    let log = std::fs::read_to_string(env.server_log()).unwrap();
    assert!(
        log.contains("no longer exists; started in the home folder"),
        "{log}"
    );
}

#[test]
fn history_is_restored_marked_only_when_enabled() {
    let env = Env::new("history");
    std::fs::write(env.config_file(), "[persistence]\nhistory = true\n").unwrap();
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    ok(env.herdr(&["pane", "submit", "echo printed-before-$((40+2))"]));
    ok(env.herdr(&[
        "pane",
        "wait",
        "--output",
        "printed-before-42",
        "--timeout",
        "20",
    ]));
    restart(&env);
    prompt(&env, "p1");
    let text = ok(env.herdr(&["pane", "read", "--lines", "100"]));
    assert!(text.contains("printed-before-42"), "{text}");
    assert!(text.contains("— restored "), "{text}");
    assert!(env.state_dir().join("session-history.json").exists());
    // History off: the old file goes, and nothing is replayed.
    std::fs::write(env.config_file(), "[persistence]\nhistory = false\n").unwrap();
    restart(&env);
    prompt(&env, "p1");
    ok(env.herdr(&["server", "stop"]));
    assert!(!env.state_dir().join("session-history.json").exists());
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    let text = ok(env.herdr(&["pane", "read", "--lines", "100"]));
    assert!(!text.contains("printed-before-42"), "{text}");
}

#[test]
fn listed_commands_are_rerun_and_others_are_not() {
    let env = Env::new("commands");
    std::fs::write(
        env.config_file(),
        "[persistence]\nrestore_commands = [\"less\"]\n",
    )
    .unwrap();
    std::fs::write(
        env.home().join("notes.txt"),
        "line one of the notes\nline two\n",
    )
    .unwrap();
    ok(env.herdr(&["server", "start"]));
    prompt(&env, "p1");
    let other = ok(env.herdr(&["pane", "split"]));
    prompt(&env, &other);
    support::submit(&env, "p1", "less notes.txt");
    support::submit(&env, &other, "sleep 1000");
    support::wait_output(&env, "p1", "line one of the notes");
    support::wait_foreground(&env, &other, "sleep");
    restart(&env);
    support::wait_output(&env, "p1", "line one of the notes");
    let p1 = json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]));
    assert!(p1["command"].as_str().unwrap().starts_with("less"), "{p1}");
    prompt(&env, &other);
    let p2 = json(env.herdr(&["pane", "get", "--pane", &other, "--json"]));
    assert!(p2["command"].as_str().unwrap().contains("bash"), "{p2}");
}

#[test]
fn killed_servers_restore_from_the_last_save_at_most_about_a_second_old() {
    let env = Env::new("crash");
    ok(env.herdr(&["server", "start"]));
    let session_file = env.session_file();
    // A fixed sequence of pseudo-random delays: the kill lands at different moments
    // relative to the debounced save.
    let delays = [150u64, 1600, 700, 1900, 40, 1300];
    for (round, delay) in delays.iter().enumerate() {
        let label = format!("round-{round}");
        ok_logged(&env, env.herdr(&["pane", "rename", "--pane", "p1", &label]));
        let changed = Instant::now();
        std::thread::sleep(Duration::from_millis(*delay)); // the random moment of the crash
        let pid = env.server_pid().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let waited = changed.elapsed();
        // The main thread turns zombie before the other threads have closed the process's
        // files: wait until the socket itself refuses, or the next start could still
        // reach the dying server.
        wait_until("the server to be gone", || {
            !support::pid_alive(pid)
                && std::os::unix::net::UnixStream::connect(env.socket()).is_err()
        });
        // No file yet means no save happened yet (only possible in the first round).
        let label_saved = match std::fs::read(&session_file) {
            Ok(bytes) => {
                let saved: Value =
                    serde_json::from_slice(&bytes).expect("session.json always parses");
                saved["workspaces"][0]["tabs"][0]["panes"][0]["label"].clone()
            }
            Err(_) => {
                assert_eq!(round, 0, "session.json vanished");
                Value::Null
            }
        };
        if waited > Duration::from_millis(1500) {
            assert_eq!(
                label_saved,
                label.as_str(),
                "a change {waited:?} old was not saved"
            );
        }
        ok_logged(&env, env.herdr(&["server", "start"]));
        let p1: Value = serde_json::from_str(&ok_logged(
            &env,
            env.herdr(&["pane", "get", "--pane", "p1", "--json"]),
        ))
        .unwrap();
        assert_eq!(p1["label"], label_saved, "restored what was saved");
    }
}

#[test]
fn a_newer_file_is_kept_byte_for_byte_and_a_corrupt_one_moved_aside() {
    let env = Env::new("gates");
    let dir = env.state_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let newer = b"{\"version\": 99, \"from\": \"the future\"}\n";
    std::fs::write(dir.join("session.json"), newer).unwrap();
    let t = env.client(160, 30);
    t.wait("the user is told", |t| t.contents().contains("newer herdr"));
    ok(env.herdr(&["pane", "split"]));
    ok(env.herdr(&["server", "stop"]));
    assert_eq!(std::fs::read(dir.join("session.json")).unwrap(), newer);
    drop(t);
    std::fs::write(dir.join("session.json"), b"{ this is not json").unwrap();
    let t = env.client(160, 30);
    t.wait("the user is told", |t| {
        t.contents().contains("was unreadable")
    });
    let moved: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("session.json.corrupt-")
        })
        .collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(
        std::fs::read(moved[0].path()).unwrap(),
        b"{ this is not json"
    );
    assert_eq!(
        json(env.herdr(&["pane", "list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_symlinked_session_file_stays_a_link() {
    let env = Env::new("link");
    let dir = env.state_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let dotfiles = env.home().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    // A dangling link to a file that does not exist yet, as dotfile managers make.
    std::os::unix::fs::symlink(
        dotfiles.join("herdr-session.json"),
        dir.join("session.json"),
    )
    .unwrap();
    ok(env.herdr(&["server", "start"]));
    ok(env.herdr(&["pane", "rename", "--pane", "p1", "linked"]));
    ok(env.herdr(&["server", "stop"]));
    assert!(std::fs::symlink_metadata(dir.join("session.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    let saved: Value =
        serde_json::from_slice(&std::fs::read(dotfiles.join("herdr-session.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved["workspaces"][0]["tabs"][0]["panes"][0]["label"],
        "linked"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dotfiles.join("herdr-session.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    ok(env.herdr(&["server", "start"]));
    assert_eq!(
        json(env.herdr(&["pane", "get", "--pane", "p1", "--json"]))["label"],
        "linked"
    );
}

#[test]
fn a_cd_in_a_shell_is_saved_by_itself_soon_after() {
    // Nothing structural changes (`sh` sets no title): the server finds the new folder by
    // looking, soon after the shell printed its prompt there (an idle session looks only
    // once a minute, so a deadline well under that tells the two apart).
    let env = support::started("rescan");
    prompt(&env, "p1");
    support::submit(&env, "p1", "exec sh");
    support::wait_foreground(&env, "p1", "sh");
    let dir = env.home().join("moved here");
    std::fs::create_dir_all(&dir).unwrap();
    let session_file = env.session_file();
    let saved_cwd = || {
        std::fs::read(&session_file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["workspaces"][0]["tabs"][0]["panes"][0]["cwd"].clone())
    };
    let want = dir.display().to_string();
    support::submit(&env, "p1", "cd \"moved here\"");
    let typed = Instant::now();
    while saved_cwd().as_ref().and_then(Value::as_str) != Some(want.as_str()) {
        assert!(
            typed.elapsed() < Duration::from_secs(30),
            "the new folder was not saved: {:?}",
            saved_cwd()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("FIGURE cd saved {:?} after it was typed", typed.elapsed());
}
