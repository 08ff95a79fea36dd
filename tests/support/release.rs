//! Releases as scripts/release.sh makes them, from the test binary (stripped of debug
//! info: a realistic size to download), for tests with a local release server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ok;

/// The test binary without debug info (a realistic size to download), made once.
pub fn base_binary() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let dir = PathBuf::from(option_env!("CARGO_TARGET_TMPDIR").unwrap_or("target/tmp"));
        let path = dir.join("herdr-update-base");
        let tmp = dir.join(format!("herdr-update-base.{}", std::process::id()));
        super::copy_executable(super::BIN, &tmp);
        let s = Command::new("strip")
            .arg("--strip-debug")
            .arg(&tmp)
            .status()
            .unwrap();
        assert!(s.success(), "strip failed");
        std::fs::rename(&tmp, &path).unwrap();
        path
    })
    .clone()
}

pub fn release(out: &Path, url: &str, channel: &str, version: &str, build: Option<&str>) {
    let mut cmd = Command::new("sh");
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/release.sh"))
        .args([
            "--channel",
            channel,
            "--version",
            version,
            "--base-url",
            url,
        ])
        .arg("--out")
        .arg(out)
        .arg("--binary")
        .arg(base_binary());
    if let Some(b) = build {
        cmd.args(["--build", b]);
    }
    ok(cmd.output().unwrap());
}
