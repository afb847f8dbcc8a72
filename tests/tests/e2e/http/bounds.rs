//! The bounds the server enforces are the served OpenAPI document's: for
//! each, a body (or parameter) just past it is refused by the document's
//! own schema, compiled as the server compiles it, and by the server (422
//! for a body, as the parameter's check answers for a query or path); one
//! just inside it is one the schema allows and, where the request can
//! succeed here, one the server takes.

use capstan_tests::api::{Api, serve};
use capstan_tests::db::Backend;
use reqwest::Method;
use serde_json::{Value, json};

use crate::storage::ledger::env;

/// A bound on a body: bodies just past it, and one just inside.
struct Bound {
    what: &'static str,
    method: Method,
    /// The operation's path in the document.
    route: &'static str,
    /// The path called.
    path: String,
    past: Vec<Value>,
    inside: Value,
    /// Whether the server takes the body inside the bound here (2xx);
    /// otherwise it depends on more than the body (a policy that exists,
    /// a title TMDB knows).
    taken: bool,
}

/// A bound on a query or path parameter.
struct ParamBound {
    what: &'static str,
    method: Method,
    route: &'static str,
    name: &'static str,
    past: Value,
    inside: Value,
    /// The path called with the value past the bound, and the answer.
    call: String,
    refused: u16,
    body: Value,
}

fn bound(what: &'static str, method: Method, route: &'static str, past: Vec<Value>, inside: Value) -> Bound {
    let path = route.trim_start_matches("/api/v1").to_string();
    Bound { what, method, route, path, past, inside, taken: false }
}

impl Bound {
    fn at(mut self, path: String) -> Bound {
        self.path = path;
        self
    }

    fn taken(mut self) -> Bound {
        self.taken = true;
        self
    }
}

/// The request schema of `method route`, compiled as the body check does.
fn body_schema(doc: &Value, method: &Method, route: &str) -> jsonschema::Validator {
    let operation = &doc["paths"][route][method.as_str().to_ascii_lowercase()];
    let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {route} documents no body");
    jsonschema::validator_for(&json!({ "allOf": [schema], "components": doc["components"] })).unwrap()
}

fn param_schema(doc: &Value, method: &Method, route: &str, name: &str) -> jsonschema::Validator {
    let operation = &doc["paths"][route][method.as_str().to_ascii_lowercase()];
    let parameters = operation["parameters"].as_array().unwrap_or_else(|| panic!("{method} {route}: no parameters"));
    let parameter = parameters.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{route}: no {name}"));
    jsonschema::validator_for(&parameter["schema"]).unwrap()
}

