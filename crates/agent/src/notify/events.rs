//! What of the event log a person is told, in words: a release handed to
//! the client (`grabbed`), files put in the library (`imported`, or
//! `upgraded` when they replaced what it held), a download that failed or
//! stalled, a decision waiting for a person, an agent run that ended. Each
//! is read with the records it names (the title, the release), and the
//! lot becomes one message: a title that counts them and a line each.

use serde_json::{Value, json};

use crate::events::Event;
use crate::pipeline::Services;

/// Most lines one message lists; the rest are counted.
const MAX_LINES: usize = 30;

/// The event kinds a person may choose, as the setting names them.
pub const KINDS: &[&str] = &["grabbed", "imported", "upgraded", "download-failed", "decision-waiting", "run-finished"];

/// One thing to tell, as `capstan_notify::Event` takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    pub kind: &'static str,
    pub title: String,
    pub detail: Option<String>,
    pub at: i64,
}

impl Told {
    fn line(&self) -> String {
        let heading = match self.kind {
            "grabbed" => "Grabbed",
            "imported" => "Imported",
            "upgraded" => "Upgraded",
            "download-failed" => "Download failed",
            "decision-waiting" => "Waiting for you",
            _ => "Agent run finished",
        };
        match &self.detail {
            Some(detail) => format!("{heading}: {} ({detail})", self.title),
            None => format!("{heading}: {}", self.title),
        }
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The name of the title a slot wants: `Dune (2021)`, `Shōgun (2024) season 1`.
async fn slot_title(svc: &Services, slot_id: &str) -> Option<String> {
    let slot = svc.domain.slot(slot_id).await.ok()?;
    let entity = svc.domain.entity(&slot.entity_id).await.ok()?;
    let year = entity.year.map(|y| format!(" ({y})")).unwrap_or_default();
    let season = slot.season.map(|s| format!(" season {s}")).unwrap_or_default();
    Some(format!("{}{year}{season}", entity.title))
}

/// The title a download is fetched for, from its plan.
async fn download_title(svc: &Services, download_id: &str) -> Option<String> {
    let download = svc.domain.download(download_id).await.ok()?;
    let plan = svc.domain.plan(&download.plan_id).await.ok()?;
    slot_title(svc, &plan.slot_id).await
}

/// What a decision is about, in words: the title of the download, import
/// or plan it asks about, or the release whose identity it asks.
async fn decision_subject(svc: &Services, kind: &str, subject: &str) -> Option<String> {
    match kind {
        "download_failed" | "download_stalled" => download_title(svc, subject).await,
        "import_failed" => {
            let organization = svc.domain.organization(subject).await.ok()?;
            download_title(svc, &organization.download_task_id).await
        }
        "download_submit_failed" => slot_title(svc, &svc.domain.plan(subject).await.ok()?.slot_id).await,
        "identity_ambiguous" => Some(svc.domain.release(subject).await.ok()?.title),
        _ => None,
    }
}

/// What `event` tells a person, if anything.
pub async fn told(svc: &Services, event: &Event) -> Option<Told> {
    let p = &event.payload;
    let (kind, title, detail) = match event.kind.as_str() {
        "plan.changed" if p["status"] == "submitted" => {
            let plan = svc.domain.plan(p["planId"].as_str()?).await.ok()?;
            ("grabbed", slot_title(svc, &plan.slot_id).await?, text(&plan.payload, "title"))
        }
        "organization.changed" if p["status"] == "succeeded" => {
            let organization = svc.domain.organization(p["organizationId"].as_str()?).await.ok()?;
            let kind = if organization.replaces { "upgraded" } else { "imported" };
            let title = slot_title(svc, p["slotId"].as_str()?).await?;
            let files = organization.items.as_array().map_or(0, Vec::len);
            (kind, title, Some(if files == 1 { "1 file".into() } else { format!("{files} files") }))
        }
        "decision.created" | "decision.updated" => {
            let decision = svc.domain.decision(p["decisionId"].as_str()?).await.ok()?;
            let created = event.kind == "decision.created";
            let waiting = decision.status.as_str() == "awaiting_user";
            if !created && !waiting {
                return None;
            }
            let failed = matches!(decision.kind.as_str(), "download_failed" | "download_stalled");
            let about = match decision.subject.as_deref() {
                Some(subject) => decision_subject(svc, &decision.kind, subject).await,
                None => None,
            };
            let problem = decision.evidence.get("problem").and_then(Value::as_str).map(str::to_string);
            let kind = if failed && created { "download-failed" } else { "decision-waiting" };
            (kind, about.unwrap_or_else(|| decision.kind.replace('_', " ")), problem)
        }
        "agent.run_status" => {
            let status = text(p, "status")?;
            if !matches!(status.as_str(), "succeeded" | "failed" | "budget_exceeded" | "cancelled" | "nothing_done") {
                return None;
            }
            let run = event.subject.clone()?;
            let goal: Option<String> = sqlx::query_scalar("SELECT goal FROM agent_run WHERE id = $1")
                .bind(&run)
                .fetch_optional(&svc.db.pool)
                .await
                .ok()
                .flatten();
            let goal = goal.unwrap_or_else(|| format!("run {run}"));
            ("run-finished", goal.chars().take(120).collect(), Some(status.replace('_', " ")))
        }
        _ => return None,
    };
    Some(Told { kind, title, detail: detail.map(|d| d.chars().take(300).collect()), at: event.at })
}

/// How `n` events of `kind` are counted in a title.
fn counted(kind: &str, n: usize) -> &'static str {
    let one = n == 1;
    match kind {
        "grabbed" => "grabbed",
        "imported" => "imported",
        "upgraded" => "upgraded",
        "download-failed" if one => "download failed",
        "download-failed" => "downloads failed",
        "decision-waiting" if one => "decision waiting",
        "decision-waiting" => "decisions waiting",
        _ if one => "agent run finished",
        _ => "agent runs finished",
    }
}

/// One message about `told`: its title counts them by kind, its text has
/// a line each (at most [`MAX_LINES`], the rest counted).
pub fn message(told: &[Told]) -> Value {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for t in told {
        match counts.iter_mut().find(|(k, _)| *k == t.kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((t.kind, 1)),
        }
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {}", counted(k, *n))).collect();
    let mut lines: Vec<String> = told.iter().take(MAX_LINES).map(Told::line).collect();
    if told.len() > MAX_LINES {
        lines.push(format!("and {} more", told.len() - MAX_LINES));
    }
    let events: Vec<Value> = told
        .iter()
        .take(100)
        .map(|t| json!({"kind": t.kind, "title": t.title, "detail": t.detail, "at": t.at}))
        .collect();
    json!({"title": format!("Capstan: {}", summary.join(", ")), "message": lines.join("\n"), "events": events})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(kind: &'static str, title: &str) -> Told {
        Told { kind, title: title.into(), detail: None, at: 1 }
    }

    #[test]
    fn several_events_make_one_message_that_counts_them() {
        let m = message(&[
            told("imported", "Dune (2021)"),
            told("grabbed", "Shōgun (2024) season 1"),
            told("imported", "Arrival (2016)"),
        ]);
        assert_eq!(m["title"], "Capstan: 2 imported, 1 grabbed");
        assert_eq!(m["message"], "Imported: Dune (2021)\nGrabbed: Shōgun (2024) season 1\nImported: Arrival (2016)");
        assert_eq!(m["events"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn a_long_list_is_cut_and_counted() {
        let many: Vec<Told> = (0..40).map(|_| told("download-failed", "Dune (2021)")).collect();
        let m = message(&many);
        assert_eq!(m["title"], "Capstan: 40 downloads failed");
        assert!(m["message"].as_str().unwrap().ends_with("and 10 more"));
    }
}
