//! The two HTTP model clients against loopback servers that replay
//! recorded-shape streams: split characters, empty and invalid argument
//! fragments, missing usage, retries, timeouts, cut and dropped streams,
//! and extended thinking.

mod anthropic {
    //! The Anthropic client against a loopback server replaying
    //! recorded-shape streams.

    use std::time::Duration;

    use capstan::agent::providers::anthropic::Anthropic;
    use capstan::agent::providers::wire::RetryPolicy;
    use capstan::agent::providers::{
        Block, Message, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent, ToolSpec,
    };
    use capstan_tests::mock_llm::{MockLlm, Reply, sse};
    use serde_json::json;

    fn client(server: &MockLlm) -> Anthropic {
        let mut client = Anthropic::new(&server.base_url(), "claude-test", "sk-ant-test-key".into()).unwrap();
        client.endpoint.retry = RetryPolicy {
            attempts: 3,
            first_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        };
        client
    }

    fn lookup_tool() -> ToolSpec {
        ToolSpec { name: "catalog.lookup".into(), description: "TMDB".into(), input_schema: json!({"type": "object"}) }
    }

    /// A stream with a text block and a tool call whose arguments arrive in
    /// `fragments`; `usage` on the final delta when given.
    fn stream(text: &str, fragments: &[&str], output_tokens: Option<u64>) -> Vec<u8> {
        let mut events = vec![
            ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 25}}})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "catalog_lookup", "input": {}}}),
            ),
        ];
        for f in fragments {
            events.push(("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": f}})));
        }
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": 1})));
        let usage = output_tokens.map(|n| json!({"output_tokens": n})).unwrap_or(json!({}));
        events.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": usage}),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));
        sse(&events)
    }

    /// Cuts `bytes` into pieces, one cut inside the first multi-byte character.
    fn split_inside_a_character(bytes: Vec<u8>) -> Vec<Vec<u8>> {
        let at = bytes.iter().position(|b| *b >= 0x80).expect("a multi-byte character") + 1;
        let (a, b) = bytes.split_at(at);
        let (b, c) = b.split_at(b.len() / 2);
        vec![a.to_vec(), b.to_vec(), c.to_vec()]
    }

    #[tokio::test]
    async fn text_and_tool_calls_stream_back_with_split_characters_and_mapped_names() {
        let text = "Dune – Part Two ✓ 沙丘";
        let body = stream(text, &["", "{\"action\":\"se", "arch\",\"query\":\"Dune\"}"], Some(12));
        let server = MockLlm::start(vec![Reply::Stream(split_inside_a_character(body))]).await;
        let request = ModelRequest {
            system: "You manage a media library.".into(),
            messages: vec![
                Message::user_text("Find Dune"),
                Message {
                    role: Role::Assistant,
                    content: vec![Block::ToolUse {
                        id: "toolu_0".into(),
                        name: "catalog.lookup".into(),
                        input: json!({}),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::Text { text: "and be quick".into() },
                        Block::ToolResult { tool_use_id: "toolu_0".into(), content: "{}".into(), is_error: false },
                    ],
                },
            ],
            tools: vec![lookup_tool()].into(),
            max_tokens: 512,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let done = client(&server).complete(&request, tx).await.unwrap();
        assert_eq!(done.text, text);
        assert_eq!(done.stop, StopReason::ToolUse);
        assert_eq!(done.tool_calls.len(), 1);
        assert_eq!(done.tool_calls[0].name, "catalog.lookup", "the wire name maps back to the capability id");
        assert_eq!(done.tool_calls[0].input, Ok(json!({"action": "search", "query": "Dune"})));
        assert_eq!((done.usage.input_tokens, done.usage.output_tokens), (Some(25), Some(12)));
        let mut streamed = String::new();
        while let Ok(event) = rx.try_recv() {
            if let StreamEvent::TextDelta(t) = event {
                streamed.push_str(&t);
            }
        }
        assert_eq!(streamed, text);

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/messages");
        assert_eq!(sent.headers["x-api-key"], "sk-ant-test-key");
        assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
        assert_eq!(sent.body["stream"], true);
        assert_eq!(sent.body["tools"][0]["name"], "catalog_lookup");
        assert_eq!(sent.body["messages"][1]["content"][0]["name"], "catalog_lookup");
        let reply = &sent.body["messages"][2]["content"];
        assert_eq!(
            (reply[0]["type"].as_str(), reply[1]["type"].as_str()),
            (Some("tool_result"), Some("text")),
            "tool results go first"
        );
    }

    #[tokio::test]
    async fn invalid_arguments_are_a_failed_call_and_missing_usage_stays_unknown() {
        let body = stream("", &["{\"query\": \"Du"], None);
        let server = MockLlm::start(vec![Reply::Stream(vec![body])]).await;
        let request = ModelRequest {
            messages: vec![Message::user_text("x")],
            tools: vec![lookup_tool()].into(),
            max_tokens: 64,
            ..Default::default()
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = client(&server).complete(&request, tx).await.unwrap();
        let err = done.tool_calls[0].input.clone().unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        assert_eq!(done.usage.output_tokens, None);
    }

    #[tokio::test]
    async fn overload_is_retried_a_refusal_is_not_and_a_cut_stream_is_an_error() {
        let ok = stream("hi", &["{}"], Some(1));
        let server = MockLlm::start(vec![
            Reply::Status { code: 429, retry_after: Some(0), body: "{\"type\":\"error\"}".into() },
            Reply::Status { code: 529, retry_after: None, body: "overloaded".into() },
            Reply::Stream(vec![ok.clone()]),
            Reply::Stream(vec![ok[..ok.len() / 2].to_vec()]),
            Reply::Status { code: 400, retry_after: None, body: "bad request".into() },
        ])
        .await;
        let request = ModelRequest { messages: vec![Message::user_text("x")], max_tokens: 64, ..Default::default() };
        let model = client(&server);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = model.complete(&request, tx.clone()).await.unwrap();
        assert_eq!(done.text, "hi");
        assert_eq!(server.requests().len(), 3, "two retries, then the answer");

        let cut = model.complete(&request, tx.clone()).await.unwrap_err();
        assert!(matches!(cut, ProviderError::Unavailable(ref m) if m.contains("before message_stop")), "{cut:?}");
        let refused = model.complete(&request, tx).await.unwrap_err();
        assert!(matches!(refused, ProviderError::Invalid(ref m) if m.contains("400")), "{refused:?}");
        assert_eq!(server.requests().len(), 5, "a refusal is not retried");
    }

    #[tokio::test]
    async fn a_silent_server_and_a_quiet_stream_time_out_and_a_dropped_connection_is_an_error() {
        let ok = stream("late but fine", &[], Some(3));
        let server = MockLlm::start(vec![
            Reply::Silent,
            Reply::Stream(vec![ok.clone()]),
            Reply::Hang(vec![ok[..ok.len() / 3].to_vec()]),
            Reply::Break(vec![ok[..ok.len() / 2].to_vec()]),
        ])
        .await;
        let mut model = client(&server);
        // Well above the mock's 200 ms before it breaks a stream, so a
        // stalled machine does not turn a broken stream into a quiet one.
        model.endpoint.response_timeout = Duration::from_millis(1_500);
        model.endpoint.idle_timeout = Duration::from_millis(1_500);
        let request = ModelRequest { messages: vec![Message::user_text("x")], max_tokens: 64, ..Default::default() };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = model.complete(&request, tx.clone()).await.unwrap();
        assert_eq!(done.text, "late but fine", "a server that never answered is asked again");
        assert_eq!(server.requests().len(), 2);

        let quiet = model.complete(&request, tx.clone()).await.unwrap_err();
        assert!(matches!(quiet, ProviderError::Unavailable(ref m) if m.contains("went quiet")), "{quiet:?}");
        let dropped = model.complete(&request, tx).await.unwrap_err();
        assert!(matches!(dropped, ProviderError::Unavailable(ref m) if m.contains("broke")), "{dropped:?}");
        assert_eq!(server.requests().len(), 4, "a stream cut after it began is not replayed by the client");
    }

    #[tokio::test]
    async fn thinking_is_asked_for_and_its_signed_blocks_go_back_with_the_tool_calls() {
        let events = vec![
            ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 30}}})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants Dune; "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "look it up first."}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-abc"}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque=="}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "catalog_lookup", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"query\":\"Dune\"}"}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 2})),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        let server = MockLlm::start(vec![Reply::Stream(vec![sse(&events)])]).await;
        let mut model = client(&server);
        model.endpoint.thinking = capstan::agent::providers::wire::Thinking::Medium;
        let request = ModelRequest {
            messages: vec![Message::user_text("Find Dune")],
            tools: vec![lookup_tool()].into(),
            max_tokens: 512,
            ..Default::default()
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = model.complete(&request, tx).await.unwrap();
        assert_eq!(
            done.reasoning,
            vec![
                Block::Thinking {
                    thinking: "The user wants Dune; look it up first.".into(),
                    signature: "sig-abc".into()
                },
                Block::RedactedThinking { data: "opaque==".into() },
            ]
        );
        assert_eq!(done.text, "", "reasoning is not the answer's text");
        assert_eq!(done.tool_calls[0].input, Ok(json!({"query": "Dune"})));
        let sent = &server.requests()[0].body;
        assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 8192}));
        assert_eq!(sent["max_tokens"], 512 + 8192, "the reasoning budget comes on top of the answer's");

        // The next request returns the reasoning unchanged, before the call.
        let mut answer = done.reasoning.clone();
        answer.push(Block::ToolUse {
            id: "toolu_9".into(),
            name: "catalog.lookup".into(),
            input: json!({"query": "Dune"}),
        });
        let server = MockLlm::start(vec![Reply::Stream(vec![stream("Found it.", &[], Some(2))])]).await;
        let mut model = client(&server);
        model.endpoint.thinking = capstan::agent::providers::wire::Thinking::Medium;
        let follow_up = ModelRequest {
            messages: vec![
                Message::user_text("Find Dune"),
                Message { role: Role::Assistant, content: answer },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_use_id: "toolu_9".into(),
                        content: "{}".into(),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![lookup_tool()].into(),
            max_tokens: 512,
            ..Default::default()
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        model.complete(&follow_up, tx).await.unwrap();
        let sent = &server.requests()[0].body["messages"][1]["content"];
        assert_eq!(
            sent[0],
            json!({"type": "thinking", "thinking": "The user wants Dune; look it up first.", "signature": "sig-abc"})
        );
        assert_eq!(sent[1], json!({"type": "redacted_thinking", "data": "opaque=="}));
        assert_eq!(sent[2]["type"], "tool_use");
    }
}

