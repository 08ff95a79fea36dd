//! Release builds on Linux lay out the functions a server and a client run together
//! (build/hot-code.ld, written by scripts/hot-code): the kernel maps code into a process
//! in blocks of 64 KiB or more, so with those functions spread over all of the binary a
//! server kept megabytes of code resident that it never runs. The list only orders
//! functions; one it does not name (or names wrongly, after a compiler or dependency
//! update) is placed as before. `HERDR_HOT_CODE=0` builds without it.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build/hot-code.ld");
    println!("cargo:rerun-if-env-changed=HERDR_HOT_CODE");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let wanted = std::env::var("HERDR_HOT_CODE").map_or(true, |v| v != "0");
    // Where this build puts the herdr binary (OUT_DIR is <profile dir>/build/<pkg>/out),
    // for programs built beside the tests that run it (tests/support).
    if let Some(dir) = std::env::var_os("OUT_DIR").and_then(|out| {
        let out = std::path::PathBuf::from(out);
        Some(out.ancestors().nth(3)?.to_path_buf())
    }) {
        println!(
            "cargo:rustc-env=HERDR_BUILT_BIN={}",
            dir.join("herdr").display()
        );
    }
    let Ok(root) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = Path::new(&root).join("build/hot-code.ld");
    if release && linux && wanted && script.is_file() {
        // Both GNU ld and lld take a script that only adds sections (INSERT) beside
        // their default layout.
        println!("cargo:rustc-link-arg-bin=herdr=-T");
        println!("cargo:rustc-link-arg-bin=herdr={}", script.display());
    }
}
