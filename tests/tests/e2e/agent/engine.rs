//! The scripted model: the demo reads the inventory and reports only what
//! the result says; scripts are chosen by the user's words, fill
//! `{{capability.path}}` from real results (never inventing a figure), and
//! a malformed script file is refused with the reason.

use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{Block, Message, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent};
use serde_json::{Value, json};

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: "You manage a media library.".into(),
        messages,
        tools: std::sync::Arc::from([]),
        max_tokens: 1024,
    }
}

/// The conversation after the model called `name` (id `id`) and got `result`.
fn after_tool(mut messages: Vec<Message>, id: &str, name: &str, input: Value, result: Value, ok: bool) -> Vec<Message> {
    messages.push(Message {
        role: Role::Assistant,
        content: vec![Block::ToolUse { id: id.into(), name: name.into(), input }],
    });
    messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult { tool_use_id: id.into(), content: result.to_string(), is_error: !ok }],
    });
    messages
}

#[tokio::test]
async fn the_demo_reads_the_inventory_and_reports_what_it_says() {
    let model = Scripted::demo();
    let asked = vec![Message::user_text("What do I have?")];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let first = model.complete(&request(asked.clone()), tx).await.unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "inventory.query");
    let mut streamed = String::new();
    let mut calls = 0;
    while let Ok(event) = rx.try_recv() {
        match event {
            StreamEvent::TextDelta(t) => streamed.push_str(&t),
            StreamEvent::ToolCall(_) => calls += 1,
        }
    }
    assert_eq!((streamed.as_str(), calls), (first.text.as_str(), 1), "the stream carries the same answer");

    let inventory = json!({"items": [{"title": "Dune"}, {"title": "Alien"}, {"title": "Heat"}], "counts": {}});
    let id = first.tool_calls[0].id.clone();
    let messages = after_tool(asked, &id, "inventory.query", json!({}), inventory, true);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let last = model.complete(&request(messages.clone()), tx).await.unwrap();
    assert_eq!(last.stop, StopReason::EndTurn);
    assert!(last.tool_calls.is_empty());
    assert!(last.text.starts_with("The library holds 3 title(s): Dune, Alien and Heat."), "{}", last.text);

    // A failed result is no evidence: the figure reads unknown.
    let failed = after_tool(
        vec![Message::user_text("What do I have?")],
        "c",
        "inventory.query",
        json!({}),
        json!({"items": [1]}),
        false,
    );
    let answer = model.answer(&request(failed)).unwrap();
    assert!(answer.text.contains("holds (unknown) title(s): (unknown)."), "{}", answer.text);
}

#[test]
fn scripts_are_chosen_by_the_request_and_fill_inputs_from_results() {
    let model = Scripted::from_json(
        r#"{"scripts": [
            {"match": ["fetch", "下载"], "steps": [
                {"tools": [{"name": "catalog.lookup", "input": {"action": "search", "query": "Dune"}}]},
                {"text": "Found it.", "tools": [{"name": "download.plan", "input": {"slotId": "s1", "sourceReleaseId": "{{catalog.lookup.results.0.id}}"}}]}
            ], "finalText": "Planned {{download.plan.id}} for {{catalog.lookup.results.0.title}}."},
            {"finalText": "I can only fetch things."}
        ]}"#,
    )
    .unwrap();
    let asked = vec![Message::user_text("Please FETCH Dune")];
    let step0 = model.answer(&request(asked.clone())).unwrap();
    assert_eq!(step0.tool_calls[0].name, "catalog.lookup");
    let found = json!({"results": [{"id": 42, "title": "Dune: Part Two"}]});
    let messages = after_tool(asked, "a", "catalog.lookup", json!({}), found, true);
    let step1 = model.answer(&request(messages.clone())).unwrap();
    assert_eq!(step1.text, "Found it.");
    // A whole-string reference keeps the value's type.
    assert_eq!(step1.tool_calls[0].input.as_ref().unwrap()["sourceReleaseId"], json!(42));
    let messages = after_tool(messages, "b", "download.plan", json!({}), json!({"id": "plan-7"}), true);
    let done = model.answer(&request(messages)).unwrap();
    assert_eq!(done.text, "Planned plan-7 for Dune: Part Two.");
    assert_eq!(done.stop, StopReason::EndTurn);

    // Other words fall through to the catch-all script.
    let other = model.answer(&request(vec![Message::user_text("hello")])).unwrap();
    assert_eq!(other.text, "I can only fetch things.");
}

