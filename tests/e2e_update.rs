//! End-to-end: `herdr update`, `herdr channel` and install.sh against a real HTTP server
//! on 127.0.0.1 serving releases made by scripts/release.sh (the test binary, stamped
//! with a newer version, stands for the new release).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::http::{HttpServer, Reply};
use support::release::{base_binary, release};
use support::{ok, Env};

const NEW: &str = "99.0.0";
const OLD: &str = env!("CARGO_PKG_VERSION");

/// A user with herdr installed in ~/.local/bin, and a release server offering NEW.
struct World {
    env: Env,
    http: HttpServer,
    releases: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        let env = Env::new(name);
        let releases = env.dir.path().join("releases");
        std::fs::create_dir_all(&releases).unwrap();
        let http = HttpServer::start(releases.clone());
        release(&releases, &http.url(), "stable", NEW, None);
        let bin = env.home().join(".local/bin/herdr");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        support::copy_executable(base_binary(), &bin);
        std::fs::write(
            env.config_file(),
            format!(
                "[update]\nreleases_url = \"{}\"\ndownload_timeout_secs = 2\n",
                http.url()
            ),
        )
        .unwrap();
        World {
            env,
            http,
            releases,
            bin,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(&self.bin, args, &[])
    }

    fn run_with(&self, bin: &Path, args: &[&str], extra: &[(&str, &str)]) -> Output {
        Command::new(bin)
            .env_clear()
            .envs(self.env.vars())
            .envs(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .arg("--session")
            .arg(&self.env.session)
            .args(args)
            .current_dir(self.env.home())
            .output()
            .unwrap()
    }

    /// The installed herdr, run in a PTY (as on a user's terminal).
    fn on_terminal(&self, args: &[&str]) -> support::Term {
        let mut cmd = portable_pty::CommandBuilder::new(&self.bin);
        cmd.env_clear();
        for (k, v) in self.env.vars() {
            cmd.env(k, v);
        }
        cmd.args(args);
        cmd.cwd(self.env.home());
        support::Term::spawn(cmd, 120, 10)
    }

    /// The pids of the session's panes' programs.
    fn pids(&self) -> Vec<i64> {
        support::pane_list(&self.env)
            .iter()
            .map(|p| p["pid"].as_i64().unwrap())
            .collect()
    }

    fn version(&self) -> String {
        ok(self.run(&["--version"]))
    }

    fn artifact(&self) -> String {
        format!("/herdr-{NEW}-linux-x86_64")
    }

    /// Edits the stable manifest.
    fn edit_manifest(&self, f: impl Fn(&mut serde_json::Value)) {
        let path = self.releases.join("stable.json");
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        f(&mut m);
        std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    }

    /// Nothing but the binary in its folder (no temp files, no previous).
    fn folder(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.bin.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn update_installs_the_new_release_and_rollback_puts_the_old_one_back() {
    let w = World::new("update");
    assert_eq!(w.version(), format!("herdr {OLD}"));
    let out = ok(w.run(&["update", "--yes"]));
    assert!(out.contains(&format!("to {NEW}")), "{out}");
    assert_eq!(w.version(), format!("herdr {NEW}"));
    assert_eq!(w.folder(), ["herdr", "herdr.previous"]);
    // Again: nothing newer.
    let out = ok(w.run(&["update", "--yes"]));
    assert!(out.contains("up to date"), "{out}");
    ok(w.run(&["update", "--rollback"]));
    assert_eq!(w.version(), format!("herdr {OLD}"));
}

#[test]
fn check_changes_nothing() {
    let w = World::new("update-check");
    let before = std::fs::read(&w.bin).unwrap();
    let out = ok(w.run(&["update", "--check"]));
    assert!(out.contains(&format!("herdr {NEW} is available")), "{out}");
    assert_eq!(std::fs::read(&w.bin).unwrap(), before);
    assert_eq!(w.folder(), ["herdr"]);
    assert_eq!(
        w.http.hits(&w.artifact()),
        0,
        "--check downloads no artifact"
    );
}

#[test]
fn without_a_terminal_and_without_yes_it_says_what_to_run() {
    let w = World::new("update-noyes");
    let out = w.run(&["update"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("herdr update --yes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(w.folder(), ["herdr"]);
}

/// A broken release: a clear error, the old binary intact, nothing left beside it.
fn refused(w: &World, says: &str) {
    let before = std::fs::read(&w.bin).unwrap();
    let out = w.run(&["update", "--yes"]);
    assert!(!out.status.success(), "the update should fail");
    assert!(
        stderr(&out).contains(says),
        "expected {says:?} in: {}",
        stderr(&out)
    );
    assert!(
        std::fs::read(&w.bin).unwrap() == before,
        "the binary changed"
    );
    assert_eq!(w.folder(), ["herdr"]);
    assert_eq!(w.version(), format!("herdr {OLD}"));
}

#[test]
fn a_corrupted_artifact_is_refused() {
    let w = World::new("update-corrupt");
    let path = w.releases.join(w.artifact().trim_start_matches('/'));
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    refused(&w, "SHA-256");
}

#[test]
fn a_missing_checksum_is_refused_before_downloading() {
    let w = World::new("update-nosum");
    w.edit_manifest(|m| m["platforms"]["linux-x86_64"]["sha256"] = "".into());
    refused(&w, "no SHA-256");
    assert_eq!(w.http.hits(&w.artifact()), 0);
}

#[test]
fn a_malformed_checksum_is_refused_before_downloading() {
    let w = World::new("update-badsum");
    w.edit_manifest(|m| m["platforms"]["linux-x86_64"]["sha256"] = "abc123".into());
    refused(&w, "malformed");
    assert_eq!(w.http.hits(&w.artifact()), 0);
}

#[test]
fn a_missing_artifact_is_refused() {
    let w = World::new("update-404");
    w.http.route(&w.artifact(), Reply::Status(404));
    refused(&w, "HTTP 404");
    assert_eq!(w.http.hits(&w.artifact()), 1, "a 404 is not retried");
}

#[test]
fn a_server_error_is_retried_then_refused() {
    let w = World::new("update-500");
    w.http.route(&w.artifact(), Reply::Status(500));
    refused(&w, "HTTP 500");
    assert_eq!(w.http.hits(&w.artifact()), 3);
}

#[test]
fn a_truncated_body_is_refused() {
    let w = World::new("update-truncated");
    w.http
        .route(&w.artifact(), Reply::Truncated { send: 1_000_000 });
    refused(&w, "of");
}

#[test]
fn a_server_that_stalls_mid_body_is_refused() {
    let w = World::new("update-stall");
    w.http
        .route(&w.artifact(), Reply::Stall { send: 1_000_000 });
    refused(&w, "stalled");
}

#[test]
fn channels_switch_explicitly_and_stable_never_downgrades() {
    let w = World::new("update-channel");
    release(&w.releases, &w.http.url(), "preview", "99.1.0", Some("3"));
    assert!(ok(w.run(&["channel", "show"])).contains("channel:  stable"));
    ok(w.run(&["channel", "set", "preview"]));
    assert!(ok(w.run(&["channel", "show"])).contains("preview.json"));
    ok(w.run(&["update", "--yes"]));
    assert_eq!(w.version(), "herdr 99.1.0-preview.3");
    ok(w.run(&["channel", "set", "stable"]));
    let out = ok(w.run(&["update", "--yes"]));
    assert!(out.contains("up to date"), "{out}");
    assert_eq!(w.version(), "herdr 99.1.0-preview.3");
    let bad = w.run(&["channel", "set", "nightly"]);
    assert!(
        stderr(&bad).contains("stable and preview"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn package_managed_binaries_and_panes_are_refused_with_advice() {
    let w = World::new("update-managed");
    for (dir, says, extra) in [
        ("cargo/bin", "cargo install", vec![("CARGO_HOME", "cargo")]),
        ("Cellar/herdr/1.0/bin", "brew upgrade", vec![]),
    ] {
        let bin = w.env.dir.path().join(dir).join("herdr");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        support::copy_executable(base_binary(), &bin);
        let extra: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    w.env.dir.path().join(v).display().to_string(),
                )
            })
            .collect();
        let extra: Vec<(&str, &str)> = extra
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let out = w.run_with(&bin, &["update", "--yes"], &extra);
        assert!(!out.status.success());
        assert!(stderr(&out).contains(says), "{dir}: {}", stderr(&out));
    }
    let out = w.run_with(&w.bin, &["update", "--yes"], &[("HERDR_PANE", "p1")]);
    assert!(stderr(&out).contains("Detach first"), "{}", stderr(&out));
    assert_eq!(
        w.http.hits("/stable.json"),
        0,
        "refused before asking the network"
    );
}

#[test]
fn update_with_handoff_moves_running_servers_without_stopping_programs() {
    let w = World::new("update-handoff");
    ok(w.run(&["server", "start"]));
    ok(w.run(&["pane", "split", "--", "cat"]));
    let before = w.pids();
    let out = ok(w.run(&["update", "--yes", "--handoff"]));
    assert!(out.contains(&format!("now serving herdr {NEW}")), "{out}");
    let status: serde_json::Value =
        serde_json::from_str(&ok(w.run(&["server", "status", "--json"]))).unwrap();
    assert_eq!(status["version"], NEW);
    assert_eq!(w.pids(), before);
}

fn install_sh(w: &World, prefix: &Path) -> Output {
    Command::new("sh")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .args(["--releases-url", &w.http.url()])
        .env_clear()
        .envs(w.env.vars())
        .output()
        .unwrap()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn install_sh_installs_a_verified_binary() {
    let w = World::new("install-sh");
    let prefix = w.env.dir.path().join("prefix");
    let out = ok(install_sh(&w, &prefix));
    assert!(out.contains(&format!("installed herdr {NEW}")), "{out}");
    assert!(out.contains("not on your PATH"), "{out}");
    assert_eq!(listing(&prefix.join("bin")), ["herdr"]);
    let v = ok(Command::new(prefix.join("bin/herdr"))
        .arg("--version")
        .output()
        .unwrap());
    assert_eq!(v, format!("herdr {NEW}"));
    // The manual page, as the verified binary prints it (and as the release ships it).
    assert!(out.contains("manual page"), "{out}");
    let man1 = prefix.join("share/man/man1");
    assert_eq!(listing(&man1), ["herdr.1"]);
    let page = std::fs::read_to_string(man1.join("herdr.1")).unwrap();
    assert!(
        page.contains(&format!(".TH herdr 1  \"herdr {NEW}\"")),
        "{page}"
    );
    assert_eq!(
        std::fs::read_to_string(w.releases.join("herdr.1")).unwrap(),
        page
    );
}

#[test]
fn install_sh_refuses_a_checksum_mismatch_and_leaves_nothing() {
    let w = World::new("install-sh-bad");
    let path = w.releases.join("stable.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sha = m["platforms"]["linux-x86_64"]["sha256"].as_str().unwrap();
    std::fs::write(&path, text.replace(sha, &"0".repeat(64))).unwrap();
    let prefix = w.env.dir.path().join("prefix");
    let out = install_sh(&w, &prefix);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    assert!(
        listing(&prefix.join("bin")).is_empty(),
        "{:?}",
        listing(&prefix.join("bin"))
    );
    assert!(!prefix.join("share").exists(), "no manual page either");
}

#[test]
fn the_shell_scripts_pass_shellcheck() {
    let out = Command::new("shellcheck")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/install.sh"))
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/release.sh"))
        .output()
        .expect("shellcheck is needed for this test (apt-get install shellcheck)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn on_a_terminal_the_download_shows_its_progress() {
    let w = World::new("update-progress");
    let t = w.on_terminal(&["update", "--yes"]);
    t.wait("the finished progress line", |t| {
        t.contents().contains(&format!("herdr {NEW}: ")) && t.contents().contains("(100%)")
    });
    t.wait_text(&format!("to {NEW}"));
}

#[test]
fn on_a_terminal_it_asks_first_and_no_changes_nothing() {
    let w = World::new("update-ask");
    let mut t = w.on_terminal(&["update"]);
    t.wait_text(&format!("Update herdr {OLD} to {NEW}? [y/N]"));
    t.send(b"n\r");
    t.wait_text("nothing was changed");
    assert_eq!(w.folder(), ["herdr"]);
    assert_eq!(w.http.hits(&w.artifact()), 0);
}

/// A release of another protocol (the manifest says so): the running server needs a
/// decision.
fn world_with_a_server_of_another_protocol(name: &str) -> (World, Vec<i64>) {
    let w = World::new(name);
    ok(w.run(&["server", "start"]));
    ok(w.run(&["pane", "split", "--", "cat"]));
    w.edit_manifest(|m| m["protocol"] = 2.into());
    let pids = w.pids();
    (w, pids)
}

#[test]
fn without_handoff_a_server_of_another_protocol_is_reported_with_what_to_do() {
    let (w, pids) = world_with_a_server_of_another_protocol("update-proto");
    let out = w.run(&["update", "--yes"]);
    assert_eq!(out.status.code(), Some(5));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("new clients cannot attach"), "{said}");
    assert!(said.contains("herdr server handoff --session"), "{said}");
    assert_eq!(
        w.version(),
        format!("herdr {NEW}"),
        "the binary itself was updated"
    );
    let st: serde_json::Value =
        serde_json::from_str(&ok(w.run(&["server", "status", "--json"]))).unwrap();
    assert_eq!(st["version"], OLD, "the server was left alone");
    for pid in pids {
        assert!(support::pid_alive(pid as i32));
    }
}

#[test]
fn a_server_that_cannot_be_handed_off_keeps_serving_and_is_reported() {
    // The new binary does not speak the protocol the manifest promised: the handoff is
    // refused before anything changes.
    let (w, pids) = world_with_a_server_of_another_protocol("update-proto-fail");
    let out = w.run(&["update", "--yes", "--handoff"]);
    assert_eq!(out.status.code(), Some(5));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("the handoff failed"), "{said}");
    assert!(said.contains("retry with `herdr server handoff"), "{said}");
    let st: serde_json::Value =
        serde_json::from_str(&ok(w.run(&["server", "status", "--json"]))).unwrap();
    assert_eq!(st["version"], OLD);
    for pid in pids {
        assert!(support::pid_alive(pid as i32));
    }
}

#[test]
fn install_sh_reads_a_manifest_written_on_one_line() {
    let w = World::new("install-sh-oneline");
    // Another platform listed after ours must not be picked.
    w.edit_manifest(|m| {
        let mut other = m["platforms"]["linux-x86_64"].clone();
        other["url"] = "http://127.0.0.1:9/not-this-one".into();
        other["sha256"] = "f".repeat(64).into();
        m["platforms"]["zz-other"] = other;
    });
    let path = w.releases.join("stable.json");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    let prefix = w.env.dir.path().join("prefix");
    let out = ok(install_sh(&w, &prefix));
    assert!(out.contains(&format!("installed herdr {NEW}")), "{out}");
}
