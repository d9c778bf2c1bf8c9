//! The runtime's shape, checked from its sources. Every `.rs` file under `runtime/src`, in
//! every folder, is a module; its imports are the `crate::` paths it names (comments
//! removed). The test fails when
//! - a module imports a layer above its own, or a different layer of the same rank (the
//!   order is `LAYERS` below, the one the crate docs in `runtime/src/lib.rs` describe);
//! - a module imports through a re-export (`crate::X` of `lib.rs`, or a folder's `mod.rs`)
//!   instead of the module that defines the item;
//! - a folder or root file appears that `LAYERS` does not place;
//! - the module graph has a cycle (inside a layer as well);
//! - type erasure, `unsafe` or thread-local state appears beyond the documented exceptions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, top to bottom: a module may import its own layer and any layer of a higher
/// rank number (below it), never a layer above it or another layer of its rank.
const LAYERS: &[(&str, u32)] = &[
    ("api", 0),
    ("__fuzz", 0),
    ("exec", 1),
    ("net", 2),
    ("user", 3),
    // Batch execution aggregates windows by hash (`batch::hash`), so windows sit below it.
    ("batch", 3),
    ("windowing", 4),
    ("operator", 5),
    ("checkpoint", 6),
    ("plan", 7),
    ("config", 8),
    ("job", 8),
    ("types", 9),
    ("error", 9),
    ("metrics", 9),
];

/// A module's source with comments removed, keyed by its path (`api::datastream`;
/// a folder's `mod.rs` is the folder's path; `lib.rs` is the empty path).
type Modules = BTreeMap<String, String>;

fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn walk(dir: &Path, prefix: &[String], out: &mut Modules, bins: bool) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name == "bin" && prefix.is_empty() && !bins {
                continue; // binaries import the public API, not `crate::` paths
            }
            let mut p = prefix.to_vec();
            p.push(name);
            walk(&path, &p, out, bins);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut p = prefix.to_vec();
            if stem != "mod" && !(prefix.is_empty() && stem == "lib") {
                p.push(stem.to_owned());
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(p.join("::"), strip_comments(&text));
        }
    }
}

