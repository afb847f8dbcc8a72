//! HTTP benchmark: prints figures, asserts nothing. `wrk` (a load
//! generator in a process of its own, installed by `scripts/bench.sh`)
//! drives `POST /api/v1/capabilities/{id}/invoke` of read capabilities —
//! API-key authentication, the body and input checked against their
//! schemas, metrics and an audit append per request — over loopback with
//! 1, 16 and 64 connections. Beside each row, in the same run, the same
//! load goes to a bare axum JSON echo route served by this same build in
//! this same process: the machine is shared and noisy, so the ratio is the
//! figure to compare between runs, not the absolute rate.
//!
//! Then the same read through `/mcp` (`tools/call` of the 2026-07-28
//! revision: no session, one POST a call) beside the HTTP invoke in the
//! same run, with the ratio of their medians (the goal is at most 1.2).
//! Beside it, the SDK's own floor: the same call to a bare server of the
//! same SDK, configured as `/mcp` is, whose tool answers at once, against
//! the bare echo route — what any server built on the SDK pays per call
//! before it does any work.
//!
//! Run with `cargo bench -p capstan-tests --bench http` (`BENCH_SECONDS`
//! sets each row's length, 4 by default; `BENCH_TRACE_SQL=1` prints every
//! statement sqlx runs, to count a request's; `BENCH_ONLY_MCP=1` runs the
//! MCP rows alone, to profile them).

use axum::Json;
use axum::routing::post;
use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::load::{Load, wrk, wrk_with};
use serde_json::{Value, json};

/// Serves the bare routes: `/echo`, the JSON body back, nothing else;
/// `/echo-waits`, the same after [`one_wait`].
async fn serve_echo() -> String {
    let app = axum::Router::new().route("/echo", post(|Json(body): Json<Value>| async move { Json(body) })).route(
        "/echo-waits",
        post(|Json(body): Json<Value>| async move {
            one_wait().await;
            Json(body)
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/echo", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// One round trip to a thread outside the runtime's workers, as a
/// handler that waits for its database makes (sqlx's SQLite driver runs
/// on a thread of its own).
async fn one_wait() {
    tokio::task::spawn_blocking(|| ()).await.unwrap();
}

fn row(id: &str, connections: usize, echo: &Load, invoke: &Load) {
    let errors = if invoke.errors + echo.errors > 0 {
        format!("   ({} + {} non-2xx answers)", invoke.errors, echo.errors)
    } else {
        String::new()
    };
    println!(
        "{id:<16} {connections:>3} conn: invoke {:>7.0} req/s (p50 {:>6.2} ms, p99 {:>6.2} ms) | bare echo {:>7.0} req/s | {:>5.1}% of the echo{errors}",
        invoke.rate,
        invoke.p50_ms,
        invoke.p99_ms,
        echo.rate,
        100.0 * invoke.rate / echo.rate,
    );
}

fn main() {
    capstan_tests::load::trace_sql_if_asked();
    let secs: u64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let host = TestHost::new();
    host.drop_plugin(components::PROBE_LITE, "probe-lite.wasm");
    let (base, key, echo) = rt.block_on(async {
        let db = Db::open(&host.config.database_url()).await.unwrap();
        let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
        app.flush_component_events().await.unwrap();
        let key = capstan::http::keys::create(&db, "bench", &[EffectClass::Read], "bench").await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api/v1", listener.local_addr().unwrap());
        tokio::spawn(capstan::http::serve(listener, app, Default::default(), std::future::pending()));
        (base, key, serve_echo().await)
    });
    let bare_mcp = rt.block_on(bare_mcp::serve());
    let cases = [
        ("test.probe", json!({}), vec![1, 16, 64]),
        (
            "release.inspect",
            json!({ "name": "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv" }),
            vec![16],
        ),
    ];
    let cases = if std::env::var_os("BENCH_ONLY_MCP").is_some() { &cases[..0] } else { &cases[..] };
    for (id, input, connections) in cases {
        let body = json!({ "input": input }).to_string();
        let url = format!("{base}/capabilities/{id}/invoke");
        wrk(&url, Some(&key), &body, 4, 1); // warm-up
        for &c in connections {
            // The anchor first, then the invoke, each with the same load
            // (`BENCH_NO_ANCHOR=1` leaves the anchor out, for profiling).
            let echo = match std::env::var_os("BENCH_NO_ANCHOR") {
                Some(_) => Load { rate: f64::NAN, p50_ms: f64::NAN, p99_ms: f64::NAN, errors: 0, requests: 0 },
                None => wrk(&echo, None, &body, c, secs),
            };
            let invoke = wrk(&url, Some(&key), &body, c, secs);
            row(id, c, &echo, &invoke);
        }
    }
    mcp_beside_invoke(&base, &key, &echo, &bare_mcp, secs);
}

/// `tools/call` through `/mcp` beside `POST /capabilities/{id}/invoke`,
/// the same trivial read with the same key and load.
fn mcp_beside_invoke(base: &str, key: &str, echo: &str, bare_mcp: &str, secs: u64) {
    let mcp = base.replace("/api/v1", "/mcp");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test.probe", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "test.probe"),
    ];
    let invoke_url = format!("{base}/capabilities/test.probe/invoke");
    let invoke_body = json!({ "input": {} }).to_string();
    wrk_with(&mcp, Some(key), &headers, &call, 4, 1); // warm-up
    for c in [1, 16] {
        let invoke = wrk(&invoke_url, Some(key), &invoke_body, c, secs);
        let over_mcp = wrk_with(&mcp, Some(key), &headers, &call, c, secs);
        let errors = if invoke.errors + over_mcp.errors > 0 {
            format!("   ({} + {} non-2xx answers)", over_mcp.errors, invoke.errors)
        } else {
            String::new()
        };
        println!(
            "mcp tools/call   {c:>3} conn: {:>7.0} req/s (p50 {:>6.2} ms, p99 {:>6.2} ms) | invoke {:>7.0} req/s (p50 {:>6.2} ms) | p50 {:.2}x the invoke's (goal <= 1.2){errors}",
            over_mcp.rate,
            over_mcp.p50_ms,
            over_mcp.p99_ms,
            invoke.rate,
            invoke.p50_ms,
            over_mcp.p50_ms / invoke.p50_ms,
        );
        // The floor: what the SDK alone adds to a call, beside the share of
        // the invoke's median the goal leaves for it.
        let bare = wrk(&format!("{echo}-waits"), None, &invoke_body, c, secs);
        let floor = wrk_with(bare_mcp, None, &headers, &call, c, secs);
        println!(
            "  sdk floor      {c:>3} conn: bare SDK server p50 {:>6.2} ms, bare echo p50 {:>6.2} ms: the SDK adds {:>5.2} ms a call; the goal leaves {:>5.2} ms",
            floor.p50_ms,
            bare.p50_ms,
            floor.p50_ms - bare.p50_ms,
            0.2 * invoke.p50_ms,
        );
    }
}

/// A bare server of the same SDK, set up as `/mcp` is (stateless, plain
/// JSON answers), whose one tool answers at once.
mod bare_mcp {
    use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
    use rmcp::service::RequestContext;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    use rmcp::{ErrorData, RoleServer, ServerHandler};
    use std::sync::Arc;

    #[derive(Clone)]
    struct Bare;

    impl ServerHandler for Bare {
        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            super::one_wait().await;
            Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text("ok")])))
        }
    }

    pub async fn serve() -> String {
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_json_response(true);
        let service = StreamableHttpService::new(|| Ok(Bare), Arc::new(LocalSessionManager::default()), config);
        let app = axum::Router::new().route_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }
}
