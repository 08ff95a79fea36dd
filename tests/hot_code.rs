//! build/hot-code.ld (written by scripts/hot-code, linked into release builds by
//! build.rs) must be a script both linkers take, and must name what a server and a
//! client keep running: an old or partial list would silently bring back the megabytes
//! of code the ordering keeps out of memory.

use std::collections::BTreeSet;

fn script() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/build/hot-code.ld");
    std::fs::read_to_string(path).expect("build/hot-code.ld: run scripts/hot-code")
}

/// The section names listed, in order.
fn listed(text: &str) -> Vec<String> {
    let body = text
        .split_once(".text.herdr_hot : {")
        .and_then(|(_, rest)| rest.split_once("\n  }\n} INSERT BEFORE .text;"))
        .expect("a .text.herdr_hot section inserted before .text")
        .0;
    let mut names = Vec::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let inner = line
            .trim()
            .strip_prefix("*(")
            .and_then(|l| l.strip_suffix(')'))
            .unwrap_or_else(|| panic!("not an input section line: {line}"));
        let [plain, cold] = inner.split(' ').collect::<Vec<_>>()[..] else {
            panic!("two patterns per line: {line}");
        };
        let name = plain.strip_prefix(".text.").expect(".text. pattern");
        assert_eq!(cold, format!(".text.unlikely.{name}"), "{line}");
        names.push(name.to_owned());
    }
    names
}

/// A legacy Rust symbol with its hash (`17h` and 16 hex digits, then `E`) and any
/// `.llvm.N` suffix made wildcards.
fn without_hash(name: &str) -> Option<String> {
    let at = name.match_indices("17h").map(|(i, _)| i).find(|&i| {
        let hash = name.as_bytes().get(i + 3..i + 20);
        hash.is_some_and(|h| h[..16].iter().all(u8::is_ascii_hexdigit) && h[16] == b'E')
    })?;
    let mut pattern = format!("{}17h*E", &name[..at]);
    if name[at + 20..].starts_with(".llvm.") {
        pattern.push('*');
    }
    Some(pattern)
}

#[test]
fn every_function_is_listed_exactly_and_by_a_pattern_that_survives_new_hashes() {
    let names = listed(&script());
    // Named exactly, up to an `.llvm.N` suffix (which changes with the code beside it).
    let first_tier = |n: &str| !n.strip_suffix(".llvm.*").unwrap_or(n).contains('*');
    let exact: Vec<&String> = names.iter().filter(|n| first_tier(n)).collect();
    let wild: BTreeSet<&String> = names.iter().filter(|n| !first_tier(n)).collect();
    assert!(exact.len() > 500, "only {} functions listed", exact.len());
    // The exact names come first (they claim the functions seen), the patterns after.
    let first_wild = names.iter().position(|n| !first_tier(n)).unwrap_or(0);
    assert!(names[first_wild..].iter().all(|n| !first_tier(n)));
    for name in &exact {
        let Some(pattern) = without_hash(name) else {
            continue;
        };
        assert!(wild.contains(&pattern), "no pattern for {name}");
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
}
