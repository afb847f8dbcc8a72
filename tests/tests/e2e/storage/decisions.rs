//! Decisions' lifecycle in the domain store, on both backends: opened once
//! per dedupe key, moved on while undecided, answered once (a chosen
//! option, a dismissal, a cause that cleared), refused clearly when the
//! option is unknown or the decision is already answered, and every change
//! announced by an event committed with it.

use capstan::domain::{Answer, DecisionFilter, Domain, DomainError};
use capstan::events::Events;
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use serde_json::json;

async fn decisions_are_opened_once_moved_on_and_answered_once(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&fresh_url(backend, dir.path()).await).await.unwrap();
    let events = Events::new(db.clone());
    let domain = Domain::with_events(db, events.clone());
    let options = json!([
        {"id": "recheck", "label": "Force recheck", "capabilityId": "download.recheck", "input": {"downloadTaskId": "d1"}},
        {"id": "dismiss", "label": "Leave it", "action": "dismiss"}
    ]);
    let head = events.head().await.unwrap();
    let (decision, created) = domain
        .open_decision("download_failed", Some("d1"), &options, &json!({"state": "missingFiles"}), "download_failed:d1")
        .await
        .unwrap();
    assert!(created);
    assert_eq!((decision.status.as_str(), decision.resolved_by.as_deref()), ("open", None));
    let (again, created) =
        domain.open_decision("download_failed", Some("d1"), &options, &json!({}), "download_failed:d1").await.unwrap();
    assert!(!created && again.id == decision.id, "one per root cause");
    let other = domain.open_decision("identity_ambiguous", Some("r1"), &json!([]), &json!({}), "identity:r1").await;
    let other = other.unwrap().0;

    // Listed newest first, narrowed by status, kind and subject.
    let all = domain.decisions_where(&DecisionFilter::default(), 10).await.unwrap();
    assert_eq!(all.iter().map(|d| d.id.as_str()).collect::<Vec<_>>().len(), 2);
    let failed = DecisionFilter { kind: Some("download_failed"), ..DecisionFilter::default() };
    assert_eq!(domain.decisions_where(&failed, 10).await.unwrap(), vec![decision.clone()]);
    let about = DecisionFilter {
        subject: Some("r1"),
        status: Some(capstan::domain::DecisionStatus::Open),
        ..DecisionFilter::default()
    };
    assert_eq!(domain.decisions_where(&about, 10).await.unwrap()[0].id, other.id);

    // Moved on while undecided, keeping what it knew.
    let waiting = domain
        .advance_decision(
            &decision.id,
            capstan::domain::DecisionStatus::AwaitingUser,
            &json!({"investigation": "data gone"}),
        )
        .await
        .unwrap();
    assert_eq!(waiting.status, capstan::domain::DecisionStatus::AwaitingUser);
    assert_eq!(waiting.evidence, json!({"state": "missingFiles", "investigation": "data gone"}));
    assert!(matches!(
        domain.advance_decision(&decision.id, capstan::domain::DecisionStatus::Resolved, &json!({})).await,
        Err(DomainError::Invalid(_))
    ));

    // An option it does not have changes nothing; a real one resolves it once.
    let unknown = domain.answer_decision(&decision.id, &Answer::Resolve { option_id: "delete" }, "admin:bob").await;
    assert!(matches!(unknown, Err(DomainError::Invalid(ref m)) if m.contains("no option \"delete\"")), "{unknown:?}");
    assert_eq!(domain.decision(&decision.id).await.unwrap().status, capstan::domain::DecisionStatus::AwaitingUser);
    let resolved =
        domain.answer_decision(&decision.id, &Answer::Resolve { option_id: "recheck" }, "admin:bob").await.unwrap();
    assert_eq!((resolved.status.as_str(), resolved.resolved_by.as_deref()), ("resolved", Some("admin:bob")));
    assert_eq!(resolved.resolution.as_ref().unwrap()["option"]["capabilityId"], "download.recheck");
    let twice = domain.answer_decision(&decision.id, &Answer::Dismiss, "admin:carol").await;
    assert!(matches!(twice, Err(DomainError::Conflict(_))), "{twice:?}");
    assert_eq!(domain.decision(&decision.id).await.unwrap().resolved_by.as_deref(), Some("admin:bob"));
    let moved = domain.advance_decision(&decision.id, capstan::domain::DecisionStatus::Investigating, &json!({})).await;
    assert!(matches!(moved, Err(DomainError::Conflict(_))), "an answered decision stays answered");

    // A cause that cleared by itself, and a dismissal.
    let cleared = Answer::Cleared { facts: json!({"download": "downloading"}) };
    let closed = domain.answer_decision(&other.id, &cleared, "system:sync").await.unwrap();
    assert_eq!(closed.resolution.unwrap()["facts"]["download"], "downloading");
    let (third, _) =
        domain.open_decision("import_failed", Some("o1"), &json!([]), &json!({}), "import:o1").await.unwrap();
    assert_eq!(
        domain.answer_decision(&third.id, &Answer::Dismiss, "admin:bob").await.unwrap().status,
        capstan::domain::DecisionStatus::Dismissed
    );
    assert!(matches!(domain.decision("nope").await, Err(DomainError::NotFound(_))));

    // Every change was announced, in order, each once.
    let seen: Vec<(String, String)> = events
        .list(head, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.starts_with("decision."))
        .map(|e| (e.kind, e.payload["status"].as_str().unwrap_or_default().to_string()))
        .collect();
    let expected = [
        ("decision.created", "open"),
        ("decision.created", "open"),
        ("decision.updated", "awaiting_user"),
        ("decision.updated", "resolved"),
        ("decision.updated", "resolved"),
        ("decision.created", "open"),
        ("decision.updated", "dismissed"),
    ];
    assert_eq!(seen, expected.map(|(k, s)| (k.to_string(), s.to_string())));
}

both_backends!(decisions_are_opened_once_moved_on_and_answered_once);
