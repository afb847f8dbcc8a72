//! The effect table: which effect class each host interface belongs to, and
//! the static check that refuses a component whose actual imports exceed its
//! declared label or reach outside `capstan:host` and the WASI interfaces
//! language runtimes need (Rust's std, CPython, StarlingMonkey). This is the
//! one place that says what an import may do; host functions consult it
//! through [`EffectClass`].

pub use capstan_contract::effects::{EffectClass, HOST_INTERFACES, class_of, interface, interface_class};

/// WASI interfaces a component may import. They are linked with a context
/// that grants nothing: no preopened directories, no environment, no
/// arguments, stdio captured by the host, and sockets with every use
/// switched off (creating a TCP or UDP socket answers `access-denied`, a
/// name lookup `permanent-resolver-failure`). The socket interfaces are here because language
/// runtimes' C libraries import them whether or not the code opens a socket
/// (a componentize-py component always does); allowing the import grants
/// nothing. `wasi:http` is absent on purpose: a component that imports it
/// is refused with how to build without it ([`wasi_http_refusal`]).
pub(crate) const ALLOWED_WASI: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
];

/// Why a component importing `wasi:http` is refused, and how each toolchain
/// builds without it: outbound HTTP goes through `capstan:host/outbound-read`
/// and `outbound-write`, where the operator's service table, the grant and
/// the ledger apply.
pub(crate) fn wasi_http_refusal(name: &str) -> String {
    format!(
        "imports {name}; capabilities reach services only through capstan:host/outbound-read and \
         outbound-write. Build without wasi:http: componentize-js or jco componentize with \
         --disable http (and fetch-event), componentize-py without the wasi:http world, Rust \
         without a wasi:http client crate"
    )
}

/// What the static check learned about a component's imports.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The highest class among the imports (read when it imports nothing).
    pub class: EffectClass,
    /// Every import name, as the component states it.
    pub imports: Vec<String>,
}

