//! Every JSON body is checked against its operation's schema in the
//! served OpenAPI document before a handler sees it: the document is the
//! contract, so a body it forbids (a wrong type, a missing or unknown
//! field, an array where an object belongs, a blank text) is a 422 naming
//! the field (by its path, `scope.mediaKinds.0`; an unknown one by its own
//! name), and one it allows reaches the handler's own checks. Bodies
//! that are not JSON at all are left to `ApiJson`, which says so.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::BODY_LIMIT;
use super::error::ApiError;

/// The request-body schema of each operation, by method and route.
#[derive(Clone, Default)]
pub struct BodySchemas(Arc<HashMap<(String, String), jsonschema::Validator>>);

impl BodySchemas {
    /// Compiles the `application/json` request schemas of `doc`; each
    /// resolves `#/components/...` against the document's components.
    pub fn from_document(doc: &Value) -> BodySchemas {
        let mut validators = HashMap::new();
        let components = doc.get("components").cloned().unwrap_or_else(|| json!({}));
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                let Some(schema) = operation.pointer("/requestBody/content/application~1json/schema") else {
                    continue;
                };
                let root = json!({ "allOf": [schema], "components": components });
                match jsonschema::validator_for(&root) {
                    Ok(validator) => {
                        validators.insert((method.to_ascii_uppercase(), path.clone()), validator);
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

/// Checks a JSON body against its operation's schema.
pub async fn check(State(schemas): State<BodySchemas>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let key = route.map(|r| (request.method().as_str().to_string(), r));
    let Some(validator) = key.as_ref().and_then(|k| schemas.0.get(k)) else { return next.run(request).await };
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !is_json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let message = format!("the body is over {} bytes", BODY_LIMIT);
            return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message).into_response();
        }
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        // Malformed JSON goes on to the handler's extractor, which says so.
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    };
    if let Some(error) = validator.iter_errors(&value).next() {
        // A JSON pointer, unescaped: `/scope/mediaKinds/0` reads `scope.mediaKinds.0`.
        let at: Vec<String> = error
            .instance_path()
            .to_string()
            .split('/')
            .skip(1)
            .map(|part| part.replace("~1", "/").replace("~0", "~"))
            .collect();
        let message = if at.is_empty() { error.to_string() } else { format!("{}: {error}", at.join(".")) };
        // The field is where the fault is, and an unknown one by its own
        // name: `agent.maxToolCals`, not the object holding it.
        let mut field = at;
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() {
            field.extend(unexpected.first().cloned());
        }
        let field = field.join(".");
        let refusal = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message);
        return if field.is_empty() { refusal } else { refusal.about(field) }.into_response();
    }
    // Parsed once: the handler's extractor takes the value as it is.
    let mut request = Request::from_parts(parts, Body::empty());
    request.extensions_mut().insert(CheckedBody(value));
    next.run(request).await
}

/// A JSON body already parsed and checked against its schema.
#[derive(Clone)]
pub struct CheckedBody(pub Value);

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
        let validator = &schemas.0[&("POST".to_string(), "/x".to_string())];
        assert!(validator.is_valid(&json!({"a": "b"})));
        for bad in [json!({}), json!([null]), json!({"a": 1}), json!({"a": "b", "c": 1})] {
            assert!(!validator.is_valid(&bad), "{bad}");
        }
    }
}
