//! Capability `identity.resolve` (label propose): decides which library
//! entity a recorded source release is for. It reads the release and the
//! candidate entities through `library`, scores them with [`matching`],
//! and records the answer through `drafts`: an `identity-match` that is
//! `resolved` when exactly one candidate clearly wins, or `ambiguous` plus
//! one `identity_ambiguous` decision for a human when several are too
//! close to call. It never guesses between close candidates and never
//! touches anything outside the domain store.

pub mod matching;

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::drafts::{DecisionDraft, IdentityMatch, IdentityMatchDraft, OpenDecision};
use capstan_sdk::contract::ops::queries::{ByKind, EntitiesList, EntityGet, ReleaseGet};
use capstan_sdk::contract::records::{Entity, SourceRelease};
use capstan_sdk::contract::status::{EntityKind, IdentityStatus};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use matching::{ReleaseFacts, Scored, Verdict};

/// One entity to consider.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    pub entity_id: String,
}

/// Input: the release, and optionally the only entities to consider.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveInput {
    /// The source release id (as `release.search` or the store recorded it).
    pub source_release_id: String,
    /// Entities to choose from; by default every entity in the library
    /// (only series when the release names a season or episode).
    #[serde(default)]
    pub candidates: Option<Vec<Candidate>>,
}

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// One entity clearly matches; the release now points at it.
    Resolved,
    /// Several match about equally well; a decision was opened.
    Ambiguous,
    /// No candidate matches; nothing was recorded.
    Unmatched,
}

/// Output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveOutput {
    pub status: Status,
    /// The entity, when resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity_id: Option<String>,
    /// The best candidate's score, 0 to 1.
    pub score: f64,
    /// The release's parsed fields and every candidate's score with the
    /// fields that matched.
    pub evidence: Value,
    /// The decision opened (or found already open) for an ambiguous match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
}

/// The capability.
pub struct IdentityResolve;

impl Capability for IdentityResolve {
    type Input = ResolveInput;
    type Output = ResolveOutput;

    const META: Meta = Meta {
        id: "identity.resolve",
        version: 1,
        label: Label::Propose,
        summary: "Match a source release to the movie or series in the library it is for",
        description: "Compares a recorded release's parsed title, year and season/episode markers with the library's entities (titles and original titles compared without case, punctuation, accents or leading articles; movie years within one year). Records the match when exactly one entity clearly wins; when several are too close, marks the release ambiguous and opens one decision for a human listing the candidates with their scores. A release must be resolved before it can be planned.",
        tags: &["identity", "policy.acquisition", "release", "match"],
        aliases: &[
            "resolve identity",
            "match release",
            "which movie is this",
            "identify",
            "识别身份",
            "匹配资源",
            "匹配影片",
            "这是哪部",
        ],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: ResolveInput) -> Result<Outcome<ResolveOutput>, Failure> {
        let release_id = input.source_release_id.trim();
        if release_id.is_empty() {
            return Err(Failure::InvalidInput("sourceReleaseId must not be empty".into()));
        }
        if input.candidates.as_ref().is_some_and(Vec::is_empty) {
            return Err(Failure::InvalidInput("candidates, when given, must name at least one entity".into()));
        }
        let release = domain::call::<ReleaseGet>(&ById::new(release_id))?;
        let facts = release_facts(&release)?;
        let entities = candidates(&facts, input.candidates.as_deref())?;
        let mut scored: Vec<Scored> = entities.iter().map(|e| matching::score(&facts, e)).collect();
        scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.entity_id.cmp(&b.entity_id)));
        let best = scored.first().map_or(0.0, |s| s.score);
        let mut evidence = json!({
            "release": { "id": release_id, "title": release.title, "parsed": facts },
            "candidates": scored,
            "rule": format!(
                "resolved when one candidate scores at least {} and leads the next by {}",
                matching::ACCEPT,
                matching::MARGIN
            ),
        });
        let output = match matching::decide(&scored) {
            Verdict::Resolved(i) => {
                let winner = &scored[i];
                evidence["matched"] = json!(winner.matched);
                domain::call::<IdentityMatchDraft>(&IdentityMatch {
                    release_id: release_id.to_string(),
                    entity_id: Some(winner.entity_id.clone()),
                    status: IdentityStatus::Resolved,
                    evidence: evidence.clone(),
                })?;
                ResolveOutput {
                    status: Status::Resolved,
                    entity_id: Some(winner.entity_id.clone()),
                    score: winner.score,
                    evidence,
                    decision_id: None,
                }
            }
            Verdict::Ambiguous(close) => {
                domain::call::<IdentityMatchDraft>(&IdentityMatch {
                    release_id: release_id.to_string(),
                    entity_id: None,
                    status: IdentityStatus::Ambiguous,
                    evidence: evidence.clone(),
                })?;
                let mut options: Vec<Value> = close.iter().map(|&i| choose(release_id, &scored[i])).collect();
                options.push(json!({ "id": "none", "label": "None of these", "action": "dismiss" }));
                let opened = domain::call::<DecisionDraft>(&OpenDecision {
                    kind: "identity_ambiguous".into(),
                    subject: Some(release_id.to_string()),
                    options: Value::Array(options),
                    evidence: evidence.clone(),
                    dedupe_key: format!("identity_ambiguous:{release_id}"),
                })?;
                let decision_id = Some(opened.decision.id().to_string());
                ResolveOutput { status: Status::Ambiguous, entity_id: None, score: best, evidence, decision_id }
            }
            Verdict::Unmatched => {
                ResolveOutput { status: Status::Unmatched, entity_id: None, score: best, evidence, decision_id: None }
            }
        };
        Ok(Outcome::Succeeded(output))
    }
}

