//! Checks the layer map at the top of `lib.rs` against the sources: every
//! module has a layer, and every `crate::` path in code points to a lower
//! layer. A failure names the file, the line and the import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module → layer number, read from the `//! N. `a`, `b` — ...` lines.
fn layer_map(lib: &str) -> BTreeMap<String, u32> {
    let mut layers = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("//! ") else { continue };
        let Some((number, rest)) = rest.split_once(". ") else { continue };
        let Ok(number) = number.trim().parse::<u32>() else { continue };
        let names = rest.split(" — ").next().unwrap_or_default();
        for name in names.split(',') {
            let name = name.trim().trim_matches('`');
            if !name.is_empty() {
                layers.insert(name.to_string(), number);
            }
        }
    }
    layers
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

fn ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The first names of the items of a `{a, b::{c, d}, e}` group (`text`
/// starts after its opening brace): `a`, `b`, `e`.
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && !c.is_whitespace() => {
                at_item = false;
                let name = ident(&text[i..]);
                if !name.is_empty() {
                    heads.push(name);
                }
            }
            _ => {}
        }
    }
    heads
}

/// The top-level modules `code` names through `crate::`, with the offset
/// of each, including those in a `crate::{a, b::{c}}` group (which may run
/// over several lines).
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `wasm_crate::` and the like
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => found.extend(group_heads(group).into_iter().map(|n| (at, n))),
            None => found.push((at, ident(rest))),
        }
    }
    found
}

/// The top-level modules `code` reaches through a chain of `super::` that
/// climbs to the crate root from a module `depth` levels down
/// (`host/src/a/b.rs` is 2).
fn super_paths(code: &str, depth: usize) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = code[from..].find("super::") {
        let at = from + offset;
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = after;
        }
        from = at + climbs * "super::".len();
        let preceded = code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if preceded || climbs < depth {
            continue;
        }
        match rest.strip_prefix('{') {
            Some(group) => found.extend(group_heads(group).into_iter().map(|n| (at, n))),
            None => found.push((at, ident(rest))),
        }
    }
    found
}

/// The code of a file: every line without what follows `//` (comments,
/// doc comments).
fn code_of(text: &str) -> String {
    text.lines().map(|line| line.find("//").map_or(line, |at| &line[..at])).collect::<Vec<_>>().join("\n")
}