/// Every module of `runtime/src` (every folder; binaries with `bins`).
fn modules(bins: bool) -> Modules {
    let mut out = Modules::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[],
        &mut out,
        bins,
    );
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a `crate::` use tree names, from the text after `crate::` (`a::b::{C, d::E}`
/// gives `a::b::C` and `a::b::d::E`; a trailing `self` names the module).
fn use_tree(text: &str) -> Vec<Vec<String>> {
    fn parse(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            while *i < s.len() && s[*i].is_whitespace() {
                *i += 1;
            }
            if *i < s.len() && s[*i] == '{' {
                *i += 1;
                loop {
                    parse(s, i, path.clone(), out);
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    match s.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    if s.get(*i) == Some(&'}') {
                        *i += 1;
                        return;
                    }
                }
            }
            let start = *i;
            while *i < s.len() && is_ident(s[*i]) {
                *i += 1;
            }
            let word: String = s[start..*i].iter().collect();
            if !word.is_empty() && word != "self" {
                path.push(word);
            }
            if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
                *i += 2;
                continue;
            }
            // `X as Y`: the name imported is still `X`.
            let rest: String = s[*i..s.len().min(*i + 4)].iter().collect();
            if rest.starts_with(" as ") {
                *i += 4;
                while *i < s.len() && is_ident(s[*i]) {
                    *i += 1;
                }
            }
            if !path.is_empty() {
                out.push(path);
            }
            return;
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    parse(&chars, &mut 0, Vec::new(), &mut out);
    out
}

/// Every `crate::` path of a module's source.
fn crate_paths(src: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in src.match_indices("crate::") {
        if at > 0 && src[..at].ends_with(|c: char| is_ident(c) || c == '$') {
            continue; // `$crate::` of macros, or a longer identifier
        }
        out.extend(use_tree(&src[at + "crate::".len()..]));
    }
    out
}

/// Whether `src` defines `name` at its top level (or in a `macro_rules!`).
fn defines(src: &str, name: &str) -> bool {
    const KINDS: &[&str] = &[
        "struct ", "enum ", "trait ", "fn ", "type ", "const ", "static ", "mod ", "union ",
    ];
    src.lines().any(|line| {
        let l = line.trim_start();
        let l = l
            .strip_prefix("pub(crate) ")
            .or_else(|| l.strip_prefix("pub(super) "))
            .or_else(|| l.strip_prefix("pub "))
            .unwrap_or(l);
        let l = l.strip_prefix("unsafe ").unwrap_or(l);
        KINDS.iter().any(|k| {
            l.strip_prefix(k).is_some_and(|rest| {
                rest.starts_with(name) && !rest[name.len()..].starts_with(is_ident)
            })
        }) || l
            .strip_prefix("macro_rules! ")
            .is_some_and(|rest| rest.starts_with(name))
    })
}

fn layer_of(module: &str) -> &str {
    module.split("::").next().unwrap_or("")
}

fn rank(layer: &str) -> Option<u32> {
    LAYERS.iter().find(|(l, _)| *l == layer).map(|(_, r)| *r)
}

/// The module graph and every violation of the rules, for a set of modules.
fn check(modules: &Modules) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (module, src) in modules {
        if module.is_empty() {
            continue; // lib.rs only declares and re-exports
        }
        let layer = layer_of(module);
        let Some(own_rank) = rank(layer) else {
            problems.push(format!(
                "`{module}` is in `{layer}`, which LAYERS does not place"
            ));
            continue;
        };
        let deps = graph.entry(module.clone()).or_default();
        for path in crate_paths(src) {
            // The longest prefix of the path that is a module, and what follows it.
            let Some(split) = (1..=path.len())
                .rev()
                .find(|&n| modules.contains_key(&path[..n].join("::")))
            else {
                problems.push(format!(
                    "`{module}` imports `crate::{}` from the crate root: import from the defining module",
                    path.join("::")
                ));
                continue;
            };
            let target = path[..split].join("::");
            if let Some(item) = path.get(split) {
                if !defines(&modules[&target], item) {
                    problems.push(format!(
                        "`{module}` imports `{item}` through `{target}`, which does not define it: import from the defining module"
                    ));
                }
            }
            if target == *module || target.is_empty() {
                continue;
            }
            let target_layer = layer_of(&target);
            match rank(target_layer) {
                None => problems.push(format!(
                    "`{module}` imports `{target}`, in `{target_layer}`, which LAYERS does not place"
                )),
                Some(r) if target_layer != layer && r <= own_rank => problems.push(format!(
                    "`{module}` ({layer}, rank {own_rank}) imports `{target}` ({target_layer}, rank {r}): against the layer order"
                )),
                Some(_) => {}
            }
            deps.insert(target);
        }
    }
    (graph, problems)
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
fn every_folder_is_found_and_placed_in_a_layer() {
    let modules = modules(false);
    assert!(
        modules.len() > 40,
        "the sources were found: {:?}",
        modules.keys()
    );
    let folders: BTreeSet<&str> = modules
        .keys()
        .filter(|m| m.contains("::"))
        .map(|m| layer_of(m))
        .collect();
    for folder in [
        "api",
        "exec",
        "net",
        "user",
        "windowing",
        "batch",
        "operator",
        "checkpoint",
    ] {
        assert!(
            folders.contains(folder),
            "folder `{folder}` found: {folders:?}"
        );
    }
    for layer in modules
        .keys()
        .map(|m| layer_of(m))
        .filter(|l| !l.is_empty())
    {
        assert!(rank(layer).is_some(), "`{layer}` has a place in LAYERS");
    }
}

#[test]
fn imports_follow_the_layer_order_and_name_the_defining_module() {
    let (_, problems) = check(&modules(false));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_module_graph_has_no_cycle() {
    let (graph, _) = check(&modules(false));
    assert!(graph.len() > 40, "the graph was built: {graph:?}");
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > 100,
        "the imports were found: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

/// The checks themselves: each rule catches what it is for.
#[test]
fn the_checks_catch_what_they_are_for() {
    let mut modules = Modules::new();
    modules.insert(String::new(), "pub use plan::Plan;".into());
    modules.insert(
        "plan".into(),
        "pub struct Plan;\nuse crate::error::Error;".into(),
    );
    modules.insert("error".into(), "pub enum Error {}".into());
    modules.insert("api".into(), "pub(crate) mod handle;".into());
    modules.insert(
        "api::handle".into(),
        "use crate::plan::Plan;\nuse crate::{error::Error, plan::{self, Plan as P}};".into(),
    );
    let (graph, problems) = check(&modules);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        graph["api::handle"],
        BTreeSet::from(["plan".to_owned(), "error".to_owned()])
    );

    // An import upward, one through the root, one through a module that does not define it,
    // and a folder with no layer.
    modules.insert(
        "error".into(),
        "pub enum Error {}\nuse crate::plan::Plan;".into(),
    );
    modules.insert("plan".into(), "pub struct Plan;\nuse crate::Plan;".into());
    modules.insert("api::other".into(), "use crate::api::handle::Plan;".into());
    modules.insert("misc::thing".into(), String::new());
    let (_, problems) = check(&modules);
    let all = problems.join("\n");
    assert!(
        all.contains("`error` (error, rank 9) imports `plan`"),
        "{all}"
    );
    assert!(
        all.contains("`plan` imports `crate::Plan` from the crate root"),
        "{all}"
    );
    assert!(
        all.contains("imports `Plan` through `api::handle`"),
        "{all}"
    );
    assert!(all.contains("`misc::thing` is in `misc`"), "{all}");
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

/// Type erasure and `unsafe` only where the crate's docs say why: the per-worker stream
/// table of `exec/compile.rs` (a timely stream borrows its worker's scope, so it can be
/// neither `Any` nor stored in the plan; see that module's docs), a panic's payload
/// (`job.rs`), timely's own `Box<dyn Any + Send>` handed through in `net/cluster.rs`, and
/// the one foreign call of `exec/trim.rs` (glibc's `malloc_trim`, added to this list with
/// that module, issue 27). Every file of every folder is read, binaries included.
#[test]
fn type_erasure_and_unsafe_stay_where_documented() {
    let allowed: &[(&str, &str, usize)] = &[
        ("exec::compile", "TypeId", 4),
        ("exec::compile", "unsafe", 2),
        // `#[allow(unsafe_code)] unsafe { libc::malloc_trim(0) }`: see `exec/trim.rs`.
        ("exec::trim", "unsafe", 2),
        ("job", "dyn std::any::Any", 1),
        ("job", "downcast", 2),
        ("job", "std::any::Any", 1),
        ("net::cluster", "dyn Any", 1),
        ("net::cluster", "std::any::Any", 1),
    ];
    let modules = modules(true);
    assert!(
        modules.keys().any(|m| m.starts_with("bin::")),
        "binaries read"
    );
    for (module, src) in &modules {
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
                .find(|(m, t, _)| m == module && *t == token)
                .map_or(0, |(_, _, n)| *n);
            assert!(
                found <= limit,
                "`{token}` appears {found} times in {module} (allowed: {limit})"
            );
        }
    }
}

/// The functions of `text` (name, first line, length in lines) longer than `limit` lines
/// without a `// Long:` reason in the comments above them. Test modules are left out.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_tests = false;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("mod tests")
            || trimmed.starts_with("mod ") && trimmed.contains("tests {")
        {
            in_tests = true;
        }
        let head = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .unwrap_or(trimmed);
        let head = head.strip_prefix("const ").unwrap_or(head);
        let Some(rest) = head.strip_prefix("fn ") else {
            continue;
        };
        if in_tests {
            continue;
        }
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        // The body: from the first `{` to the brace that closes it (comments and string
        // contents do not count; a declaration without a body ends at `;`).
        let (mut depth, mut started, mut end) = (0i64, false, None);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let code = strip_comments(l);
            let code = strip_literals(&code);
            if !started && !code.contains('{') && code.contains(';') {
                break;
            }
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            started |= code.contains('{');
            if started && depth <= 0 {
                end = Some(j);
                break;
            }
        }
        let Some(end) = end else { continue };
        let len = end - i + 1;
        let reason = lines[..i]
            .iter()
            .rev()
            .take_while(|l| {
                let t = l.trim_start();
                t.starts_with("//") || t.starts_with("#[")
            })
            .any(|l| l.trim_start().starts_with("// Long:"));
        if len > limit && !reason {
            out.push((name, i + 1, len));
        }
    }
    out
}