#[test]
fn malformed_scripts_and_unanswerable_requests_are_refused_with_the_reason() {
    for (text, expect) in [
        ("not json", "expected"),
        (r#"{"scripts": []}"#, "no scripts"),
        (r#"{"scripts": [{"finalText": "x", "temperature": 1}]}"#, "unknown field"),
        (r#"{"scripts": [{"steps": []}]}"#, "finalText"),
    ] {
        match Scripted::from_json(text) {
            Err(ProviderError::Invalid(m)) => assert!(m.contains(expect), "{text}: {m}"),
            other => panic!("{text} was not refused: {other:?}"),
        }
    }
    let picky = Scripted::from_json(r#"{"scripts": [{"match": ["organize"], "finalText": "ok"}]}"#).unwrap();
    let err = picky.answer(&request(vec![Message::user_text("fetch Dune")])).unwrap_err();
    assert!(matches!(err, ProviderError::Invalid(ref m) if m.contains("no script matches")), "{err:?}");
    let err = picky.answer(&request(Vec::new())).unwrap_err();
    assert!(matches!(err, ProviderError::Invalid(ref m) if m.contains("no user request")), "{err:?}");
}

/// The model comes from settings; its API key is decrypted only to be sent.
#[tokio::test(flavor = "multi_thread")]
async fn the_provider_is_built_from_settings_with_the_decrypted_key() {
    use capstan::agent::providers::from_settings;
    use capstan::settings::Settings;
    use capstan_tests::mock_llm::{MockLlm, Reply, sse};

    let dir = tempfile::tempdir().unwrap();
    let db =
        capstan::store::Db::open(&capstan_tests::db::fresh_url(capstan_tests::db::Backend::Sqlite, dir.path()).await)
            .await
            .unwrap();
    let settings = Settings::new(db, dir.path().join("data"), capstan::agent::providers::scripted::Scripted::check);
    let asked = request(vec![Message::user_text("What do I have?")]);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();

    // Out of the box: the scripted demo.
    let demo = from_settings(&settings).await.unwrap().complete(&asked, tx.clone()).await.unwrap();
    assert_eq!(demo.tool_calls[0].name, "inventory.query");

    let mut change = serde_json::Map::new();
    change.insert("model.provider".into(), json!("anthropic"));
    change.insert("model.model".into(), json!("claude-test"));
    settings.update(&change).await.unwrap();
    let missing = from_settings(&settings).await.err().expect("no key, no client");
    assert!(matches!(missing, ProviderError::Invalid(ref m) if m.contains("model.api_key")), "{missing:?}");

    let server = MockLlm::start(vec![Reply::Stream(vec![sse(&[
        ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})),
        ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}}),
        ),
        ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])])])
    .await;
    let mut change = serde_json::Map::new();
    change.insert("model.base_url".into(), json!(server.base_url()));
    change.insert("model.api_key".into(), json!("sk-ant-from-settings"));
    change.insert("model.thinking_level".into(), json!("low"));
    settings.update(&change).await.unwrap();
    let answer = from_settings(&settings).await.unwrap().complete(&asked, tx).await.unwrap();
    assert_eq!(answer.text, "hello");
    let sent = &server.requests()[0];
    assert_eq!(sent.headers["x-api-key"], "sk-ant-from-settings");
    assert_eq!(sent.body["thinking"]["budget_tokens"], 2048, "model.thinking_level reaches the request");
}

mod update_plan {
    //! The plan tool's rules as the model meets them.

    use capstan::agent::tools::plan::{StepStatus, apply, render, tool_spec, validate};
    use serde_json::json;