#[test]
fn layers_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let layers = layer_map(&lib);
    // Names the crate root re-exports stand for their module (`crate::Config`).
    let reexports: BTreeMap<String, String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub use ")?.strip_suffix(';')?.split_once("::"))
        .map(|(module, name)| (name.rsplit("::").next().unwrap_or(name).to_string(), module.to_string()))
        .collect();
    // The crates whose modules are layers of the map (the sandbox's and the
    // configuration's crates are one module each, whose imports the
    // compiler already keeps to the crates below them).
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates").canonicalize().unwrap();
    let workspace = crates.parent().unwrap().to_path_buf();
    let src = src.canonicalize().unwrap();
    let roots: Vec<PathBuf> = std::iter::once(src.clone())
        .chain(["foundation", "records", "domain", "agent"].map(|name| crates.join(name).join("src")))
        .collect();
    let declared: Vec<String> = roots
        .iter()
        .flat_map(|root| {
            std::fs::read_to_string(root.join("lib.rs")).unwrap().lines().map(str::to_string).collect::<Vec<_>>()
        })
        .filter_map(|l| {
            let l = l.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
            l.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')).map(str::to_string)
        })
        .filter(|m| m != "layers")
        .collect();
    let unplaced: Vec<&String> = declared.iter().filter(|m| !layers.contains_key(*m)).collect();
    assert!(unplaced.is_empty(), "modules missing from lib.rs's layer map: {unplaced:?}");
    // Crates that are one module each, under the module's name.
    let whole_crates = ["config", "runtime"];
    let undeclared: Vec<&String> =
        layers.keys().filter(|m| !declared.contains(m) && !whole_crates.contains(&m.as_str())).collect();
    assert!(undeclared.is_empty(), "the layer map names modules no crate declares: {undeclared:?}");

    let mut files = Vec::new();
    for root in &roots {
        let mut found = Vec::new();
        rust_files(root, &mut found);
        files.extend(found.into_iter().map(|file| (root.clone(), file)));
    }
    let mut wrong = Vec::new();
    for (root, file) in files {
        let relative = file.strip_prefix(&root).unwrap();
        let top = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let module = top.trim_end_matches(".rs");
        let Some(&own) = layers.get(module) else { continue }; // lib.rs, main.rs, this file
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        // How far down the file's module is: `a.rs` and `a/mod.rs` are 1.
        let depth = relative.components().count() - usize::from(relative.ends_with("mod.rs"));
        for (at, target) in crate_paths(&code).into_iter().chain(super_paths(&code, depth)) {
            let target = reexports.get(&target).cloned().unwrap_or(target);
            if target == module {
                continue;
            }
            match layers.get(&target) {
                Some(&to) if to < own => {}
                Some(&to) => wrong.push(format!(
                    "{}:{}: `crate::{target}` points {} from {module} (layer {own}) to {target} (layer {to})",
                    file.strip_prefix(&workspace).unwrap_or(&file).display(),
                    code[..at].matches('\n').count() + 1,
                    if to == own { "sideways" } else { "up" }
                )),
                // Not a module of the map: an item of the crate root.
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layer map:\n{}", wrong.join("\n"));
}

#[test]
fn crate_paths_are_found_in_paths_and_groups() {
    let names = |code: &str| crate_paths(code).into_iter().map(|(_, n)| n).collect::<Vec<_>>();
    assert_eq!(names("use crate::store::{Db, now_ms};"), ["store"]);
    assert_eq!(names("use crate::{\n    audit::Audit,\n    tasks,\n};"), ["audit", "tasks"]);
    assert_eq!(names("use crate::{a::{B, c::D}, tasks};"), ["a", "tasks"], "nested groups");
    assert_eq!(names("let x = crate::pipeline::canonical(v) + crate::text::x;"), ["pipeline", "text"]);
    assert!(names("wasm_crate::thing").is_empty());
    assert_eq!(code_of("use a; // crate::agent\n/// crate::http"), "use a; \n");
}

#[test]
fn super_chains_that_reach_the_root_are_found() {
    let names = |code: &str, depth| super_paths(code, depth).into_iter().map(|(_, n)| n).collect::<Vec<_>>();
    // From a file three levels down (`host/src/a/b/c.rs`).
    assert_eq!(names("use super::super::super::domain::Domain;", 3), ["domain"]);
    assert!(names("use super::super::effects::X;", 3).is_empty(), "still inside the top module");
    assert_eq!(names("use super::{ledger, tasks::T};", 1), ["ledger", "tasks"]);
}

/// The task queue and the authorisation records are built once, by the
/// domain store the composition root builds (`crates/domain/src/domain`),
/// and handed out from there: a handle built elsewhere is a second way in
/// that the composition root does not see. The one exception is
/// `capstan tasks`, a one-shot command that opens the database alone.
#[test]
fn tasks_and_authz_are_built_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // This file names them in its search.
    let allowed = ["crates/domain/src/domain/mod.rs", "host/src/cli/worker.rs", "host/src/layers.rs"];
    let mut files = Vec::new();
    for dir in ["host/src", "crates"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let shown = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        // The stores' own files build themselves (their unit tests).
        if shown.starts_with("crates/records/src/tasks/") || shown.starts_with("crates/records/src/authz/") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in code.lines().enumerate() {
            if (line.contains("Tasks::new(") || line.contains("Authz::new(")) && !allowed.contains(&shown.as_str()) {
                found.push(format!("{shown}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "built outside the domain store; take it from `Domain::tasks`/`Domain::authz`:\n{}",
        found.join("\n")
    );
}
