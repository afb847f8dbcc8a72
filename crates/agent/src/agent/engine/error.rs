//! Why driving a run could not go on: the engine's one error type. What a
//! run's own rules end (a budget, an abort, a model that refuses) is not an
//! error but an outcome the run records; these are failures of what the
//! engine stands on — the stores, the session log, settings, the invoke
//! path — and the `runAgent` task tries again after them.

use crate::agent::providers::ProviderError;
use crate::agent::runs::RunError;
use crate::domain::DomainError;
use crate::ledger::LedgerError;
use crate::pipeline::InvokeError;
use crate::tasks::HandlerError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("setting {key}: {reason}")]
    Setting { key: String, reason: String },
    #[error("the settings could not be read: {0}")]
    Settings(#[from] crate::settings::SettingsError),
    #[error("the session log failed: {0}")]
    SessionLog(#[from] std::io::Error),
    #[error("{0}")]
    Provider(#[from] ProviderError),
    #[error("invoking {capability}: {source}")]
    Invoke { capability: String, source: InvokeError },
    #[error("{0}")]
    Compaction(String),
}

impl EngineError {
    /// A setting that could not be read or is not what it should be.
    pub fn setting(key: &str, reason: impl std::fmt::Display) -> EngineError {
        EngineError::Setting { key: key.to_string(), reason: reason.to_string() }
    }
}

/// The `runAgent` task tries again after any of these.
impl From<EngineError> for HandlerError {
    fn from(e: EngineError) -> HandlerError {
        HandlerError::Retry(e.to_string())
    }
}
