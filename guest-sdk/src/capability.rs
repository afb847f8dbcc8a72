//! The typed face of a capability: [`Capability`], its descriptor [`Meta`],
//! and the glue that turns typed results into the WIT export types.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::capstan::capability::types as wit;

/// The declared effect label; see the WIT `label` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    Read,
    Preview,
    Propose,
    Execute,
}

/// What the host may do with an uncertain call; see the WIT `replay-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    Safe,
    Verify,
    Never,
}

/// The static part of a descriptor. Schemas are generated from the types.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    pub id: &'static str,
    pub version: u32,
    pub label: Label,
    pub summary: &'static str,
    pub description: &'static str,
    pub tags: &'static [&'static str],
    pub aliases: &'static [&'static str],
    pub replay: Replay,
    pub services: &'static [&'static str],
}

/// A normal result: finished, or accepted asynchronous work.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Succeeded(T),
    Pending(T),
}

/// Why a call produced no outcome; mirrors the WIT `failure` variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    InvalidInput(String),
    NotFound(String),
    Conflict(String),
    Denied(String),
    Unavailable(String),
    Internal(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, message) = match self {
            Failure::InvalidInput(m) => ("invalid input", m),
            Failure::NotFound(m) => ("not found", m),
            Failure::Conflict(m) => ("conflict", m),
            Failure::Denied(m) => ("denied", m),
            Failure::Unavailable(m) => ("unavailable", m),
            Failure::Internal(m) => ("internal", m),
        };
        write!(f, "{kind}: {message}")
    }
}

impl From<crate::HostError> for Failure {
    /// Host errors map onto the closest failure so `?` works in capabilities.
    fn from(err: crate::HostError) -> Self {
        use crate::HostError as H;
        match err {
            H::Denied(m) => Failure::Denied(m),
            H::Invalid(m) => Failure::InvalidInput(m),
            H::NotFound(m) => Failure::NotFound(m),
            H::Unavailable(m) => Failure::Unavailable(m),
            H::TooLarge(m) => Failure::Unavailable(m),
            H::Conflict(m) => Failure::Conflict(m),
            H::Internal(m) => Failure::Internal(m),
        }
    }
}

/// What `verify` found out from real state.
#[derive(Debug, Clone, PartialEq)]
pub enum Verification<T> {
    Done(T),
    NotDone,
    CannotTell(String),
}

/// A capability written as a typed function.
pub trait Capability {
    /// Input, deserialised from the JSON the host passes; its JSON Schema is
    /// the descriptor's input schema.
    type Input: DeserializeOwned + schemars::JsonSchema;
    /// Output, serialised to JSON; its JSON Schema is the output schema.
    type Output: Serialize + schemars::JsonSchema;

    /// The descriptor's static part.
    const META: Meta;

    /// Does the work.
    fn invoke(input: Self::Input) -> Result<Outcome<Self::Output>, Failure>;

    /// Warms up state every call would otherwise rebuild (lazy tables,
    /// compiled patterns). The host runs it once at load time and starts
    /// every call from the resulting memory snapshot. It must not call host
    /// imports. The default does nothing.
    fn preinit() {}

    /// Says from real state whether `invoke(input)` took effect. The default
    /// cannot tell, which is right for capabilities without side effects.
    fn verify(_input: Self::Input) -> Result<Verification<Self::Output>, Failure> {
        Ok(Verification::CannotTell(format!("{} does not implement verify", Self::META.id)))
    }
}

fn schema_text<T: schemars::JsonSchema>() -> String {
    serde_json::to_string(&schemars::schema_for!(T)).unwrap_or_else(|_| "{}".to_string())
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn parse_input<C: Capability>(input: &str) -> Result<C::Input, wit::Failure> {
    serde_json::from_str(input)
        .map_err(|e| wit::Failure::InvalidInput(format!("input does not fit {}: {e}", C::META.id)))
}

fn output_text<T: Serialize>(value: &T) -> Result<String, wit::Failure> {
    serde_json::to_string(value).map_err(|e| wit::Failure::Internal(format!("output: {e}")))
}

impl From<Failure> for wit::Failure {
    fn from(f: Failure) -> Self {
        match f {
            Failure::InvalidInput(m) => wit::Failure::InvalidInput(m),
            Failure::NotFound(m) => wit::Failure::NotFound(m),
            Failure::Conflict(m) => wit::Failure::Conflict(m),
            Failure::Denied(m) => wit::Failure::Denied(m),
            Failure::Unavailable(m) => wit::Failure::Unavailable(m),
            Failure::Internal(m) => wit::Failure::Internal(m),
        }
    }
}

#[doc(hidden)]
pub fn __describe<C: Capability>() -> wit::Descriptor {
    let m = C::META;
    wit::Descriptor {
        id: m.id.to_string(),
        version: m.version,
        label: match m.label {
            Label::Read => wit::Label::Read,
            Label::Preview => wit::Label::Preview,
            Label::Propose => wit::Label::Propose,
            Label::Execute => wit::Label::Execute,
        },
        summary: m.summary.to_string(),
        description: m.description.to_string(),
        tags: strings(m.tags),
        aliases: strings(m.aliases),
        input_schema: schema_text::<C::Input>(),
        output_schema: schema_text::<C::Output>(),
        replay: match m.replay {
            Replay::Safe => wit::ReplayPolicy::Safe,
            Replay::Verify => wit::ReplayPolicy::Verify,
            Replay::Never => wit::ReplayPolicy::Never,
        },
        services: strings(m.services),
    }
}

#[doc(hidden)]
pub fn __invoke<C: Capability>(input: &str) -> Result<wit::Outcome, wit::Failure> {
    let input = parse_input::<C>(input)?;
    match C::invoke(input)? {
        Outcome::Succeeded(out) => {
            Ok(wit::Outcome { status: wit::OutcomeStatus::Succeeded, output: output_text(&out)? })
        }
        Outcome::Pending(out) => Ok(wit::Outcome { status: wit::OutcomeStatus::Pending, output: output_text(&out)? }),
    }
}

#[doc(hidden)]
pub fn __verify<C: Capability>(input: &str) -> Result<wit::Verification, wit::Failure> {
    let input = parse_input::<C>(input)?;
    Ok(match C::verify(input)? {
        Verification::Done(out) => wit::Verification::Done(output_text(&out)?),
        Verification::NotDone => wit::Verification::NotDone,
        Verification::CannotTell(why) => wit::Verification::CannotTell(why),
    })
}
