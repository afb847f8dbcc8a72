//! The statuses and kinds domain records carry. Each is an enum whose
//! names are what the database stores and what JSON carries; code compares
//! the enums, never the text.

use std::fmt;
use std::str::FromStr;

/// A status or kind text that is none of the known names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named (`plan status`, `organize mode`, ...).
    pub what: &'static str,
    pub text: String,
    pub known: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}; known: {}", self.what, self.text, self.known.join(", "))
    }
}

impl std::error::Error for UnknownName {}

/// A closed set of names: a status or a kind.
pub trait Named: Sized + Copy + 'static {
    /// Every name, in order.
    const NAMES: &'static [&'static str];
    fn as_str(self) -> &'static str;
    /// The value named `text`, or a refusal listing the names.
    fn parse(text: &str) -> Result<Self, UnknownName>;
}

/// Declares a closed set of names: the enum, its text both ways, every
/// value and every name.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident ($what:literal) { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
        // Every name is its variant in snake case (a test holds serde's
        // names to `as_str`); OpenAPI schemas read this, not per-variant
        // renames.
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in the order the record moves through them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every name, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The name the database stores and JSON carries.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value named `text`, or a refusal listing the names.
            pub fn parse(text: &str) -> Result<$name, UnknownName> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName { what: $what, text: text.to_string(), known: Self::NAMES }),
                }
            }
        }

        impl Named for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
            fn parse(text: &str) -> Result<$name, UnknownName> {
                $name::parse(text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(text: &str) -> Result<$name, UnknownName> {
                $name::parse(text)
            }
        }

        // What a database column's text is read through.
        impl TryFrom<String> for $name {
            type Error = UnknownName;
            fn try_from(text: String) -> Result<$name, UnknownName> {
                $name::parse(&text)
            }
        }

    };
}

names! {
    /// What an entity is.
    EntityKind ("entity kind") {
        Movie = "movie",
        Tv = "tv",
    }
}

names! {
    /// What is wanted for a title: wanted → reserved (a plan holds it) →
    /// satisfied (an organization put it in the library), or unwanted.
    SlotStatus ("slot status") {
        Wanted = "wanted",
        Reserved = "reserved",
        Satisfied = "satisfied",
        Unwanted = "unwanted",
    }
}

names! {
    /// Where an episode of a wanted series stands, read against today's
    /// date: in the library (`have`), aired and not yet had (`missing`),
    /// not aired yet or without a date (`not-aired`), or not wanted at all
    /// (`unmonitored`, whatever else holds).
    EpisodeState ("episode state") {
        Have = "have",
        Missing = "missing",
        NotAired = "not-aired",
        Unmonitored = "unmonitored",
    }
}

names! {
    /// A plan: draft → reserved → submitted, or failed / cancelled.
    PlanStatus ("plan status") {
        Draft = "draft",
        Reserved = "reserved",
        Submitted = "submitted",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

names! {
    /// What a download can be, as mapped from the client's states.
    DownloadStatus ("download status") {
        Queued = "queued",
        Downloading = "downloading",
        Stalled = "stalled",
        Paused = "paused",
        /// The client no longer knows the torrent.
        Missing = "missing",
        Failed = "failed",
        Completed = "completed",
        Importing = "importing",
        Imported = "imported",
        Removed = "removed",
    }
}

names! {
    /// Putting a download into the library: planned → running → succeeded
    /// or failed.
    OrganizationStatus ("organization status") {
        Planned = "planned",
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
    }
}

names! {
    /// A question for a human: open → investigating → awaiting_user →
    /// resolved | dismissed (the last two final).
    DecisionStatus ("decision status") {
        Open = "open",
        Investigating = "investigating",
        AwaitingUser = "awaiting_user",
        Resolved = "resolved",
        Dismissed = "dismissed",
    }
}

impl DecisionStatus {
    /// Whether the decision is answered and stays so.
    pub fn is_final(self) -> bool {
        matches!(self, DecisionStatus::Resolved | DecisionStatus::Dismissed)
    }
}

names! {
    /// A human's say on one plan: pending → approved | rejected; an
    /// approved one is consumed by the call it let through; a pending one
    /// past its expiry is expired; a pending or approved one can be
    /// revoked.
    ApprovalStatus ("approval status") {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
        Consumed = "consumed",
        Expired = "expired",
        Revoked = "revoked",
    }
}

impl ApprovalStatus {
    /// Whether the approval may still let a call through (pending or
    /// approved), expiry and staleness aside.
    pub fn is_open(self) -> bool {
        matches!(self, ApprovalStatus::Pending | ApprovalStatus::Approved)
    }

    /// Whether a human said no (rejected, or took an approval back).
    pub fn is_refusal(self) -> bool {
        matches!(self, ApprovalStatus::Rejected | ApprovalStatus::Revoked)
    }
}

names! {
    /// Whom a release is for: not yet known, one title, or several
    /// candidates a human must choose between.
    IdentityStatus ("identity status") {
        Unresolved = "unresolved",
        Resolved = "resolved",
        Ambiguous = "ambiguous",
    }
}

names! {
    /// How an organization places files in the library.
    OrganizeMode ("organize mode") {
        /// A second name for the same file: no extra space, the download
        /// keeps seeding. Falls back to a verified copy across devices.
        Hardlink = "hardlink",
        /// An independent copy, verified by SHA-256.
        Copy = "copy",
        /// The file leaves the downloads folder (seeding stops).
        Move = "move",
    }
}

names! {
    /// A stored document: a frozen plan, a report, or evidence.
    ArtifactKind ("artifact kind") {
        Plan = "plan",
        Report = "report",
        Evidence = "evidence",
    }
}

names! {
    /// A durable task: queued → running → succeeded, or failed (to be tried
    /// again), dead (no attempts left) or cancelled.
    TaskStatus ("task status") {
        Queued = "queued",
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Dead = "dead",
        Cancelled = "cancelled",
    }
}

names! {
    /// A policy revision: a draft, the published one, or one a later
    /// publication superseded.
    PolicyStatus ("policy status") {
        Draft = "draft",
        Published = "published",
        Superseded = "superseded",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both_ways<T: Named + serde::Serialize + serde::de::DeserializeOwned + PartialEq + fmt::Debug>(all: &[T]) {
        for value in all {
            assert_eq!(T::parse(value.as_str()).as_ref(), Ok(value));
            assert_eq!(serde_json::to_value(value).unwrap(), value.as_str(), "serde's name of {value:?}");
            assert_eq!(&serde_json::from_value::<T>(value.as_str().into()).unwrap(), value);
        }
    }

    #[test]
    fn names_go_both_ways_and_json_carries_the_name() {
        both_ways(EntityKind::ALL);
        both_ways(SlotStatus::ALL);
        both_ways(PlanStatus::ALL);
        both_ways(DownloadStatus::ALL);
        both_ways(OrganizationStatus::ALL);
        both_ways(DecisionStatus::ALL);
        both_ways(IdentityStatus::ALL);
        both_ways(OrganizeMode::ALL);
        both_ways(ArtifactKind::ALL);
        both_ways(TaskStatus::ALL);
        both_ways(PolicyStatus::ALL);
        let refused = PlanStatus::parse("done").unwrap_err().to_string();
        assert_eq!(refused, "unknown plan status \"done\"; known: draft, reserved, submitted, failed, cancelled");
    }
}
