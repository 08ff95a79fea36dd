//! The layers of `src/` stay layers: no import cycle between the crate's top-level
//! modules, nothing but the binary imports `cli`, and the modules below the server never
//! reach up into it (and the server writes its log through `crate::log`). Read from the source text (every `crate::…` path outside comments),
//! so a new import that breaks a rule fails here with the file that made it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that must never import `server` (they are what the server is built from, or a
/// client of it).
const BELOW_SERVER: &[&str] = &[
    "client", "render", "model", "term", "pty", "protocol", "input",
];

/// Modules the renderer must not import: it composes frames from the values and screens
/// it is given, never from the registry of terminals or their locks.
const NOT_FOR_RENDER: &[&str] = &["server", "pty", "sys"];

/// Top-level module → (module it imports → the first file that does).
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/server/api/mod.rs` → `server`).
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a file without its comments (doc links name modules they do not import).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // (A `//` inside a string literal cuts the line short; only paths are read.)
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module named by a `crate::` path in `code` (`crate::a::b`,
/// `crate::{a, b::c}`, `$crate::a`).
fn imports(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `mycrate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                found.extend(first_ident(item.trim()));
            }
        } else {
            found.extend(first_ident(rest));
        }
    }
    found
}

fn first_ident(s: &str) -> Option<String> {
    let ident: String = s
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty()).then_some(ident)
}

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let top: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let from = module_of(file);
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let edges = graph.entry(from.clone()).or_default();
        for to in imports(&code(&text)) {
            if to != from && top.contains(&to) {
                edges.entry(to).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

/// A file as the project names it (`src/render/pane.rs`).
fn shown(file: &Path) -> String {
    let root = src();
    let root = root.parent().unwrap();
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// A cycle through `start`, as the list of modules along it, if there is one.
fn cycle_from(graph: &Graph, start: &str) -> Option<Vec<String>> {
    // Depth-first search for a path from `start` back to itself.
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

/// The files that make each step of a cycle.
fn explain(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|w| format!("  {} -> {} ({})", w[0], w[1], shown(&graph[&w[0]][&w[1]])))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let graph = graph();
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            panic!(
                "an import cycle between src/'s modules:\n{}",
                explain(&graph, &cycle)
            );
        }
    }
}

/// Each import of a module in `to` by a module in `from`, with the file that makes it.
fn imports_between(graph: &Graph, from: &[&str], to: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for f in from {
        for t in to.iter().filter(|t| *t != f) {
            if let Some(file) = graph.get(*f).and_then(|edges| edges.get(*t)) {
                found.push(format!("{f} -> {t} ({})", shown(file)));
            }
        }
    }
    found
}

#[test]
fn only_the_binary_imports_cli() {
    let graph = graph();
    let all: Vec<&str> = graph.keys().map(String::as_str).collect();
    let found = imports_between(&graph, &all, &["cli"]);
    assert!(found.is_empty(), "cli is imported: {}", found.join(", "));
}

#[test]
fn the_layers_below_the_server_never_import_it() {
    let found = imports_between(&graph(), BELOW_SERVER, &["server"]);
    assert!(found.is_empty(), "server is imported: {}", found.join(", "));
}

#[test]
fn the_renderer_is_given_what_it_draws() {
    let found = imports_between(&graph(), &["render"], NOT_FOR_RENDER);
    assert!(found.is_empty(), "render imports: {}", found.join(", "));
}

/// The server speaks through its log (`crate::log`: a timestamp and a level on every
/// line, rotated), never with a bare `eprintln!`: a line without them could not be
/// told apart from a panic's or dated.
#[test]
fn the_server_writes_its_log_through_the_logger() {
    let mut files = Vec::new();
    rust_files(&src().join("server"), &mut files);
    files.sort();
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = code(&text);
            code.contains("eprintln!") || code.contains("eprint!")
        })
        .map(|f| shown(f))
        .collect();
    assert!(
        found.is_empty(),
        "eprintln! in the server (use log::error!/warn!/info!/debug!): {}",
        found.join(", ")
    );
}

#[test]
fn the_reader_finds_every_form_of_path() {
    let found = imports("use crate::{a, b::c};\nlet x = crate::d::e();\n$crate::f::g\nmycrate::h");
    let want: BTreeSet<String> = ["a", "b", "d", "f"].iter().map(|s| s.to_string()).collect();
    assert_eq!(found, want);
    assert_eq!(code("x // crate::y\n/// crate::z"), "x \n");
}