/// `s` with the contents of string and character literals removed (their braces do not count).
fn strip_literals(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' if matches!(chars.clone().nth(1), Some('\'')) || chars.peek() == Some(&'\\') => {
                // a character literal: 'x' or '\x'
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                }
                out.push_str("''");
            }
            _ => out.push(c),
        }
    }
    out
}

/// No function in `runtime/src` (binaries included) is longer than 80 lines unless a
/// `// Long:` comment above it says why.
#[test]
fn no_function_is_long_without_a_reason() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                collect(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    collect(&dir, &mut files);
    assert!(files.len() > 40, "the sources were found");
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (name, line, len) in long_functions(&text, 80) {
            long.push(format!("{}:{line} `{name}`: {len} lines", file.display()));
        }
    }
    assert!(
        long.is_empty(),
        "functions over 80 lines without a `// Long:` reason:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_finds_a_long_function_and_honours_a_reason() {
    let body = "    let x = 1;\n".repeat(85);
    let long = format!("fn big() {{\n{body}}}\n");
    assert_eq!(long_functions(&long, 80), vec![("big".to_owned(), 1, 87)]);
    let with_reason = format!("// Long: a reason.\n/// Docs.\nfn big() {{\n{body}}}\n");
    assert!(long_functions(&with_reason, 80).is_empty());
    let braces_in_strings = "fn small() {\n    let s = \"}}}\";\n    let c = '{';\n}\n";
    assert!(
        long_functions(braces_in_strings, 1).len() == 1,
        "a 4-line function counted whole"
    );
}
