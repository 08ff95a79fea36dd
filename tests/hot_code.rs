//! build/hot-code.ld (written by scripts/hot-code, linked into release builds by
//! build.rs) must be a script both linkers take, and must name what a server and a
//! client keep running: an old or partial list would silently bring back the megabytes
//! of code the ordering keeps out of memory.

use std::collections::BTreeSet;

fn script() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/build/hot-code.ld");
    std::fs::read_to_string(path).expect("build/hot-code.ld: run scripts/hot-code")
}

/// The C library's archive members and start-up files listed
/// (`*libc.a:malloc.o(.text .text.*)`: its code placed a source file at a time), as
/// `libc.a:malloc.o`, `rcrt1.o`.
fn members(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_suffix("(.text .text.*)"))
        .filter_map(|l| l.strip_prefix('*'))
        .inspect(|m| assert!(m.ends_with(".o") && !m.contains(' '), "member line: {m}"))
        .map(str::to_owned)
        .collect()
}

/// The section names listed, line by line, in order (the C library's members left out).
fn listed(text: &str) -> Vec<Vec<String>> {
    let body = text
        .split_once(".text.herdr_hot : {")
        .and_then(|(_, rest)| rest.split_once("\n  }\n} INSERT BEFORE .text;"))
        .expect("a .text.herdr_hot section inserted before .text")
        .0;
    let mut lines = Vec::new();
    let member = |l: &str| l.trim().ends_with("(.text .text.*)") && !l.trim().starts_with("*(");
    for line in body.lines().filter(|l| !l.trim().is_empty() && !member(l)) {
        let inner = line
            .trim()
            .strip_prefix("*(")
            .and_then(|l| l.strip_suffix(')'))
            .unwrap_or_else(|| panic!("not an input section line: {line}"));
        let parts: Vec<&str> = inner.split(' ').collect();
        assert!(
            !parts.is_empty() && parts.len().is_multiple_of(2),
            "patterns in pairs: {line}"
        );
        let mut names = Vec::new();
        for pair in parts.chunks(2) {
            let name = pair[0].strip_prefix(".text.").expect(".text. pattern");
            assert_eq!(pair[1], format!(".text.unlikely.{name}"), "{line}");
            names.push(name.to_owned());
        }
        lines.push(names);
    }
    lines
}

/// A legacy Rust symbol with its hash (`17h` and 16 hex digits, then `E`) made a
/// wildcard.
fn without_hash(name: &str) -> Option<String> {
    let at = name.match_indices("17h").map(|(i, _)| i).find(|&i| {
        let hash = name.as_bytes().get(i + 3..i + 20);
        hash.is_some_and(|h| h[..16].iter().all(u8::is_ascii_hexdigit) && h[16] == b'E')
    })?;
    Some(format!("{}17h*E", &name[..at]))
}

#[test]
fn every_function_is_listed_exactly_and_by_a_pattern_that_survives_new_hashes() {
    let lines = listed(&script());
    // A function's line: its exact name, with any `.llvm.N` suffix (which comes, goes and
    // changes with the code beside it), then its pattern if that names it alone. A line
    // of one pattern: a generic function's, which also names its other instances.
    let exact = |n: &str| !n.strip_suffix(".llvm.*").unwrap_or(n).contains('*');
    let functions: Vec<&Vec<String>> = lines.iter().filter(|l| exact(&l[0])).collect();
    assert!(
        functions.len() > 500,
        "only {} functions listed",
        functions.len()
    );
    // The functions come first, in their groups; the shared patterns after them.
    let first_shared = lines.iter().position(|l| !exact(&l[0]));
    let shared: BTreeSet<&String> = first_shared
        .map(|at| &lines[at..])
        .unwrap_or_default()
        .iter()
        .inspect(|l| assert!(l.len() == 1 && !exact(&l[0]), "{l:?}"))
        .map(|l| &l[0])
        .collect();
    for line in &functions {
        let name = &line[0];
        assert!(line.contains(&format!("{name}.llvm.*")), "{line:?}");
        let Some(pattern) = without_hash(name) else {
            continue;
        };
        let suffixed = format!("{pattern}*");
        let found = [&pattern, &suffixed]
            .into_iter()
            .any(|p| line.contains(p) || shared.contains(p));
        assert!(found, "no pattern for {name}");
    }
}

#[test]
fn the_list_holds_the_loops_a_server_and_a_client_keep_running() {
    let text = script();
    for what in [
        "herdr6server6Server3run17h",
        "herdr6server6Server4tick17h",
        "herdr4term8Emulator",
        "herdr6render2ui14compose_update17h",
        "herdr6render4diff",
        "herdr6client8terminal",
        "herdr6client5input",
    ] {
        assert!(
            text.contains(what),
            "build/hot-code.ld lists nothing of {what}: rerun scripts/hot-code"
        );
    }
    // Linked in (.cargo/config.toml), the C library's code a server runs is laid out with
    // the rest: its allocator and the system calls of the server's loop.
    if cfg!(target_feature = "crt-static") {
        let members = members(&text);
        for what in ["libc.a:malloc.o", "libc.a:epoll_wait.o", "libc.a:read.o"] {
            assert!(
                members.iter().any(|m| m == what),
                "build/hot-code.ld places no {what}: rerun scripts/hot-code"
            );
        }
    }
}
