//! The effect table: which effect class each host interface belongs to, and
//! the static check that refuses a component whose actual imports exceed its
//! declared label or reach outside `capstan:host` and the WASI interfaces
//! Rust's standard library needs. This is the one place that says what an
//! import may do; host functions consult it through [`EffectClass`].

use std::fmt;

use serde::{Deserialize, Serialize};

/// Effect classes, ordered: read < preview < propose < execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EffectClass {
    Read,
    Preview,
    Propose,
    Execute,
}

impl EffectClass {
    pub fn as_str(self) -> &'static str {
        match self {
            EffectClass::Read => "read",
            EffectClass::Preview => "preview",
            EffectClass::Propose => "propose",
            EffectClass::Execute => "execute",
        }
    }

    /// Parses `read | preview | propose | execute`.
    pub fn parse(text: &str) -> Option<EffectClass> {
        match text {
            "read" => Some(EffectClass::Read),
            "preview" => Some(EffectClass::Preview),
            "propose" => Some(EffectClass::Propose),
            "execute" => Some(EffectClass::Execute),
            _ => None,
        }
    }

    /// Whether an import of this class is an effect: it changes something,
    /// so a call that traps after it may have done something.
    pub fn is_effect(self) -> bool {
        self >= EffectClass::Propose
    }
}

impl fmt::Display for EffectClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The host interfaces and their classes. `types` interfaces carry only
/// type definitions and have no effect; they count as read.
pub const HOST_INTERFACES: &[(&str, EffectClass)] = &[
    ("capstan:host/types", EffectClass::Read),
    ("capstan:host/log", EffectClass::Read),
    ("capstan:host/invocation", EffectClass::Read),
    ("capstan:host/outbound-read", EffectClass::Read),
    ("capstan:host/files-read", EffectClass::Read),
    ("capstan:host/library", EffectClass::Read),
    ("capstan:host/drafts", EffectClass::Propose),
    ("capstan:host/records", EffectClass::Execute),
    ("capstan:host/outbound-write", EffectClass::Execute),
    ("capstan:host/files-write", EffectClass::Execute),
    ("capstan:capability/types", EffectClass::Read),
];

/// WASI interfaces a Rust std component may import. They are linked with a
/// context that grants nothing: no preopened directories, no environment,
/// no arguments, stdio captured by the host. Sockets and HTTP are absent on
/// purpose; a component that imports them is refused.
pub const ALLOWED_WASI: &[&str] = &[
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
];

/// The class of the host interface `name` (versions ignored), or `None` when
/// it is no host interface.
pub fn class_of(name: &str) -> Option<EffectClass> {
    let bare = name.split('@').next().unwrap_or(name);
    HOST_INTERFACES.iter().find(|(n, _)| *n == bare).map(|(_, c)| *c)
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
pub fn check_imports<'a>(
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
    fn sockets_are_not_offered() {
        let err = check_imports(["wasi:sockets/tcp@0.2.6"], EffectClass::Execute).unwrap_err();
        assert!(err.contains("does not offer"), "{err}");
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
}
