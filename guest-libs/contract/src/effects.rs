//! The effect table: which effect class each `capstan:host` interface
//! belongs to. The host's loader checks a component's imports against it,
//! every host import asks it before doing anything, and the SDK's mock host
//! enforces the same classes in capability authors' unit tests.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Effect classes, ordered: read < preview < propose < execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum EffectClass {
    Read,
    Preview,
    Propose,
    Execute,
}

impl EffectClass {
    /// Every class, lowest first.
    pub const ALL: &'static [EffectClass] =
        &[EffectClass::Read, EffectClass::Preview, EffectClass::Propose, EffectClass::Execute];

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
        EffectClass::ALL.iter().copied().find(|c| c.as_str() == text)
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

/// The names of the host interfaces, as components import them (without
/// the version).
pub mod interface {
    pub const TYPES: &str = "capstan:host/types";
    pub const LOG: &str = "capstan:host/log";
    pub const INVOCATION: &str = "capstan:host/invocation";
    pub const OUTBOUND_READ: &str = "capstan:host/outbound-read";
    pub const FILES_READ: &str = "capstan:host/files-read";
    pub const LIBRARY: &str = "capstan:host/library";
    pub const DRAFTS: &str = "capstan:host/drafts";
    pub const RECORDS: &str = "capstan:host/records";
    pub const OUTBOUND_WRITE: &str = "capstan:host/outbound-write";
    pub const FILES_WRITE: &str = "capstan:host/files-write";
    pub const COMMANDS_READ: &str = "capstan:host/commands-read";
    pub const COMMANDS: &str = "capstan:host/commands";
    pub const CAPABILITY_TYPES: &str = "capstan:capability/types";
}

/// The host interfaces and their classes: the one place an interface's
/// class is said. `types` interfaces carry only type definitions and have
/// no effect; they count as read.
pub const HOST_INTERFACES: &[(&str, EffectClass)] = &[
    (interface::TYPES, EffectClass::Read),
    (interface::LOG, EffectClass::Read),
    (interface::INVOCATION, EffectClass::Read),
    (interface::OUTBOUND_READ, EffectClass::Read),
    (interface::FILES_READ, EffectClass::Read),
    (interface::LIBRARY, EffectClass::Read),
    (interface::DRAFTS, EffectClass::Propose),
    (interface::RECORDS, EffectClass::Execute),
    (interface::OUTBOUND_WRITE, EffectClass::Execute),
    (interface::FILES_WRITE, EffectClass::Execute),
    (interface::COMMANDS_READ, EffectClass::Read),
    (interface::COMMANDS, EffectClass::Execute),
    (interface::CAPABILITY_TYPES, EffectClass::Read),
];

/// The class of the host interface `name` (versions ignored), or `None` when
/// it is no host interface.
pub fn class_of(name: &str) -> Option<EffectClass> {
    let bare = name.split('@').next().unwrap_or(name);
    HOST_INTERFACES.iter().find(|(n, _)| *n == bare).map(|(_, c)| *c)
}

/// The class of host interface `name`, one of the [`interface`] names. A
/// name missing from the table would be a bug; it is treated as the highest
/// class, so the mistake can only refuse.
pub fn interface_class(name: &str) -> EffectClass {
    class_of(name).unwrap_or(EffectClass::Execute)
}