/// Checks a component's import names against its declared label.
pub(crate) fn check_imports<'a>(
    names: impl IntoIterator<Item = &'a str>,
    label: EffectClass,
) -> Result<ImportSummary, String> {
    let mut class = EffectClass::Read;
    let mut imports = Vec::new();
    for name in names {
        imports.push(name.to_string());
        if let Some(c) = class_of(name) {
            class = class.max(c);
            if c > label {
                return Err(format!(
                    "imports {name} (class {c}) but is labelled {label}: its imports exceed its label"
                ));
            }
            continue;
        }
        let bare = name.split('@').next().unwrap_or(name);
        if bare.starts_with("wasi:http/") {
            return Err(wasi_http_refusal(name));
        }
        if !ALLOWED_WASI.contains(&bare) {
            return Err(format!("imports {name}, which Capstan does not offer to capabilities"));
        }
    }
    imports.sort();
    Ok(ImportSummary { class, imports })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_import_under_a_read_label_is_refused() {
        let err = check_imports(["capstan:host/files-write@0.1.0"], EffectClass::Read).unwrap_err();
        assert!(err.contains("exceed its label"), "{err}");
    }

    #[test]
    fn socket_imports_are_accepted_and_add_no_class() {
        let s = check_imports(
            ["wasi:sockets/tcp@0.2.6", "wasi:sockets/ip-name-lookup@0.2.0", "capstan:host/log@0.1.0"],
            EffectClass::Read,
        )
        .unwrap();
        assert_eq!(s.class, EffectClass::Read);
    }

    #[test]
    fn wasi_http_is_refused_with_how_to_build_without_it() {
        let err = check_imports(["wasi:http/outgoing-handler@0.2.3"], EffectClass::Execute).unwrap_err();
        assert!(err.contains("outbound-read") && err.contains("--disable http"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let other = check_imports(["wasi:keyvalue/store@0.2.0"], EffectClass::Execute).unwrap_err();
        assert!(other.contains("does not offer"), "{other}");
    }

    #[test]
    fn the_highest_import_decides_the_class() {
        let s = check_imports(
            ["capstan:host/log@0.1.0", "capstan:host/drafts@0.1.0", "wasi:io/streams@0.2.6"],
            EffectClass::Execute,
        )
        .unwrap();
        assert_eq!(s.class, EffectClass::Propose);
    }

    /// Each `wit/host` file's interface and the class its doc states.
    fn wit_classes() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/host");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let Some(name) = text.lines().find_map(|l| l.strip_prefix("interface ").and_then(|l| l.strip_suffix(" {")))
            else {
                continue; // imports.wit: a world, no interface
            };
            let class = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("/// Effect class: "))
                .unwrap_or_else(|| panic!("{} does not say its effect class", path.display()));
            let class = class.split(|c: char| !c.is_alphabetic()).next().unwrap().to_string();
            found.push((name.to_string(), class));
        }
        found.sort();
        found
    }

    #[test]
    fn each_wit_interface_states_the_class_the_table_gives_it() {
        let wit = wit_classes();
        for (name, class) in &wit {
            let table = class_of(&format!("capstan:host/{name}"))
                .unwrap_or_else(|| panic!("wit/host/{name}.wit has no row in HOST_INTERFACES"));
            // `types` has no effect ("none") and counts as read.
            let stated = if class == "none" { "read" } else { class.as_str() };
            assert_eq!(stated, table.as_str(), "wit/host/{name}.wit says {class}, HOST_INTERFACES says {table}");
        }
        let host_rows: Vec<&str> =
            HOST_INTERFACES.iter().filter_map(|(n, _)| n.strip_prefix("capstan:host/")).collect();
        for row in &host_rows {
            assert!(wit.iter().any(|(n, _)| n == row), "HOST_INTERFACES lists {row}, which no wit/host file defines");
        }
    }

    #[test]
    fn the_imports_world_follows_the_table() {
        let worlds = world_imports();
        let world: Vec<&str> = worlds
            .iter()
            .find(|(w, _)| w == "imports")
            .unwrap()
            .1
            .iter()
            .filter_map(|n| n.strip_prefix("capstan:host/"))
            .filter(|n| *n != "types") // used by the others, no effect
            .collect();
        let mut table: Vec<(&str, EffectClass)> = HOST_INTERFACES
            .iter()
            .filter_map(|(n, c)| n.strip_prefix("capstan:host/").map(|n| (n, *c)))
            .filter(|(n, _)| *n != "types")
            .collect();
        table.sort();
        assert_eq!(world, table.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "imports.wit against HOST_INTERFACES");
    }

    #[test]
    fn the_wit_actor_kinds_are_the_contracts() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/host/invocation.wit");
        let text = std::fs::read_to_string(path).unwrap();
        let cases = text.split("enum actor-kind {").nth(1).unwrap().split('}').next().unwrap();
        let wit: Vec<&str> = cases.split(',').map(str::trim).filter(|c| !c.is_empty()).collect();
        let contract: Vec<&str> = capstan_contract::ActorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(wit, contract, "wit/host/invocation.wit's actor-kind against the contract's ActorKind");
    }

    /// The host interfaces each world of `wit/` imports, by world name.
    fn world_imports() -> Vec<(String, Vec<String>)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let mut resolve = wit_parser::Resolve::new();
        resolve.push_dir(root.join("host")).unwrap();
        resolve.push_dir(root.join("capability")).unwrap();
        resolve
            .worlds
            .iter()
            .map(|(_, world)| {
                let mut names: Vec<String> = world
                    .imports
                    .iter()
                    .filter_map(|(key, _)| match key {
                        wit_parser::WorldKey::Interface(id) => resolve.id_of(*id),
                        wit_parser::WorldKey::Name(_) => None,
                    })
                    .map(|n| n.split('@').next().unwrap().to_string())
                    .collect();
                names.sort();
                (world.name.clone(), names)
            })
            .collect()
    }

    #[test]
    fn each_published_world_imports_only_what_its_class_allows() {
        let worlds = world_imports();
        let class_of_world = |name: &str| {
            let (_, names) = worlds.iter().find(|(w, _)| w == name).unwrap_or_else(|| panic!("no world {name}"));
            let classes: Vec<EffectClass> = names.iter().map(|n| class_of(n).expect("a host interface")).collect();
            (classes.into_iter().max().unwrap(), names.clone())
        };
        let (read, read_names) = class_of_world("read-capability");
        assert_eq!(read, EffectClass::Read);
        assert_eq!(class_of_world("propose-capability").0, EffectClass::Propose);
        let (execute, all) = class_of_world("execute-capability");
        assert_eq!(execute, EffectClass::Execute);
        assert_eq!(class_of_world("verified-execute-capability").1, all);
        // Each world offers every interface its class opens, so an author
        // picks a world by label alone.
        let table: Vec<&str> = HOST_INTERFACES.iter().map(|(n, _)| *n).collect();
        for name in &table {
            assert!(all.iter().any(|n| n == name), "execute-capability lacks {name}");
            if class_of(name) == Some(EffectClass::Read) {
                assert!(read_names.iter().any(|n| n == name), "read-capability lacks {name}");
            }
        }
        assert_eq!(class_of_world("plain-capability").1, all);
    }
}
