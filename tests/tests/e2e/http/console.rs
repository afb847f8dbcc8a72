//! The operator console in a real Chromium: a wrong password is refused
//! with the reason, an administrator signs in, sees the capabilities,
//! changes settings (all or none, secrets never shown), sees the library,
//! cancels and re-runs a task, starts an agent run with the demo model and follows it to
//! its verified report, sends it a new task and deletes it (and sees why a
//! run that claimed too much is not a success), approves a plan that waits for a human and revokes the
//! approval before it is used, grants and revokes standing automation,
//! and reads the audit log and checks its chain.

use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;
use serde_json::json;

use crate::agent::runs::start;
use crate::authority::approvals::plan_drafted_by_alices_key;
use crate::storage::ledger::env;

#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_signs_in_runs_the_agent_and_approves_a_plan() {
    let env = env(Backend::Sqlite).await;
    let api = start(&env).await;
    // As `capstan serve` does: the capabilities directory is watched.
    let _watch = capstan::runtime::watcher::watch(env.caps.runtime().clone()).unwrap();
    let root = api.base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&env.db, "bob", "correct horse battery").await.unwrap();

    // A plan drafted through alice's key waits for someone else's approval.
    let (key, plan) = plan_drafted_by_alices_key(&env, &"a".repeat(40)).await;
    let (status, asked) =
        api.with_key(&key).post("/approvals", json!({"planType": "acquisition", "planId": plan.id})).await;
    assert_eq!(status, 201);
    let approval_row = format!("#approvals tr[data-approval-id='{}']", asked["id"].as_str().unwrap());

    let browser = Browser::start().await;
    browser.client.goto(&format!("{root}/")).await.unwrap();
    assert_eq!(browser.client.title().await.unwrap(), "Capstan");

    // A wrong password is refused with the reason, and nothing opens.
    browser.fill("#login-name", "bob").await;
    browser.fill("#login-password", "not the password").await;
    browser.click("#login-submit").await;
    let refused = browser.wait_text("#login-error", "showed a refusal", |t| !t.is_empty()).await;
    assert!(refused.to_lowercase().contains("password"), "{refused}");
    assert!(!browser.shown("#app-view").await);

    browser.fill("#login-password", "correct horse battery").await;
    browser.click("#login-submit").await;
    browser.wait_text("#who", "named the administrator", |t| t.contains("bob")).await;

    // The capabilities the runtime loaded, with their labels, and a file
    // dropped into the capabilities directory that is not a component.
    browser.click("nav button[data-tab=capabilities]").await;
    let capabilities = browser.wait_text("#capabilities", "listed", |t| t.contains("release.inspect")).await;
    assert!(capabilities.contains("download.submit") && capabilities.contains("execute"), "{capabilities}");
    std::fs::write(env._host.plugins().join("garbage.wasm"), b"not a component").unwrap();
    let refused = browser.wait_text("#refused", "listed the refused file", |t| t.contains("garbage.wasm")).await;
    assert!(refused.contains(" — "), "the refusal says why: {refused}");

    // Settings change all or none: a value out of range refuses the whole
    // change, and a secret is never shown back.
    browser.click("nav button[data-tab=settings]").await;
    let max_calls = "input[name='agent.max_tool_calls']";
    let api_key = "input[name='model.api_key']";
    browser.fill(max_calls, "0").await;
    browser.fill(api_key, "sk-console-test").await;
    browser.click("#settings-save").await;
    let refused = browser.wait_text("#settings-error", "showed a refusal", |t| !t.is_empty()).await;
    assert!(refused.contains("nothing was changed"), "{refused}");
    let next_to = browser.text(&format!("{max_calls} + .field-error")).await;
    assert_eq!(next_to, "must be at least 1", "said next to the field");
    let settings = env.app.settings().all().await.unwrap();
    assert_eq!(
        (settings["agent.max_tool_calls"].as_i64(), &settings["model.api_key"]),
        (Some(50), &json!({"set": false}))
    );
    browser.fill(max_calls, "12").await;
    browser.click("#settings-save").await;
    browser.wait_text("#settings-saved", "saved", |t| t.starts_with("Saved")).await;
    let settings = env.app.settings().all().await.unwrap();
    assert_eq!(
        (settings["agent.max_tool_calls"].as_i64(), &settings["model.api_key"]),
        (Some(12), &json!({"set": true}))
    );
    let shown = browser.client.find(fantoccini::Locator::Css(api_key)).await.unwrap();
    assert_eq!(shown.prop("value").await.unwrap().as_deref(), Some(""), "the secret is not shown back");
    assert_eq!(shown.attr("placeholder").await.unwrap().as_deref(), Some("set (hidden)"));
    let page = browser.client.source().await.unwrap();
    assert!(!page.contains("sk-console-test"), "the secret is nowhere in the page");

    // The library: the wanted movie and its slot.
    browser.click("nav button[data-tab=library]").await;
    let library = browser.wait_text("#library", "listed", |t| t.contains("Dune: Part Two")).await;
    assert!(library.contains("(2024)") && library.contains("2160p wanted"), "{library}");
    // TMDB is not set up here: the failure says so and leads to the Services page.
    browser.fill("#add-query", "Dune").await;
    browser.click("#add-search-button").await;
    browser.wait_text("#add-error", "said TMDB is missing", |t| t.contains("TMDB is not set up")).await;
    browser.click("#add-error button.link").await;
    assert!(browser.shown("#tab-services").await, "the link opened the Services page");

    // A run with the demo model, followed to its verified report. Until a
    // model is set up the console says the demo follows scripts, and runs
    // start as plan only.
    browser.click("nav button[data-tab=agent]").await;
    browser.wait_text("#run-demo-note", "said the demo model is active", |t| t.contains("scripted demo model")).await;
    assert_eq!(browser.prop("#run-mode", "value").await.as_deref(), Some("plan_only"));
    browser.fill("#run-goal", "What does my library hold?").await;
    browser.click("#run-start").await;
    browser.wait_text("#run-status", "succeeded", |t| t == "succeeded").await;
    let transcript = browser.wait_text("#run-text", "streamed", |t| t.contains("The library holds")).await;
    assert!(transcript.contains("nothing was changed"), "{transcript}");
    // Each step with its time, each call with its input and status.
    assert!(
        transcript.contains("Agent:") && transcript.contains("inventory.query {") && transcript.contains("— succeeded"),
        "{transcript}"
    );
    assert!(browser.text("#run-text .step time").await.contains(':'), "steps carry their time");
    browser.wait_text("#run-report-status", "showed the report", |t| t.contains("succeeded")).await;
    let summary = browser.text("#run-summary").await;
    assert!(summary.contains("Asked") && summary.contains("What does my library hold?"), "{summary}");
    assert!(summary.contains("The model said (not verified)"), "{summary}");
    assert!(!browser.shown("#run-report").await, "the raw report is behind a toggle");
    browser.click("#run-report-raw summary").await;
    browser.wait_text("#run-report", "showed the raw report", |t| t.contains("AgentGoalReport")).await;
    assert!(!browser.shown("#run-abort").await, "an ended run has nothing to abort");
    // The user's own words appear in the transcript.
    browser.fill("#message-text", "And how many are wanted?").await;
    browser.click("#message-form button[type=submit]").await;
    browser.wait_text("#run-text", "showed the message", |t| t.contains("You: And how many are wanted?")).await;
    browser.wait_text("#run-status", "answered again", |t| t == "succeeded").await;
    let runs = api.json("/agent/runs").await;
    assert_eq!(runs["items"][0]["goal"], "What does my library hold?");
    assert_eq!(runs["items"][0]["createdBy"], "admin:bob", "the run is the administrator's");
    // A message sent as a new task says so; the box is cleared after it.
    browser.click("#message-new-task").await;
    browser.fill("#message-text", "What does it hold now?").await;
    browser.click("#message-form button[type=submit]").await;
    browser
        .wait_text("#run-text", "showed the new task", |t| t.contains("You (new task): What does it hold now?"))
        .await;
    browser.wait_text("#run-text", "answered it", |t| t.matches("The library holds").count() >= 3).await;
    assert_eq!(browser.prop("#message-new-task", "checked").await.as_deref(), Some("false"));
    let messages = api.json(&format!("/agent/runs/{}", runs["items"][0]["id"].as_str().unwrap())).await;
    assert_eq!(messages["messages"][2]["newTask"], true, "{messages}");
    // An ended run can be deleted: gone from the list and from the API.
    let deleted = runs["items"][0]["id"].as_str().unwrap().to_string();
    browser.wait_text("#run-status", "ended", |t| t == "succeeded").await;
    browser.click("#run-delete").await;
    browser.client.accept_alert().await.unwrap();
    browser.wait_text("#runs", "the run left the list", |t| !t.contains("What does my library hold?")).await;
    assert_eq!(api.get(&format!("/agent/runs/{deleted}")).await.0, 404);

    // A run whose model claims what it did not do: the console says what
    // was verified, and why it is not a success.
    let claims = json!({"scripts": [{"match": ["fetch"], "steps": [], "finalText": "Done! It is in your library."}]});
    crate::agent::runs::set(&env.app, &[("model.script", json!(claims.to_string()))]).await;
    browser.fill("#run-goal", "fetch Dune: Part Two").await;
    browser.click("#run-mode option[value=execute]").await;
    browser.click("#run-start").await;
    browser.wait_text("#run-status", "nothing_done", |t| t == "nothing_done").await;
    let why = browser.wait_text("#run-why", "said why", |t| !t.is_empty()).await;
    assert!(why.contains("made none"), "{why}");
    browser
        .wait_text("#run-report-status", "showed the verdict", |t| {
            t.contains("nothing_done") && t.contains("made none")
        })
        .await;
    crate::agent::runs::set(&env.app, &[("model.script", serde_json::Value::Null)]).await;

    // Tasks: the run's task, and one waiting that is cancelled and queued again.
    let tasks = capstan::tasks::Tasks::new(env.db.clone());
    let (waiting, _) = tasks
        .enqueue(&capstan::tasks::NewTask {
            kind: "refreshLibrary".into(),
            subject: None,
            payload: json!({}),
            dedupe_key: None,
            max_attempts: 3,
            created_by: "test".into(),
        })
        .await
        .unwrap();
    browser.click("nav button[data-tab=tasks]").await;
    // A run's task ends just after the run does: wait for each to say so.
    let runs_done = |t: &str| {
        let runs: Vec<&str> = t.lines().filter(|row| row.contains("runAgent")).collect();
        !runs.is_empty() && runs.iter().all(|row| row.contains("succeeded"))
    };
    browser.wait_text("#tasks", "listed the tasks", |t| t.contains("refreshLibrary") && runs_done(t)).await;
    let row = format!("#tasks tr[data-task-id='{}']", waiting.id);
    browser.click(&format!("{row} button.cancel")).await;
    browser.wait_text(&row, "was cancelled", |t| t.contains("cancelled")).await;
    browser.click(&format!("{row} button.retry")).await;
    browser.wait_text(&row, "was queued again", |t| t.contains("queued")).await;
    // The Updated column is the task's own time, as this browser writes
    // times. The list refreshes on its own, so this waits for a reading in
    // which the row and the task agree.
    let started = std::time::Instant::now();
    loop {
        let task = tasks.get(&waiting.id).await.unwrap().unwrap();
        let expected = browser
            .client
            .execute("return new Date(arguments[0]).toLocaleString()", vec![json!(task.updated_at)])
            .await
            .unwrap();
        // Read without waiting: a refresh may replace the row mid-read.
        let shown = browser.wait_text(&format!("{row} td:nth-child(5)"), "was read", |_| true).await;
        if Some(shown.as_str()) == expected.as_str() {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the Updated column shows {shown:?}, the task was updated {expected:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // The plan waiting for a human, approved from the console.
    browser.click("nav button[data-tab=approvals]").await;
    let listed = browser.wait_text("#approvals", "listed the plan", |t| t.contains(&plan.id)).await;
    // What a person judges it by: the title, the release, size, quality, indexer.
    for shown in [
        "Dune: Part Two (2024)",
        "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX",
        "18.6 GB",
        "2160p",
        "from torznab",
    ] {
        assert!(listed.contains(shown), "{shown:?} is not in {listed:?}");
    }
    browser.wait_text("nav button[data-tab=approvals]", "counted what waits", |t| t == "Approvals (1)").await;
    browser.click("#approvals button.decide-approved").await;
    browser.wait_text(&approval_row, "showed it approved", |t| t.contains("approved by admin:bob")).await;
    let approvals = env.svc.authz.approvals(Some(capstan::authz::ApprovalStatus::Approved)).await.unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(
        (approvals[0].plan_id.as_str(), approvals[0].decided_by.as_deref()),
        (plan.id.as_str(), Some("admin:bob"))
    );

    // A draft the sweep made without authority to submit: nobody was asked
    // yet, so it waits among the drafts until an administrator asks.
    let domain = &env.svc.domain;
    let (slot, release) = crate::storage::domain::wanted_movie(domain, &"b".repeat(40)).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let sweep = capstan::domain::Author::new("task:evaluateAcquisition");
    let new = capstan::domain::NewPlan { slot_id: slot.id, source_release_id: release.id, note: None };
    let swept = domain.draft_plan(&sweep, &new).await.unwrap();
    browser.click("nav button[data-tab=library]").await;
    browser.click("nav button[data-tab=approvals]").await;
    let drafts = browser.wait_text("#drafts", "listed the sweep's draft", |t| t.contains(&swept.id)).await;
    assert!(drafts.contains("Dune: Part Two (2024)") && drafts.contains("2160p"), "{drafts}");
    assert!(!drafts.contains(&plan.id), "an approved plan is not asked about again");
    // One click approves it: asked for and decided at once.
    browser.click("#drafts button.approve-draft").await;
    browser
        .wait_text("#approvals", "listed it approved", |t| t.contains(&swept.id) && t.contains("approved by admin:bob"))
        .await;
    browser.wait_text("#drafts", "took it off the drafts", |t| !t.contains(&swept.id)).await;
    let rows = browser.text("#approvals").await;
    assert_eq!(rows.matches(&swept.id).count(), 1, "one row a plan: {rows}");

    // The approval, not yet used, revoked: it authorises nothing, and the
    // plan is a draft nobody was asked about again.
    browser.click(&format!("{approval_row} button.revoke")).await;
    browser.wait_text("#approvals", "took the revoked approval off", |t| !t.contains(&plan.id)).await;
    browser.wait_text("#drafts", "listed the plan again", |t| t.contains(&plan.id)).await;
    let revoked = env.svc.authz.approval(domain, asked["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(revoked.status, capstan::authz::ApprovalStatus::Revoked);
    let covering = env.svc.authz.covering_approval(domain, "acquisition", &plan.id, "download.submit").await;
    assert!(covering.unwrap().is_none(), "nothing authorises the plan's submission now");

    // A standing grant for an execute capability, then revoked.
    browser.click("nav button[data-tab=grants]").await;
    browser.wait_text("#grant-action", "offered the capabilities", |t| t.contains("download.submit")).await;
    browser.select("#grant-action", "download.submit").await;
    browser.fill("#grant-calls", "5").await;
    browser.click("#grant-create").await;
    browser.wait_text("#grants", "listed the grant", |t| t.contains("download.submit")).await;
    let grants = env.svc.authz.grants().await.unwrap();
    assert_eq!(grants.len(), 1, "only the valid grant was stored");
    assert_eq!((grants[0].action.as_str(), grants[0].daily_invocations), ("download.submit", 5));
    assert_eq!(grants[0].created_by, "admin:bob");
    browser.click("#grants button.revoke").await;
    browser.wait_text("#grants", "showed the revocation", |t| t.contains("revoked")).await;
    assert!(env.svc.authz.grants().await.unwrap()[0].revoked_at.is_some());

    // The audit log, newest first, with what was done here; its chain is intact.
    browser.click("nav button[data-tab=audit]").await;
    let audit = browser.wait_text("#audit", "listed the grant", |t| t.contains("grant.revoke")).await;
    for action in ["grant.create", "approval.decide", "approval.revoke", "task.cancel", "task.retry", "settings.update"]
    {
        assert!(audit.contains(action), "{action} is audited: {audit}");
    }
    assert!(audit.contains("admin:bob"), "{audit}");
    assert!(audit.contains("calls a day until"), "each event's detail is shown: {audit}");
    assert!(!audit.contains("sk-console-test"), "settings changes are audited by key, never by value");
    // Every event there was when asked, and none that came after.
    let before = env.app.audit().list(0, 1000).await.unwrap().len();
    browser.click("#audit-verify").await;
    let verdict = browser.wait_text("#audit-verdict", "gave a verdict", |t| !t.is_empty()).await;
    let after = env.app.audit().list(0, 1000).await.unwrap().len();
    let checked: usize = verdict
        .strip_prefix("Intact: ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not intact: {verdict}"));
    assert!((before..=after).contains(&checked), "{before}..={after} events: {verdict}");

    // Signing out returns to the login.
    browser.click("#logout").await;
    browser.wait_text("#login-view h2", "showed the login", |t| t == "Log in").await;
    assert!(!browser.shown("#app-view").await);
    browser.close().await;
}