    #[test]
    fn completed_and_blocked_steps_need_evidence_and_one_step_is_in_progress() {
        let good = json!({"goal": "Fetch Dune", "steps": [
            {"title": "Find releases", "status": "completed", "evidence": "release.search returned 4"},
            {"title": "Plan the best", "status": "in_progress"},
            {"title": "Submit", "status": "pending"}
        ]});
        let plan = validate(&good).unwrap();
        assert_eq!(plan.steps[1].status, StepStatus::InProgress);
        let shown = render(&plan);
        assert!(shown.contains("[x] Find releases — release.search returned 4"), "{shown}");
        assert!(shown.contains("[>] Plan the best"), "{shown}");

        for (bad, says) in [
            (json!({"goal": "x", "steps": [{"title": "Submit", "status": "completed"}]}), "without evidence"),
            (
                json!({"goal": "x", "steps": [{"title": "Submit", "status": "blocked", "evidence": "  "}]}),
                "without evidence",
            ),
            (
                json!({"goal": "x", "steps": [{"title": "a", "status": "in_progress"}, {"title": "b", "status": "in_progress"}]}),
                "one step",
            ),
            (json!({"goal": "", "steps": []}), "goal"),
            (json!({"goal": "x", "steps": [{"title": "a", "status": "done"}]}), "unknown variant"),
            (json!({"goal": "x", "steps": [], "approved": true}), "unknown field"),
        ] {
            let err = validate(&bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        assert_eq!(tool_spec().name, "update_plan");
    }

    #[test]
    fn two_calls_in_one_response_are_both_refused() {
        let a = json!({"goal": "A", "steps": []});
        let b = json!({"goal": "B", "steps": []});
        let (plan, results) = apply(&[&a, &b]);
        assert!(plan.is_none());
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.contains("2 times"))));
        let (plan, results) = apply(&[&a]);
        assert_eq!(plan.unwrap().goal, "A");
        assert!(results[0].is_ok());
    }
}

mod read_tool_result {
    //! Paging large results by characters, within the run that made them.

    use std::time::Duration;

    use capstan::agent::tools::results::{
        Holder, MAX_RESULT_BYTES, MAX_RESULTS_PER_RUN, MAX_RUN_BYTES, PREVIEW_CHARS, ResultStore, Shown,
    };
    use capstan::runtime::EffectClass;

    /// The agent of run-1..run-4 (the store keys results by run anyway).
    fn agent() -> Holder {
        Holder { principal: "agent:run-1".into(), class: EffectClass::Execute }
    }

    fn preview(shown: Shown) -> (String, String, usize) {
        match shown {
            Shown::Preview { text, result_id, next_offset, .. } => (text, result_id, next_offset),
            other => panic!("expected a preview, got {other:?}"),
        }
    }

    #[test]
    fn a_long_result_is_paged_by_characters_without_splitting_any() {
        let store = ResultStore::default();
        assert!(matches!(store.keep("run-1", &agent(), "short"), Shown::Whole { .. }));
        // Multi-byte characters throughout: pages are counted in characters.
        let text: String = "沙丘é🎬".chars().cycle().take(PREVIEW_CHARS * 2 + 7).collect();
        let (first, id, next) = preview(store.keep("run-1", &agent(), &text));
        assert_eq!((first.chars().count(), next), (PREVIEW_CHARS, PREVIEW_CHARS));
        let mut read = first;
        let mut offset = Some(next);
        while let Some(at) = offset {
            let page = store.read("run-1", &agent(), &id, at, 3_000).unwrap();
            read.push_str(&page.text);
            offset = page.next_offset;
        }
        assert_eq!(read, text, "the pages put back together are the result");
        assert!(store.read("run-1", &agent(), &id, PREVIEW_CHARS * 3, 10).unwrap_err().contains("past the end"));
    }

