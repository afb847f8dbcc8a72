//! The OpenAPI document served at `/api/v1/openapi.json`. It is built from
//! the handlers' own `#[utoipa::path]` annotations as the router registers
//! them, so a route cannot exist without appearing in the document.

use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use super::session::COOKIE;

/// Every error answer.
#[derive(Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong, without internals.
#[derive(Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// A stable code such as `not_found`, `invalid_body`, `forbidden`.
    pub code: String,
    pub message: String,
    /// The input the message is about, when it is one field's fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key from `capstan admin create-key`, as `Bearer cap_...`"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "consoleSession",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                COOKIE,
                "A console administrator's session; writes also need the X-CSRF-Token header",
            ))),
        );
    }
}

/// The document's fixed parts; the paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(title = "Capstan API", description = "The HTTP API of a Capstan host: capabilities, authorisation, settings, audit."),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&Security)
)]
pub(crate) struct ApiDoc;

/// The document as served: the schemas written out by hand in place of
/// their placeholders, and the answers every operation of a kind can give,
/// whatever its handler says — the extractors, the body check and the
/// authentication refuse the same way everywhere (`extract`, `bodies`,
/// `auth`), so the document says so once, here.
pub fn complete(mut doc: serde_json::Value) -> serde_json::Value {
    use serde_json::json;
    written_out(&mut doc);
    let error = |description: &str| {
        json!({
            "description": description,
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } },
        })
    };
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else { return doc };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, operation) in item.iter_mut() {
            let Some(operation) = operation.as_object_mut() else { continue };
            // Handlers of different resources share names (`list`, `get`):
            // the document's ids come from the method and the path instead.
            operation.insert("operationId".into(), json!(operation_id(method, path)));
            let needs = axum::http::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                .ok()
                .and_then(|m| super::authority::needs(&m, path));
            if let Some(needs) = needs {
                operation.insert("x-capstan-authority".into(), json!(needs.as_str()));
            }
            let mut shared = Vec::new();
            if operation.contains_key("requestBody") {
                shared.push(("400", "Malformed JSON"));
                shared.push(("413", "A body over 1 MiB"));
                shared.push(("415", "A body that is not application/json"));
                shared.push(("422", "A body of the wrong shape: wrong types, missing or unknown fields"));
            }
            // A parameter left out is how "none" is said: a query string or
            // a header cannot carry a JSON null.
            if let Some(list) = operation.get_mut("parameters").and_then(|p| p.as_array_mut()) {
                for parameter in list {
                    if let Some(types) = parameter.pointer_mut("/schema/type").and_then(|t| t.as_array_mut()) {
                        types.retain(|t| t != "null");
                        if types.len() == 1 {
                            let only = types[0].clone();
                            parameter["schema"]["type"] = only;
                        }
                    }
                }
            }
            let parameters = operation.get("parameters").and_then(|p| p.as_array()).is_some_and(|p| !p.is_empty());
            if parameters {
                shared.push(("400", "A query string or path that cannot be read as this operation's parameters"));
            }
            // An operation open to anyone lists an empty requirement.
            let security = operation.get("security").and_then(|s| s.as_array()).cloned().unwrap_or_default();
            let open = security.is_empty() || security.iter().any(|r| r.as_object().is_some_and(|r| r.is_empty()));
            if !open {
                shared.push(("401", "No valid API key or session"));
            }
            use super::authority::Needs;
            let refusable = matches!(needs, Some(Needs::Console | Needs::Scope(_))) && !open;
            let narrower = matches!(needs, Some(Needs::Console))
                || matches!(needs, Some(Needs::Scope(c)) if c > crate::runtime::EffectClass::Read);
            if narrower {
                shared.push(("403", "Not allowed for this caller: an API key whose scopes do not reach this, or a key where a console session is needed"));
            }
            if method != "get" && (refusable || needs == Some(Needs::Nobody)) {
                shared.push(("403", "Sent from another site's page, or a session's change without its CSRF token"));
            }
            let responses = operation.entry("responses").or_insert_with(|| json!({}));
            let Some(responses) = responses.as_object_mut() else { continue };
            for (status, description) in shared {
                responses.entry(status).or_insert_with(|| error(description));
            }
        }
    }
    doc
}

/// `getAgentRunsById`, `postAgentRunsByIdAbort`: the method, then each
/// segment of the path after `/api/v1`, a parameter as `By` and its name.
pub(crate) fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    let capitalised = |word: &str| {
        let mut chars = word.chars();
        chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
    };
    for segment in path.trim_start_matches("/api/v1").split('/').filter(|s| !s.is_empty()) {
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => id.push_str(&format!("By{}", capitalised(name))),
            None => segment.split(['-', '.']).for_each(|word| id.push_str(&capitalised(word))),
        }
    }
    id
}

/// Puts each [`WrittenOut`] body's schema in place of its placeholder, and
/// adds to a derived schema the rules across its fields that the derive
/// cannot give.
fn written_out(doc: &mut serde_json::Value) {
    use super::routes::{
        acquisition::AcquisitionRequest, approvals::ApprovalChange, decisions::DecisionAnswer, grants,
        settings::SettingsChange, setup::ServiceChange, setup_mcp::McpServerChange, titles::NewTitle,
        titles::QualityChange,
    };
    use super::schema::WrittenOut;
    let schemas = [
        (AcquisitionRequest::NAME, AcquisitionRequest::json()),
        (SettingsChange::NAME, SettingsChange::json()),
        (NewTitle::NAME, NewTitle::json()),
        (QualityChange::NAME, QualityChange::json()),
        (DecisionAnswer::NAME, DecisionAnswer::json()),
        (ApprovalChange::NAME, ApprovalChange::json()),
        (ServiceChange::NAME, ServiceChange::json()),
        (McpServerChange::NAME, McpServerChange::json()),
    ];
    for (name, schema) in schemas {
        if let Some(slot) = doc.pointer_mut(&format!("/components/schemas/{name}")) {
            *slot = schema;
        }
    }
    let rules = [("NewGrant", grants::binding_rules())];
    for (name, rules) in rules {
        let slot = doc.pointer_mut(&format!("/components/schemas/{name}")).and_then(|s| s.as_object_mut());
        if let (Some(schema), Some(rules)) = (slot, rules.as_object()) {
            schema.extend(rules.clone());
        }
    }
}
