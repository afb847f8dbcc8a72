//! Extractors whose every rejection is a JSON `ApiError`: `ApiJson` (a
//! body: malformed JSON 400, a type other than `application/json` 415,
//! too large 413, wrong types or unknown fields 422; it comes last among
//! a handler's extractors, so authority is settled before the body), `ApiQuery` (a query string: 400) and
//! `ApiPath` (path segments: 400). A body's numbers that are whole but
//! written with a fraction (`5.0`) count as the integers they are, as JSON
//! Schema counts them.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use super::error::ApiError;

/// A JSON body; any rejection is a JSON 4xx.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(mut req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let checked = req.extensions_mut().remove::<super::bodies::CheckedBody>();
        let parsed = match checked {
            Some(super::bodies::CheckedBody(verdict)) => Ok(Json(verdict?)),
            None => {
                // An operation without a documented body: the same one type.
                super::bodies::json_type(req.headers())?;
                <Json<Value> as FromRequest<S>>::from_request(req, state).await
            }
        };
        let mut value = match parsed {
            Ok(Json(value)) => value,
            Err(rejection) => {
                let (status, code) = match &rejection {
                    JsonRejection::JsonDataError(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
                    JsonRejection::JsonSyntaxError(_) => (StatusCode::BAD_REQUEST, "malformed_json"),
                    JsonRejection::MissingJsonContentType(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "content_type"),
                    _ if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
                    }
                    _ => (rejection.status(), "bad_request"),
                };
                return Err(ApiError::new(status, code, rejection.body_text()));
            }
        };
        whole_numbers_as_integers(&mut value);
        serde_json::from_value(value).map(ApiJson).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("the body does not fit this endpoint: {e}"),
            )
        })
    }
}

/// Rewrites `5.0` as `5` everywhere in `value` (within i64's range).
/// An optional body: `None` when the operation's body is optional and
/// none was sent (`bodies::NoBody`), else the body as [`ApiJson`] takes it.
impl<S: Send + Sync, T: DeserializeOwned> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        if req.extensions().get::<super::bodies::NoBody>().is_some() {
            return Ok(None);
        }
        <ApiJson<T> as FromRequest<S>>::from_request(req, state).await.map(Some)
    }
}

fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // i64::MAX as f64 rounds up to 2^63, which is out of range; and
            // -2^63 is what a number just below i64::MIN (which serde_json
            // could not read as an integer) rounds to, so it is left a float.
            if f.fract() == 0.0 && f > i64::MIN as f64 && f < i64::MAX as f64 {
                *n = Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// A query string; any rejection is a JSON 400 naming the problem.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|r| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", r.body_text()))
    }
}

/// Path segments; any rejection is a JSON 400 naming the problem.
pub(crate) struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(p)| ApiPath(p))
            .map_err(|r| ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", r.body_text()))
    }
}

/// For an optional body field that may be left out but not sent as
/// `null` (`#[serde(default, deserialize_with = "present")]`), as its
/// schema says.
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A whole-number query parameter: `value`, or `default` when it is
/// absent, if it lies in `min..=max`; otherwise a 400 naming it. The
/// operation's document gives the same bounds.
pub(crate) fn in_range(name: &str, value: Option<i64>, default: i64, min: i64, max: i64) -> Result<i64, ApiError> {
    let value = value.unwrap_or(default);
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        let message = format!("{name} must be {min} to {max}, not {value}");
        Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message).about(name))
    }
}

/// Query parameter `name` as one of a status's or kind's names.
pub fn named<T: capstan_contract::status::Named>(name: &str, value: Option<&str>) -> Result<Option<T>, ApiError> {
    value
        .map(|v| {
            T::parse(v).map_err(|_| {
                let message = format!("{name} must be one of {}, not {v:?}", T::NAMES.join(", "));
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message).about(name)
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_written_with_a_fraction_are_integers() {
        let mut v = serde_json::json!({"a": 5.0, "b": [1.5, -2.0], "c": 1e30, "d": "7.0"});
        whole_numbers_as_integers(&mut v);
        assert_eq!(v, serde_json::json!({"a": 5, "b": [1.5, -2], "c": 1e30, "d": "7.0"}));
        assert!(v["a"].is_i64());
        // Below i64::MIN: read as a float that rounds to -2^63, and left one.
        let mut below: serde_json::Value = serde_json::from_str("-9223372036854775809").unwrap();
        whole_numbers_as_integers(&mut below);
        assert!(below.is_f64(), "{below}");
    }
}
