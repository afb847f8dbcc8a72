//! `GET /api/v1/events`: the global event log. With `Accept:
//! text/event-stream` it is a Server-Sent Events stream — each event's `id:`
//! is its sequence number, a reconnecting client resumes after
//! `Last-Event-ID` (or `?after=`), and a comment line every 15 seconds keeps
//! idle connections open; it ends when the server shuts down. Otherwise it answers one JSON page
//! (`?after=&limit=`), which is how API-key callers poll.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::events::{Event, Events};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::extract::{ApiQuery, in_range};
use crate::http::openapi::ErrorBody;

/// How often an idle stream sends a heartbeat comment.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(15);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsPage {
    after: Option<i64>,
    limit: Option<i64>,
}

fn sse(e: &Event) -> SseEvent {
    let data = json!({ "seq": e.seq, "kind": e.kind, "subject": e.subject, "payload": e.payload, "at": e.at });
    SseEvent::default().id(e.seq.to_string()).event(e.kind.clone()).data(data.to_string())
}

/// Events after `after`, as they come, in order, without gaps.
fn follow(events: Events, after: i64) -> impl futures_util::Stream<Item = Result<SseEvent, Infallible>> {
    let news = events.subscribe();
    stream::unfold(
        (events, news, after, VecDeque::<Event>::new()),
        |(events, mut news, mut after, mut ready)| async move {
            loop {
                if let Some(e) = ready.pop_front() {
                    after = e.seq;
                    let item = sse(&e);
                    return Some((Ok(item), (events, news, after, ready)));
                }
                match events.list(after, 200).await {
                    Ok(batch) if !batch.is_empty() => ready.extend(batch),
                    Ok(_) => events.wait(&mut news, HEARTBEAT).await,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading events for a stream failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        },
    )
}

/// A page of the event log, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct EventPage {
    events: Vec<Event>,
    /// The last event's seq, else the `after` asked for: the `after` of the
    /// following page; null when neither is known.
    next: Option<i64>,
}

/// The event log, as a stream or a JSON page.
#[utoipa::path(get, path = "/api/v1/events", tag = "events",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("after" = Option<i64>, Query, minimum = 0, maximum = 9_223_372_036_854_775_807_i64, description = "Sequence number to start after"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "JSON page size (default 100)"),
           ("Last-Event-ID" = Option<i64>, Header, minimum = 0, maximum = 9_223_372_036_854_775_807_i64, description = "Resume a stream after this sequence number")),
    responses((status = 200, description = "A JSON page, or with `Accept: text/event-stream` a stream of the events as they come",
                content((EventPage = "application/json"), (String = "text/event-stream"))),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    headers: HeaderMap,
    ApiQuery(page): ApiQuery<EventsPage>,
) -> Result<Response, ApiError> {
    let limit = in_range("limit", page.limit, 100, 1, 1000)?;
    if let Some(after) = page.after {
        in_range("after", Some(after), 0, 0, i64::MAX)?;
    }
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(v) => match v.to_str().ok().and_then(|s| s.trim().parse::<i64>().ok()) {
            Some(seq) if seq >= 0 => Some(seq),
            _ => {
                let message = "Last-Event-ID must be a sequence number (0 or more)";
                return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_header", message).about("Last-Event-ID"));
            }
        },
    };
    let events = state.services().events.clone();
    let streaming =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/event-stream"));
    if !streaming {
        let list = events.list(page.after.unwrap_or(0), limit).await?;
        let next = list.last().map(|e| e.seq).or(page.after);
        return Ok(Json(EventPage { events: list, next }).into_response());
    }
    let resume = last_event_id.or(page.after);
    // A new subscriber without a position starts with what happens next.
    let after = match resume {
        Some(seq) => seq,
        None => events.head().await?,
    };
    let keep_alive = KeepAlive::new().interval(HEARTBEAT).text("heartbeat");
    // The stream ends when the server shuts down, so an open console does
    // not keep the process waiting; the browser reconnects elsewhere or later.
    let stream = futures_util::StreamExt::take_until(follow(events, after), state.closed());
    Ok(Sse::new(stream).keep_alive(keep_alive).into_response())
}