/// Bodies past and inside every bound the document states beyond types.
fn body_bounds(grant: &str, folder: &str) -> Vec<Bound> {
    use Method as M;
    let long = |n: usize| "é".repeat(n);
    let grant_path = format!("/automation-grants/{grant}");
    let library = "/api/v1/setup/library";
    let service = "/api/v1/setup/services/{name}";
    let grants = "/api/v1/automation-grants";
    let titles = "/api/v1/library/titles";
    let torznab = |extra: Value| {
        let mut body = json!({"baseUrl": "http://127.0.0.1:9/api", "secret": "k"});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    let series = |seasons: Value| json!({"tmdbId": 126308, "kind": "tv", "quality": "1080p", "seasons": seasons});
    vec![
        bound(
            "a movie template is 1 to 500 characters",
            M::PUT,
            library,
            vec![json!({"movieTemplate": long(501)}), json!({"movieTemplate": " \t"})],
            json!({"movieTemplate": long(500)}),
        )
        .taken(),
        bound(
            "an episode template is 1 to 500 characters",
            M::PUT,
            library,
            vec![json!({"episodeTemplate": long(501)}), json!({"episodeTemplate": ""})],
            json!({"episodeTemplate": "{Series Title} - S{season:00}E{episode:00}"}),
        )
        .taken(),
        bound(
            "a library mode is hardlink, copy or move",
            M::PUT,
            library,
            vec![json!({"mode": "symlink"})],
            json!({"mode": "move"}),
        )
        .taken(),
        bound(
            "a service's URL is http or https, without a query, fragment or credentials",
            M::PUT,
            service,
            vec![
                torznab(json!({"baseUrl": "ftp://127.0.0.1:9/api"})),
                torznab(json!({"baseUrl": "http://127.0.0.1:9/api?t=caps"})),
                torznab(json!({"baseUrl": "http://127.0.0.1:9/#top"})),
                torznab(json!({"baseUrl": "http://me:pw@127.0.0.1:9/"})),
                torznab(json!({"baseUrl": "http://"})),
            ],
            torznab(json!({"baseUrl": " HTTP://127.0.0.1:9/api/ "})),
        )
        .at("/setup/services/torznab".into())
        .taken(),
        bound(
            "a service's token kind is apiKey or readToken",
            M::PUT,
            service,
            vec![torznab(json!({"tokenKind": "bearer"}))],
            torznab(json!({"tokenKind": "readToken"})),
        )
        .at("/setup/services/torznab-2".into())
        .taken(),
        bound(
            "a service's secret is sent as typed, never read from elsewhere",
            M::PUT,
            service,
            vec![torznab(json!({"secret": " env:HOME"})), torznab(json!({"secret": "file:/etc/passwd"}))],
            torznab(json!({"secret": "envy:HOME"})),
        )
        .at("/setup/services/torznab-3".into())
        .taken(),
        bound(
            "a root is an absolute path",
            M::PUT,
            "/api/v1/setup/roots/{name}",
            vec![json!({"path": "srv/downloads"}), json!({"path": " "})],
            json!({"path": format!(" {folder}")}),
        )
        .at("/setup/roots/downloads".into())
        .taken(),
        bound(
            "a model's URL is http or https",
            M::PATCH,
            "/api/v1/settings",
            vec![
                json!({"model.base_url": "ftp://models.example/v1"}),
                json!({"pi": {"baseUrl": "http://:80/v1"}}),
                json!({"pi": {"baseUrl": "https://models example/v1"}}),
            ],
            json!({"pi": {"baseUrl": "https://models.example:8443/v1"}}),
        )
        .taken(),
        bound(
            "TMDB's URL is http or https, without a query",
            M::PATCH,
            "/api/v1/settings",
            vec![
                json!({"metadata": {"tmdbApiKey": "k", "tmdbBaseUrl": "https://tmdb.example/3?language=en"}}),
                json!({"metadata": {"tmdbBaseUrl": " "}}),
            ],
            json!({"metadata": {"tmdbApiKey": "k", "tmdbBaseUrl": "https://tmdb.example/3/"}}),
        )
        .taken(),
        bound(
            "TMDB's key is sent as typed",
            M::PATCH,
            "/api/v1/settings",
            vec![json!({"metadata": {"tmdbApiKey": "env:TMDB_API_KEY"}})],
            json!({"metadata": {"tmdbApiKey": "environment"}}),
        )
        .taken(),
        bound(
            "a grant's reason is at most 500 characters",
            M::POST,
            grants,
            vec![json!({"action": "test.counter-safe", "reason": long(501)})],
            json!({"action": "test.counter-safe", "reason": long(500)}),
        )
        .taken(),
        bound(
            "a grant allows 1 to 100,000 calls a day",
            M::POST,
            grants,
            vec![
                json!({"action": "test.counter-safe", "dailyInvocations": 100_001}),
                json!({"action": "test.counter-safe", "dailyInvocations": 0}),
            ],
            json!({"action": "test.counter-safe", "dailyInvocations": 100_000}),
        )
        .taken(),
        bound(
            "a policy revision id is <name>@<revision>",
            M::POST,
            grants,
            vec![
                json!({"action": "download.recheck", "policyRevisionId": "automation.recover"}),
                json!({"action": "download.recheck", "policyRevisionId": "automation.recover@0"}),
                json!({"action": "download.recheck", "policyRevisionId": "@1"}),
                json!({"action": "download.recheck", "policyRevisionId": "automation.recover@9223372036854775808"}),
            ],
            json!({"action": "download.recheck", "policyRevisionId": "automation.recover@999999999999999999"}),
        ),
        bound(
            "a policy revision id names the revision alone; a name and a revision go together",
            M::POST,
            grants,
            vec![
                json!({"action": "download.recheck", "policyRevisionId": "a@1", "policyName": "a"}),
                json!({"action": "download.recheck", "policyRevisionId": "a@1", "policyRevision": 1}),
                json!({"action": "download.recheck", "policyName": "a"}),
                json!({"action": "download.recheck", "policyRevision": 1, "policyName": null}),
            ],
            json!({"action": "download.recheck", "policyName": "a", "policyRevision": 1, "policyRevisionId": null}),
        ),
        bound(
            "a grant's calls can only shrink, to 0 at least",
            M::PATCH,
            "/api/v1/automation-grants/{id}",
            vec![json!({"dailyInvocations": -1}), json!({"dailyInvocations": 100_001})],
            json!({"dailyInvocations": 0}),
        )
        .at(grant_path.clone())
        .taken(),
        bound(
            "a grant's bytes can only shrink, to 0 at least",
            M::PATCH,
            "/api/v1/automation-grants/{id}",
            vec![json!({"dailyBytes": -1}), json!({"dailyBytes": 1_000_000_000_001_i64})],
            json!({"dailyBytes": 0}),
        )
        .at(grant_path),
        bound(
            "a TMDB id is a positive i64",
            M::POST,
            titles,
            vec![json!({"tmdbId": 9_223_372_036_854_775_808_u64, "kind": "movie", "quality": "1080p"})],
            json!({"tmdbId": i64::MAX, "kind": "movie", "quality": "1080p"}),
        ),
        bound(
            "a series' seasons are at least one, each a u32",
            M::POST,
            titles,
            vec![series(json!([])), series(json!([4_294_967_296_u64])), series(json!([-1]))],
            series(json!([4_294_967_295_u32])),
        ),
        bound(
            "a movie has no seasons",
            M::POST,
            titles,
            vec![json!({"tmdbId": 693134, "kind": "movie", "quality": "1080p", "seasons": [1]})],
            json!({"tmdbId": 693134, "kind": "movie", "quality": "1080p", "seasons": null}),
        ),
    ]
}

fn param_bounds() -> Vec<ParamBound> {
    let title = "/api/v1/library/titles/{entityId}";
    let quality = json!({"quality": "1080p"});
    vec![
        ParamBound {
            what: "an entity id is not blank",
            method: Method::PATCH,
            route: title,
            name: "entityId",
            past: json!(" "),
            inside: json!("x"),
            call: "/library/titles/%20".into(),
            refused: 400,
            body: quality,
        },
        ParamBound {
            what: "an entity id is not blank",
            method: Method::DELETE,
            route: title,
            name: "entityId",
            past: json!("\u{b}"),
            inside: json!("x"),
            call: "/library/titles/%0B".into(),
            refused: 400,
            body: Value::Null,
        },
        ParamBound {
            what: "a season is a u32",
            method: Method::DELETE,
            route: title,
            name: "season",
            past: json!(4_294_967_296_u64),
            inside: json!(4_294_967_295_u32),
            call: "/library/titles/x?season=4294967296".into(),
            refused: 400,
            body: Value::Null,
        },
        ParamBound {
            what: "a season in a path is a u32",
            method: Method::PUT,
            route: "/api/v1/library/titles/{entityId}/seasons/{season}/episodes",
            name: "season",
            past: json!(4_294_967_296_u64),
            inside: json!(4_294_967_295_u32),
            call: "/library/titles/x/seasons/4294967296/episodes".into(),
            refused: 400,
            body: json!({"monitored": true}),
        },
        ParamBound {
            what: "an entity id is not blank",
            method: Method::GET,
            route: "/api/v1/library/titles/{entityId}/episodes",
            name: "entityId",
            past: json!(" "),
            inside: json!("x"),
            call: "/library/titles/%20/episodes".into(),
            refused: 400,
            body: Value::Null,
        },
        ParamBound {
            what: "a run's event seq is an i64",
            method: Method::GET,
            route: "/api/v1/agent/runs/{id}",
            name: "afterSeq",
            past: json!(9_223_372_036_854_775_808_u64),
            inside: json!(i64::MAX),
            call: "/agent/runs/x?afterSeq=9223372036854775808".into(),
            refused: 400,
            body: Value::Null,
        },
        ParamBound {
            what: "an event seq is an i64",
            method: Method::GET,
            route: "/api/v1/events",
            name: "after",
            past: json!(9_223_372_036_854_775_808_u64),
            inside: json!(i64::MAX),
            call: "/events?after=9223372036854775808".into(),
            refused: 400,
            body: Value::Null,
        },
        ParamBound {
            what: "a service is one the console sets up",
            method: Method::PUT,
            route: "/api/v1/setup/services/{name}",
            name: "name",
            past: json!("sonarr"),
            inside: json!("torznab-3"),
            call: "/setup/services/sonarr".into(),
            refused: 404,
            body: json!({"baseUrl": "http://127.0.0.1:9", "secret": "k"}),
        },
        ParamBound {
            what: "a quality profile is named quality.<name>",
            method: Method::PUT,
            route: "/api/v1/policies/{name}",
            name: "name",
            past: json!("movies"),
            inside: json!("quality.movies"),
            call: "/policies/movies".into(),
            refused: 422,
            body: json!({"preferredResolutions": ["1080p"]}),
        },
        ParamBound {
            what: "a root is downloads or library",
            method: Method::PUT,
            route: "/api/v1/setup/roots/{name}",
            name: "name",
            past: json!("media"),
            inside: json!("library"),
            call: "/setup/roots/media".into(),
            refused: 404,
            body: json!({"path": "/"}),
        },
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_the_document_allows_is_one_the_server_takes() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    let doc = admin.json("/openapi.json").await;
    let (status, grant) = admin.post("/automation-grants", json!({"action": "test.counter-safe"})).await;
    assert_eq!(status, 201, "{grant}");
    let folder = tempfile::tempdir().unwrap();

    for b in body_bounds(grant["id"].as_str().unwrap(), folder.path().to_str().unwrap()) {
        let schema = body_schema(&doc, &b.method, b.route);
        for past in &b.past {
            assert!(!schema.is_valid(past), "{}: the document allows {past}", b.what);
            let (status, answer) = admin.send(b.method.clone(), &b.path, past.clone()).await;
            assert_eq!(status, 422, "{}: {} {} {past} answered {answer}", b.what, b.method, b.path);
        }
        let errors: Vec<String> = schema.iter_errors(&b.inside).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: the document refuses {}: {errors:?}", b.what, b.inside);
        if b.taken {
            let (status, answer) = admin.send(b.method.clone(), &b.path, b.inside.clone()).await;
            assert!(
                (200..300).contains(&status),
                "{}: {} {} {} answered {status} {answer}",
                b.what,
                b.method,
                b.path,
                b.inside
            );
        }
    }

    for p in param_bounds() {
        let schema = param_schema(&doc, &p.method, p.route, p.name);
        assert!(!schema.is_valid(&p.past), "{}: the document allows {}", p.what, p.past);
        assert!(schema.is_valid(&p.inside), "{}: the document refuses {}", p.what, p.inside);
        let (status, answer) = admin.send(p.method.clone(), &p.call, p.body.clone()).await;
        assert_eq!(status, p.refused, "{}: {} {} answered {answer}", p.what, p.method, p.call);
    }
}
