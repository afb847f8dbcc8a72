//! Links a service gave out (an indexer's download link), sent by a
//! hostile component through a real loopback server: a link on the
//! service's own address is read with the service's key — filled into the
//! `[redacted]` slot where the component only ever saw the mask, else
//! appended — and the key never comes back (a file that carries it is
//! refused rather than corrupted by masking); a link anywhere else, one that
//! writes, one that would reach a write path, or one that sets the key
//! itself is refused before anything is sent.

use capstan::config::{Auth, SecretRef};
use capstan::runtime::{CallOutcome, EffectClass};
use capstan_tests::mock_router::MockRouter;
use serde_json::json;

use super::outbound_edges::{KEY, PASSWORD, answer, leaks, send, start};

fn query_key() -> Auth {
    Auth::Query { name: "apikey".into(), value: SecretRef(KEY.into()) }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_on_the_service_s_address_is_read_with_its_key() {
    let router = MockRouter::start(PASSWORD).await;
    let (_h, runtime) = start(&router, query_key()).await;
    let base = router.base_url();
    let origin = base.strip_suffix("/svc").unwrap();
    let encoded_key: String = form_urlencoded::byte_serialize(KEY.as_bytes()).collect();

    // Jackett's shape: the key under its own name, as a slot; the rest of
    // the query byte for byte (`%2B` stays `%2B`).
    let jackett = format!("{origin}/dl/yts/?jackett_apikey=%5Bredacted%5D&path=Q2Z%2BSjh&file=Dune");
    let report = send(&runtime, EffectClass::Read, json!({"path": jackett})).await;
    let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
    let seen = router.seen();
    let sent = seen.last().unwrap();
    assert_eq!(sent.raw_path, "/dl/yts/", "a link outside the API's base path reaches its own path");
    assert_eq!(sent.query, format!("jackett_apikey={encoded_key}&path=Q2Z%2BSjh&file=Dune"));
    let back = format!("{output} {report:?}");
    assert!(!leaks(&back, KEY), "the key came back to the component: {back}");
    assert!(back.contains("[redacted]"), "the component sees where the key went, masked: {back}");

    // Prowlarr's shape, under the base path; with no slot the key is added.
    router.clear();
    let prowlarr = format!("{base}/1/download?link=ZHVuZQ&file=Dune");
    let report = send(&runtime, EffectClass::Read, json!({"path": prowlarr})).await;
    assert_eq!(answer(&report).0, "ok", "{:?}", report.outcome);
    let sent = router.seen().pop().unwrap();
    assert_eq!(
        (sent.routed.as_str(), sent.query.clone()),
        ("/svc/1/download", format!("link=ZHVuZQ&file=Dune&apikey={encoded_key}"))
    );
    assert!(!leaks(&format!("{report:?}"), KEY));

    // A file (not text) that carries the key is refused whole: masked it
    // would be corrupt, unmasked it would show the component the key.
    let file = format!("{base}/reflect/binary?file=Dune");
    let report = send(&runtime, EffectClass::Read, json!({"path": file})).await;
    let said = format!("{:?}", report.outcome);
    assert!(said.contains("carries its credential"), "{said}");
    assert!(!leaks(&said, KEY), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn links_elsewhere_or_that_write_or_set_the_key_are_refused_unsent() {
    let router = MockRouter::start(PASSWORD).await;
    let (_h, runtime) = start(&router, query_key()).await;
    let base = router.base_url();
    let origin = base.strip_suffix("/svc").unwrap();
    let port = origin.rsplit(':').next().unwrap();
    let attacks = [
        // Another address: a different host name, scheme or port.
        (format!("http://localhost:{port}/dl/x?k=%5Bredacted%5D"), "GET"),
        (format!("https://127.0.0.1:{port}/dl/x"), "GET"),
        ("http://127.0.0.1:9/dl/x?apikey=%5Bredacted%5D".to_string(), "GET"),
        (format!("http://evil.example@127.0.0.1:{port}/dl/x"), "GET"),
        // On the address, but a write, a write path, a reshaped path, or
        // a key the component chose.
        (format!("{origin}/dl/x"), "POST"),
        (format!("{base}/admin/delete"), "GET"),
        (format!("{base}/danger"), "GET"),
        (format!("{origin}/dl/../svc/admin/x"), "GET"),
        (format!("{origin}/dl/%2e%2e/svc/admin/x"), "GET"),
        (format!("{origin}/dl/x?apikey=guessed"), "GET"),
        (format!("{origin}/dl/x?APIKEY=guessed"), "GET"),
        (format!("{origin}/dl/x?_method=DELETE"), "GET"),
        (format!("{origin}/dl/x\r\nX-Injected: 1"), "GET"),
    ];
    for (link, method) in &attacks {
        let report = send(&runtime, EffectClass::Read, json!({"path": link, "method": method})).await;
        let (kind, message) = answer(&report);
        assert!(kind == "invalid-input" || kind == "denied", "{method} {link} got through: {kind} {message}");
    }
    assert!(router.seen().is_empty(), "nothing was sent: {:?}", router.seen());

    // A service whose key is a header has no query slot to fill.
    let header = Auth::Header {
        name: "X-Api-Key".into(),
        value: SecretRef(KEY.into()),
        prefix: String::new(),
        suffix: String::new(),
    };
    let (_h, runtime) = start(&router, header).await;
    let report = send(&runtime, EffectClass::Read, json!({"path": format!("{origin}/dl/x?k=%5Bredacted%5D")})).await;
    let (kind, message) = answer(&report);
    assert_eq!(kind, "invalid-input", "{message}");
    assert!(message.contains("not a query parameter"), "{message}");
    assert!(router.seen().is_empty());
}