    #[test]
    fn other_runs_closed_runs_expired_and_oversized_results_are_refused() {
        let store = ResultStore::with_ttl(Duration::from_millis(200));
        let long = "x".repeat(PREVIEW_CHARS + 1);
        let (_, id, _) = preview(store.keep("run-1", &agent(), &long));
        assert!(store.read("run-2", &agent(), &id, 0, 10).is_err(), "another run cannot read it");
        assert!(store.read("run-1", &agent(), &id, 0, 10).is_ok());
        std::thread::sleep(Duration::from_millis(250));
        assert!(store.read("run-1", &agent(), &id, 0, 10).unwrap_err().contains("expire"));

        let (_, id, _) = preview(store.keep("run-1", &agent(), &long));
        store.close_run("run-1");
        assert!(
            store.read("run-1", &agent(), &id, 0, 10).is_err(),
            "nothing is readable after the run's privileges drop"
        );

        let huge = "y".repeat(MAX_RESULT_BYTES + 1);
        assert!(
            matches!(store.keep("run-3", &agent(), &huge), Shown::TooLarge { ref message } if message.contains("narrow"))
        );

        // The oldest make room: at most 8 per run.
        let store = ResultStore::default();
        let ids: Vec<String> =
            (0..MAX_RESULTS_PER_RUN + 1).map(|_| preview(store.keep("run-4", &agent(), &long)).1).collect();
        assert!(store.read("run-4", &agent(), &ids[0], 0, 10).is_err(), "the oldest gave way");
        assert!(store.read("run-4", &agent(), &ids[MAX_RESULTS_PER_RUN], 0, 10).is_ok());
    }

    #[test]
    fn a_run_keeps_four_mebibytes_at_most_the_oldest_giving_way() {
        let store = ResultStore::default();
        let mark = |i: usize| char::from(b'a' + i as u8);
        let ids: Vec<String> = (0..5)
            .map(|i| preview(store.keep("run-1", &agent(), &mark(i).to_string().repeat(MAX_RESULT_BYTES - 10))).1)
            .collect();
        assert!(store.kept_bytes("run-1") <= MAX_RUN_BYTES, "{} bytes kept", store.kept_bytes("run-1"));
        assert!(store.read("run-1", &agent(), &ids[0], 0, 1).is_err(), "the oldest gave way");
        for (i, id) in ids.iter().enumerate().skip(1) {
            assert_eq!(store.read("run-1", &agent(), id, 0, 1).unwrap().text, mark(i).to_string());
        }
    }

    #[test]
    fn only_the_identity_that_made_a_result_reads_it_at_its_class() {
        let store = ResultStore::default();
        let long = "a".repeat(PREVIEW_CHARS + 10);
        let (_, id, _) = preview(store.keep("run-1", &agent(), &long));
        let subagent = Holder { principal: "subagent:run-1".into(), class: EffectClass::Read };
        assert!(store.read("run-1", &subagent, &id, 0, 10).is_err(), "a subagent cannot read its parent's result");
        let lower = Holder { class: EffectClass::Propose, ..agent() };
        assert!(store.read("run-1", &lower, &id, 0, 10).is_err(), "nor the run holding less than it did");
        let (_, theirs, _) = preview(store.keep("run-1", &subagent, &long));
        assert!(store.read("run-1", &agent(), &theirs, 0, 10).is_err(), "nor the parent its subagent's");
        assert!(store.read("run-1", &subagent, &theirs, 0, 10).is_ok());
        store.close_run("run-1");
        let (_, again, _) = preview(store.keep("run-1", &agent(), &long));
        assert!(store.read("run-1", &agent(), &again, 0, 10).is_ok(), "a reopened run keeps anew");
        assert!(store.read("run-1", &agent(), &id, 0, 10).is_err(), "but not what it had before");
    }
}

mod search_tools {
    //! Discovery over the real built-in catalog.

    use capstan::agent::tools::discovery::{Discovery, MAX_RESULTS, WINDOW};
    use capstan::runtime::{Descriptor, EffectClass};
    use capstan_tests::host::TestHost;

