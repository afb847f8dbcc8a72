//! Every body is checked against its operation's schema in the served
//! OpenAPI document before a handler uses it: the document is the
//! contract, so a body it forbids (a wrong type, a missing or unknown
//! field, an array where an object belongs, a blank text) is a 422 naming
//! the field (by its path, `scope.mediaKinds.0`; an unknown one by its own
//! name), and one it allows reaches the handler's own checks. The one
//! content type taken is `application/json`: any other (`+json` types
//! too) is a 415, so no body reaches a handler unchecked. An operation
//! whose body the document marks optional takes an empty one as "none"
//! ([`NoBody`]), whatever its content type.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Value, json};

use super::BODY_LIMIT;
use super::error::ApiError;

/// The request-body schema of each operation, by method and route, and
/// whether the operation needs a body at all.
#[derive(Clone, Default)]
pub(crate) struct BodySchemas(Arc<HashMap<(String, String), (jsonschema::Validator, bool)>>);

impl BodySchemas {
    /// Compiles the `application/json` request schemas of `doc`; each
    /// resolves `#/components/...` against the document's components.
    pub(crate) fn from_document(doc: &Value) -> BodySchemas {
        let mut validators = HashMap::new();
        let components = doc.get("components").cloned().unwrap_or_else(|| json!({}));
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                let Some(schema) = operation.pointer("/requestBody/content/application~1json/schema") else {
                    continue;
                };
                let root = json!({ "allOf": [schema], "components": components });
                let required = operation.pointer("/requestBody/required") == Some(&Value::Bool(true));
                match jsonschema::validator_for(&root) {
                    Ok(validator) => {
                        validators.insert((method.to_ascii_uppercase(), path.clone()), (validator, required));
                    }
                    // A schema the validator cannot compile is a bug in the
                    // document, which the document's test catches.
                    Err(e) => tracing::error!(%method, %path, error = %e, "a request schema does not compile"),
                }
            }
        }
        BodySchemas(Arc::new(validators))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Reads and checks the body of every operation the document gives one,
/// whatever its content type says. The verdict is handed to the handler's
/// `ApiJson` rather than answered here, so a caller without authority for
/// what it asks (an invoke's capability label, a run's mode, checked by
/// extractors that come before the body) is told that first.
pub async fn check(State(schemas): State<BodySchemas>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let key = route.map(|r| (request.method().as_str().to_string(), r));
    let Some((validator, required)) = key.as_ref().and_then(|k| schemas.0.get(k)) else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, BODY_LIMIT).await;
    if !required && bytes.as_ref().is_ok_and(|b| b.is_empty()) {
        let mut request = Request::from_parts(parts, Body::empty());
        request.extensions_mut().insert(NoBody);
        return next.run(request).await;
    }
    let verdict = match json_type(&parts.headers) {
        Err(refusal) => Err(refusal),
        Ok(()) => match bytes {
            Err(_) => {
                let message = format!("the body is over {BODY_LIMIT} bytes");
                Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message))
            }
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Err(e) => {
                    Err(ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", format!("the body is not JSON: {e}")))
                }
                Ok(value) => match refusal(validator, &value) {
                    Some(refusal) => Err(refusal),
                    None => Ok(value),
                },
            },
        },
    };
    let mut request = Request::from_parts(parts, Body::empty());
    request.extensions_mut().insert(CheckedBody(verdict));
    next.run(request).await
}

/// `Ok` for `application/json` (any parameters, a UTF-8 charset if one is
/// given), the one type the document lists; 415 for anything else,
/// `+json` types included, which the server would otherwise parse without
/// the document's check.
pub(crate) fn json_type(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let given = headers.get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("(not text)"));
    let Some(given) = given else {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content_type",
            "this endpoint takes a JSON body: send Content-Type: application/json",
        ));
    };
    let mut parts = given.split(';');
    let essence = parts.next().unwrap_or("").trim();
    let charset_ok = parts.filter_map(|p| p.split_once('=')).all(|(name, value)| {
        !name.trim().eq_ignore_ascii_case("charset") || value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
    });
    if essence.eq_ignore_ascii_case("application/json") && charset_ok {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "content_type",
        format!("this endpoint takes application/json (UTF-8), not {given:?}"),
    ))
}

