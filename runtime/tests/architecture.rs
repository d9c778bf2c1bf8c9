//! The runtime's shape, checked from its sources: the module graph (derived from the
//! `crate::` paths of each file) has no cycle, and type erasure, `unsafe` and thread-local
//! state appear only where the crate's docs say why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module file of `runtime/src` (not `lib.rs`, not binaries) with its text, comments
/// removed.
fn modules() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name != "lib" {
                out.insert(
                    name,
                    strip_comments(&std::fs::read_to_string(&path).unwrap()),
                );
            }
        }
    }
    out
}

fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `lib.rs`'s re-exports: item -> the module that defines it (`crate::Data` is `types`).
fn reexports() -> BTreeMap<String, String> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    let text = strip_comments(&lib);
    for stmt in text.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        for item in items
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|s| !s.is_empty())
        {
            out.insert(item.to_owned(), module.trim().to_owned());
        }
    }
    out
}

fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
}

/// The modules each module uses through `crate::` paths.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let reexports = reexports();
    let mut graph = BTreeMap::new();
    for (name, src) in &modules {
        let mut deps = BTreeSet::new();
        for (at, _) in src.match_indices("crate::") {
            let rest = &src[at + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                identifiers(&group[..group.find('}').unwrap_or(group.len())]).collect()
            } else {
                identifiers(rest).take(1).collect()
            };
            for n in names {
                let target = if modules.contains_key(n) {
                    Some(n.to_owned())
                } else {
                    reexports.get(n).cloned()
                };
                if let Some(t) = target.filter(|t| t != name) {
                    deps.insert(t);
                }
            }
        }
        graph.insert(name.clone(), deps);
    }
    graph
}

/// A cycle of the graph, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                0 => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                1 => {
                    let from = stack.iter().position(|s| s == next).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 10, "the sources were found: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert("a".into(), ["b".to_owned()].into());
    graph.insert("b".into(), ["c".to_owned()].into());
    graph.insert("c".into(), ["a".to_owned()].into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_plan_imports_no_layer_that_builds_or_runs() {
    let graph = module_graph();
    for layer in ["plan", "config", "types", "error"] {
        for banned in ["compile", "drive", "run", "env", "stream", "operator"] {
            assert!(
                !graph[layer].contains(banned),
                "`{layer}` imports `{banned}`: {:?}",
                graph[layer]
            );
        }
    }
    for layer in ["drive", "operator", "window", "process", "sink", "source"] {
        for banned in ["compile", "run", "env", "stream"] {
            assert!(
                !graph[layer].contains(banned),
                "`{layer}` imports `{banned}`: {:?}",
                graph[layer]
            );
        }
    }
}

/// Type erasure and `unsafe` only where the docs say why: the per-worker stream table of
/// `compile.rs` (a timely stream borrows its worker's scope, so it cannot be `Any`) and a
/// panic's payload (`job.rs`), plus timely's own `Box<dyn Any + Send>` handed through in
/// `cluster.rs`.
#[test]
fn type_erasure_and_unsafe_stay_where_documented() {
    let allowed: &[(&str, &str, usize)] = &[
        ("compile", "TypeId", 4),
        ("compile", "unsafe", 2),
        ("job", "dyn std::any::Any", 1),
        ("job", "downcast", 2),
        ("job", "std::any::Any", 1),
        ("cluster", "dyn Any", 1),
        ("cluster", "std::any::Any", 1),
    ];
    for (module, src) in modules() {
        for token in [
            "TypeId",
            "unsafe",
            "dyn Any",
            "dyn std::any::Any",
            "std::any::Any",
            "downcast",
            "thread_local!",
        ] {
            let found = src.matches(token).count();
            let limit = allowed
                .iter()
                .find(|(m, t, _)| *m == module && *t == token)
                .map_or(0, |(_, _, n)| *n);
            assert!(
                found <= limit,
                "`{token}` appears {found} times in {module}.rs (allowed: {limit})"
            );
        }
    }
}