    async fn catalog(max: EffectClass) -> Vec<Descriptor> {
        let host = TestHost::new();
        let runtime = host.start().await.unwrap();
        let mut all: Vec<Descriptor> =
            runtime.snapshot().active.values().map(|l| l.descriptor.clone()).filter(|d| d.label <= max).collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn names_beat_aliases_beat_tags_and_nothing_outside_the_mode_is_found() {
        // A plan-only run's catalog: nothing above propose.
        let mut discovery = Discovery::new(catalog(EffectClass::Propose).await);
        let found = discovery.search("catalog.lookup", 8);
        assert_eq!(found[0].name, "catalog.lookup", "the exact name first");
        let found = discovery.search("整理", 8);
        assert_eq!(found[0].name, "organize.plan", "a Chinese alias finds the planner: {found:?}");
        assert!(found.iter().all(|f| f.name != "organize.execute"), "execute tools are outside a plan-only run");
        let found = discovery.search("download", 20);
        assert!(found.len() <= MAX_RESULTS);
        assert!(found.iter().all(|f| f.name != "download.submit"), "{found:?}");
        assert!(found.iter().any(|f| f.name == "download.plan"), "{found:?}");
        assert!(discovery.search("astrophysics", 8).is_empty());
        let first = discovery.initial("what is in my library inventory", 2);
        assert_eq!(first.len(), 2);
        assert!(first.contains(&"inventory.query".to_string()), "{first:?}");
    }

    fn tool(id: &str, aliases: &[&str], tags: &[&str], description: &str) -> Descriptor {
        Descriptor {
            id: id.into(),
            version: 1,
            label: EffectClass::Read,
            summary: id.into(),
            description: description.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: serde_json::json!({"type": "object"}),
            replay: capstan::runtime::Replay::Safe,
            services: Vec::new(),
        }
    }

    #[test]
    fn an_alias_beats_a_tag_beats_a_name_part_beats_the_description() {
        let mut discovery = Discovery::new(vec![
            tool("d.words", &[], &[], "Grab whatever the user points at."),
            tool("c.grab", &[], &[], "Named for it."),
            tool("b.tagged", &[], &["grab"], "Tagged."),
            tool("a.aliased", &["grab"], &[], "Also known as."),
            tool("e.unrelated", &[], &["other"], "Nothing to do with it."),
        ]);
        let order: Vec<String> = discovery.search("grab", 8).into_iter().map(|f| f.name).collect();
        assert_eq!(order, ["a.aliased", "b.tagged", "c.grab", "d.words"]);
        assert_eq!(discovery.search("c.grab", 8)[0].name, "c.grab", "an exact name beats everything");
    }

    #[test]
    fn the_window_keeps_the_sixteen_latest_candidates() {
        let catalog: Vec<Descriptor> = (0..20).map(|i| tool(&format!("w.t{i:02}"), &[], &[], "A tool.")).collect();
        let mut discovery = Discovery::new(catalog);
        for i in 0..20 {
            discovery.search(&format!("w.t{i:02}"), 1);
        }
        let selection = discovery.select(10_000_000, 0);
        assert!(selection.left_out.is_empty(), "{selection:?}");
        let expected: Vec<String> = (4..20).rev().map(|i| format!("w.t{i:02}")).collect();
        assert_eq!(selection.enabled, expected, "most recent first, the oldest four forgotten");
        assert_eq!(discovery.search("a tool", 20).len(), MAX_RESULTS, "a search answers at most eight");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_next_request_enables_what_fits_and_says_why_not() {
        let mut discovery = Discovery::new(catalog(EffectClass::Execute).await);
        for q in ["catalog.lookup", "release.search", "release.inspect", "download", "task", "policy", "organize"] {
            discovery.search(q, 8);
        }
        // A roomy window: the 16 most recent candidates within 4096 tokens.
        let roomy = discovery.select(200_000, 10_000);
        assert!(!roomy.enabled.is_empty());
        assert!(roomy.enabled.len() + roomy.left_out.len() <= WINDOW);
        // A small window: 10% of it is the budget, and the model hears why.
        let tight = discovery.select(8_000, 1_000);
        assert!(tight.enabled.len() < roomy.enabled.len(), "{tight:?}");
        assert!(tight.left_out.iter().any(|(_, why)| why.contains("800-token discovery budget")), "{tight:?}");
        // Little headroom left: nothing more is enabled.
        let full = discovery.select(200_000, 180_000);
        assert!(full.enabled.is_empty());
        assert!(full.left_out.iter().all(|(_, why)| why.contains("15%")), "{full:?}");
        discovery.reset();
        assert_eq!(discovery.select(200_000, 0).enabled.len(), 0, "a new request starts afresh");
    }
}