/// The option of an ambiguous match that picks `candidate`: this
/// capability again, offered only that entity, which then clearly wins.
fn choose(release_id: &str, candidate: &Scored) -> Value {
    let label = match candidate.year {
        Some(year) => format!("{} ({year})", candidate.title),
        None => candidate.title.clone(),
    };
    json!({
        "id": format!("entity:{}", candidate.entity_id),
        "label": label,
        "capabilityId": "identity.resolve",
        "input": { "sourceReleaseId": release_id, "candidates": [{ "entityId": candidate.entity_id }] },
        "detail": { "entityId": candidate.entity_id, "title": candidate.title, "year": candidate.year, "score": candidate.score },
    })
}

/// The title, year and kind the release name states: the stored parsed
/// fields when the release was recorded with them, otherwise what the
/// release-name parser reads from its title.
fn release_facts(release: &SourceRelease) -> Result<ReleaseFacts, Failure> {
    let parsed = &release.parsed;
    let stored_title = parsed["title"].as_str().filter(|t| !t.trim().is_empty());
    let (title, year, season, episode) = match stored_title {
        Some(title) => (
            title.to_string(),
            parsed["year"].as_i64(),
            parsed["season"].as_i64(),
            parsed["kind"] == "episode" || parsed["episodes"].as_array().is_some_and(|e| !e.is_empty()),
        ),
        None => {
            let info = release_name::parse::inspect(&release.title);
            let title = info.title.clone().unwrap_or_default();
            let episode = info.kind == release_name::parse::Kind::Episode;
            (title, info.year.map(i64::from), info.season.map(i64::from), episode)
        }
    };
    if title.trim().is_empty() {
        return Err(Failure::InvalidInput(format!(
            "release {} has no title to match: {:?}",
            release.id, release.title
        )));
    }
    let kind = if season.is_some() || episode { EntityKind::Tv } else { EntityKind::Movie };
    Ok(ReleaseFacts { title, year, kind, season })
}

/// The entities to score: those named, or the library's (only series when
/// the release is clearly an episode or season).
fn candidates(facts: &ReleaseFacts, named: Option<&[Candidate]>) -> Result<Vec<Entity>, Failure> {
    if let Some(named) = named {
        return named.iter().map(|c| Ok(domain::call::<EntityGet>(&ById::new(&c.entity_id))?)).collect();
    }
    let kind = (facts.kind == EntityKind::Tv).then_some(EntityKind::Tv);
    Ok(domain::call::<EntitiesList>(&ByKind { kind, limit: 1000 })?)
}

capstan_sdk::export_capability!(IdentityResolve);
