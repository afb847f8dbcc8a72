//! The OpenAPI document served at `/api/v1/openapi.json`. It is built from
//! the handlers' own `#[utoipa::path]` annotations as the router registers
//! them, so a route cannot exist without appearing in the document.

use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use super::session::COOKIE;

/// Every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong, without internals.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
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
pub struct ApiDoc;