mod openai {
    //! The OpenAI-compatible client against a loopback server replaying
    //! recorded-shape chunk streams.

    use std::time::Duration;

    use capstan::agent::providers::openai::OpenAiCompatible;
    use capstan::agent::providers::wire::RetryPolicy;
    use capstan::agent::providers::{
        Block, Message, ModelRequest, Provider, ProviderError, Role, StopReason, ToolSpec,
    };
    use capstan_tests::mock_llm::{MockLlm, Reply};
    use serde_json::{Value, json};

    fn client(server: &MockLlm) -> OpenAiCompatible {
        let mut client =
            OpenAiCompatible::new(&format!("{}/v1", server.base_url()), "gpt-test", "sk-test-key".into()).unwrap();
        client.endpoint.retry = RetryPolicy {
            attempts: 3,
            first_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        };
        client
    }

    fn data(chunks: &[Value], done: bool) -> Vec<u8> {
        let mut out = String::new();
        for c in chunks {
            out.push_str(&format!("data: {c}\n\n"));
        }
        if done {
            out.push_str("data: [DONE]\n\n");
        }
        out.into_bytes()
    }

    fn delta(d: Value, finish: Option<&str>) -> Value {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})
    }

    fn request() -> ModelRequest {
        ModelRequest {
            system: "You manage a media library.".into(),
            messages: vec![
                Message::user_text("Find Dune"),
                Message {
                    role: Role::Assistant,
                    content: vec![Block::ToolUse {
                        id: "call_0".into(),
                        name: "release.search".into(),
                        input: json!({"query": "Dune"}),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_use_id: "call_0".into(),
                        content: "{\"releases\":[]}".into(),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "release.search".into(),
                description: "Torznab".into(),
                input_schema: json!({"type": "object"}),
            }]
            .into(),
            max_tokens: 256,
        }
    }

    #[tokio::test]
    async fn fragments_are_grouped_by_index_names_map_back_and_usage_is_read() {
        let body = data(
            &[
                delta(json!({"role": "assistant", "content": "Searching "}), None),
                delta(json!({"content": "again…"}), None),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "release_search", "arguments": ""}}]}),
                    None,
                ),
                delta(
                    json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "release_search", "arguments": "{\"query\":"}}]}),
                    None,
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"query\": \"Dune\", \"kind\": \"movie\"}"}}]}),
                    None,
                ),
                delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": " \"Dune 2\""}}]}), None),
                delta(json!({}), Some("tool_calls")),
                json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}),
            ],
            true,
        );
        let bytes = body.clone();
        let cut = bytes.iter().position(|b| *b >= 0x80).unwrap() + 1;
        let server = MockLlm::start(vec![Reply::Stream(vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()])]).await;
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = client(&server).complete(&request(), tx).await.unwrap();
        assert_eq!(done.text, "Searching again…");
        assert_eq!(done.stop, StopReason::ToolUse);
        assert_eq!(done.tool_calls.len(), 2);
        assert_eq!((done.tool_calls[0].id.as_str(), done.tool_calls[0].name.as_str()), ("call_1", "release.search"));
        assert_eq!(done.tool_calls[0].input, Ok(json!({"query": "Dune", "kind": "movie"})));
        // The second call's arguments never closed: a failed call, not run.
        assert!(done.tool_calls[1].input.as_ref().unwrap_err().contains("not valid JSON"));
        assert_eq!((done.usage.input_tokens, done.usage.output_tokens), (Some(40), Some(9)));

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/chat/completions");
        assert_eq!(sent.headers["authorization"], "Bearer sk-test-key");
        assert_eq!(sent.body["tools"][0]["function"]["name"], "release_search");
        assert_eq!(sent.body["messages"][0]["role"], "system");
        assert_eq!(sent.body["messages"][2]["tool_calls"][0]["function"]["name"], "release_search");
        assert_eq!(sent.body["messages"][3]["role"], "tool");
        assert_eq!(sent.body["messages"][3]["tool_call_id"], "call_0");
    }

    #[tokio::test]
    async fn missing_usage_a_cut_stream_and_retries() {
        let no_usage = data(&[delta(json!({"content": "ok"}), Some("stop"))], true);
        let cut = data(&[delta(json!({"content": "half"}), None)], false);
        let server = MockLlm::start(vec![
            Reply::Status { code: 503, retry_after: None, body: "busy".into() },
            Reply::Stream(vec![no_usage]),
            Reply::Stream(vec![cut]),
            Reply::Status { code: 401, retry_after: None, body: "bad key".into() },
        ])
        .await;
        let model = client(&server);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = model.complete(&request(), tx.clone()).await.unwrap();
        assert_eq!((done.text.as_str(), done.stop), ("ok", StopReason::EndTurn));
        assert_eq!(done.usage.output_tokens, None, "a server that sends no usage leaves it unknown");
        let err = model.complete(&request(), tx.clone()).await.unwrap_err();
        assert!(matches!(err, ProviderError::Unavailable(ref m) if m.contains("ended before")), "{err:?}");
        let err = model.complete(&request(), tx).await.unwrap_err();
        assert!(matches!(err, ProviderError::Invalid(ref m) if m.contains("401")), "{err:?}");
        assert_eq!(server.requests().len(), 4);
    }

    #[tokio::test]
    async fn a_dropped_connection_is_an_error_and_the_reasoning_effort_is_sent() {
        let half =
            data(&[delta(json!({"content": "Looking"}), None), delta(json!({"content": " for it"}), None)], false);
        let server = MockLlm::start(vec![Reply::Silent, Reply::Break(vec![half])]).await;
        let mut model = client(&server);
        model.endpoint.thinking = capstan::agent::providers::wire::Thinking::High;
        model.endpoint.response_timeout = Duration::from_millis(300);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let err = model.complete(&request(), tx).await.unwrap_err();
        assert!(matches!(err, ProviderError::Unavailable(ref m) if m.contains("broke")), "{err:?}");
        let mut streamed = String::new();
        while let Ok(capstan::agent::providers::StreamEvent::TextDelta(t)) = rx.try_recv() {
            streamed.push_str(&t);
        }
        assert_eq!(streamed, "Looking for it", "what arrived before the cut was streamed");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "the silent server was asked again");
        assert_eq!(requests[1].body["reasoning_effort"], "high");
    }
}