/// The 422 for a value its schema refuses, naming the field.
fn refusal(validator: &jsonschema::Validator, value: &Value) -> Option<ApiError> {
    let error = validator.iter_errors(value).next()?;
    // A JSON pointer, unescaped: `/scope/mediaKinds/0` reads `scope.mediaKinds.0`.
    let at: Vec<String> = error
        .instance_path()
        .to_string()
        .split('/')
        .skip(1)
        .map(|part| part.replace("~1", "/").replace("~0", "~"))
        .collect();
    // A pattern's meaning rather than the expression, and never the
    // value, which may be a secret.
    let meaning = match error.kind() {
        jsonschema::error::ValidationErrorKind::Pattern { pattern } => super::schema::pattern_meaning(pattern),
        jsonschema::error::ValidationErrorKind::Not { schema } => {
            schema.get("pattern").and_then(Value::as_str).and_then(super::schema::pattern_meaning)
        }
        _ => None,
    };
    let message = match (meaning, at.is_empty()) {
        (Some(meaning), _) => {
            format!("{} {meaning}", if at.is_empty() { "the body".to_string() } else { at.join(".") })
        }
        (None, true) => error.to_string(),
        (None, false) => format!("{}: {error}", at.join(".")),
    };
    // The field is where the fault is, and an unknown one by its own
    // name: `agent.maxToolCals`, not the object holding it.
    let mut field = at;
    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() {
        field.extend(unexpected.first().cloned());
    }
    let field = field.join(".");
    let refusal = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message);
    Some(if field.is_empty() { refusal } else { refusal.about(field) })
}

/// A body read and checked against its operation's schema, or why not.
#[derive(Clone)]
pub(crate) struct CheckedBody(pub Result<Value, ApiError>);

/// An operation whose body is optional was sent none.
#[derive(Clone, Copy)]
pub(crate) struct NoBody;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_resolve_the_documents_components() {
        let doc = json!({
            "paths": { "/x": { "post": { "requestBody": { "content": { "application/json": {
                "schema": { "$ref": "#/components/schemas/X" } } } } } } },
            "components": { "schemas": { "X": { "type": "object", "required": ["a"], "additionalProperties": false,
                "properties": { "a": { "type": "string" } } } } },
        });
        let schemas = BodySchemas::from_document(&doc);
        assert_eq!(schemas.len(), 1);
        let (validator, required) = &schemas.0[&("POST".to_string(), "/x".to_string())];
        assert!(!required, "a body the document does not call required may be left out");
        assert!(validator.is_valid(&json!({"a": "b"})));
        for bad in [json!({}), json!([null]), json!({"a": 1}), json!({"a": "b", "c": 1})] {
            assert!(!validator.is_valid(&bad), "{bad}");
        }
    }

    #[test]
    fn a_pattern_is_refused_by_its_meaning_and_never_with_the_value() {
        let schema = json!({"type": "object", "properties": {
            "secret": {"type": "string", "not": {"pattern": crate::setup::kinds::reference_pattern()}},
            "url": {"type": "string", "pattern": crate::text::http_url_pattern()},
            "other": {"type": "string", "pattern": "^x$"},
        }});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let said = |body: Value| refusal(&validator, &body).map(|e| (e.field.unwrap_or_default(), e.message));
        let (field, message) = said(json!({"secret": "env:SECRET_NAME"})).unwrap();
        assert_eq!(
            (field.as_str(), message.as_str()),
            ("secret", "secret must be the secret itself, not env:... or file:...")
        );
        assert_eq!(said(json!({"url": "ftp://x"})).unwrap().1, "url must be an http or https URL");
        assert!(said(json!({"other": "y"})).unwrap().1.contains("does not match"), "an unknown pattern as it is");
        assert!(said(json!({"url": "http://x", "secret": "k"})).is_none());
    }
}
