//! Checking a call's input against its capability's input schema, the first
//! thing a call does, within the call's deadline. The validator was vetted
//! and compiled when the component loaded (`runtime::InputValidator`), and
//! the schema caps bound what one check can cost. A check that is cheap for
//! its input runs where the caller is; a costlier one runs on a blocking
//! thread, one per capability at a time, and the caller stops waiting for
//! it when the call's deadline passes or its stop signal fires — or when
//! the caller itself goes away, which drops the wait. The work on the
//! thread is then abandoned to finish by itself (the caps bound it), and
//! holds its capability's place until it has: a costly schema can delay
//! only callers of its own capability, never another capability's, and
//! never an async thread (the health check, other calls).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::runtime::{InputValidator, StopSignal};

/// How checking an input ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputCheck {
    /// The input fits the schema.
    Fits,
    /// It does not; the message an `invalid-input` failure carries.
    Refused(String),
    /// The check did not end before the deadline, or the caller stopped
    /// waiting: the failure's kind (`deadline`, `stopped`) and message.
    Unfinished { kind: &'static str, message: String },
}

impl InputCheck {
    /// The kind and message of the failure a call that did not fit gets;
    /// `None` when it fits.
    pub fn refusal(self) -> Option<(&'static str, String)> {
        match self {
            InputCheck::Fits => None,
            InputCheck::Refused(message) => Some(("invalid-input", message)),
            InputCheck::Unfinished { kind, message } => Some((kind, message)),
        }
    }
}

/// Checks `input` against capability `id`'s input schema, giving up after
/// `within` or when `stop` fires.
pub async fn check_input(
    validator: &Arc<InputValidator>,
    id: &str,
    input: &Value,
    within: Duration,
    stop: &StopSignal,
) -> InputCheck {
    if validator.is_cheap_for(input) {
        return verdict(input_problems(validator.validator(), id, input));
    }
    let off_thread = async {
        // The permit goes to the thread with the work and is given back
        // when the work ends, not when this wait does.
        let permit = validator.gate().clone().acquire_owned().await;
        let (validator, id, input) = (validator.clone(), id.to_string(), input.clone());
        tokio::task::spawn_blocking(move || {
            let _place = permit;
            input_problems(validator.validator(), &id, &input)
        })
        .await
    };
    tokio::select! {
        checked = off_thread => match checked {
            Ok(problems) => verdict(problems),
            Err(e) => InputCheck::Unfinished {
                kind: "internal",
                message: format!("checking the input of {id} against its schema failed: {e}"),
            },
        },
        () = tokio::time::sleep(within) => InputCheck::Unfinished {
            kind: "deadline",
            message: format!(
                "checking the input of {id} against its schema did not finish within the call's deadline of {} ms",
                within.as_millis()
            ),
        },
        () = stop.stopped() => InputCheck::Unfinished {
            kind: "stopped",
            message: format!("the caller stopped the call while the input of {id} was being checked"),
        },
    }
}

fn verdict(problems: Option<String>) -> InputCheck {
    problems.map_or(InputCheck::Fits, InputCheck::Refused)
}

/// Why `input` does not fit the input schema of capability `id` (up to
/// five places), as an `invalid-input` failure says it; `None` when it
/// fits. Runs the whole check where it is called: [`check_input`] decides
/// where that is.
pub fn input_problems(validator: &jsonschema::Validator, id: &str, input: &Value) -> Option<String> {
    if validator.is_valid(input) {
        return None;
    }
    let problems: Vec<String> =
        validator.iter_errors(input).take(5).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    (!problems.is_empty()).then(|| format!("input does not match the schema of {id}: {}", problems.join("; ")))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::Duration;

    use serde_json::json;

    use super::{InputCheck, check_input};
    use crate::runtime::schema_caps::{Measured, validator_options};
    use crate::runtime::{InputValidator, StopSignal};

    /// Weighed so that no input is cheap: every check runs off the async threads.
    const COSTLY: Measured = Measured { keywords: 1, expanded: 1, depth: 1, weight: u64::MAX };

    /// A validator whose check of a string does not end until the sender
    /// it comes with is dropped: a check that outlives any deadline.
    fn held_until_released() -> (Arc<InputValidator>, mpsc::Sender<()>) {
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let validator = validator_options()
            .with_format("held", move |_: &str| {
                let _ = released.lock().unwrap_or_else(|e| e.into_inner()).recv();
                true
            })
            .should_validate_formats(true)
            .build(&json!({ "type": "string", "format": "held" }))
            .unwrap();
        (Arc::new(InputValidator::weighed(validator, COSTLY)), release)
    }

    fn costly(schema: serde_json::Value) -> Arc<InputValidator> {
        Arc::new(InputValidator::weighed(validator_options().build(&schema).unwrap(), COSTLY))
    }

    fn kind(check: &InputCheck) -> Option<&'static str> {
        match check {
            InputCheck::Unfinished { kind, .. } => Some(kind),
            _ => None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_past_its_deadline_is_abandoned_and_delays_no_other_capability() {
        let (held, release) = held_until_released();
        let input = json!("x");
        let never = StopSignal::default();
        let first = check_input(&held, "test.held", &input, Duration::from_millis(200), &never).await;
        assert_eq!(kind(&first), Some("deadline"), "{first:?}");
        let InputCheck::Unfinished { message, .. } = &first else { unreachable!() };
        assert!(message.contains("test.held") && message.contains("deadline of 200 ms"), "{message}");

        // Another capability's costly check is answered while that one runs.
        let other = costly(json!({ "type": "string" }));
        let answer = check_input(&other, "test.other", &input, Duration::from_secs(600), &never).await;
        assert_eq!(answer, InputCheck::Fits);
        // Its own next caller waits for the place the abandoned check
        // holds, no longer than its own deadline.
        assert_eq!(held.gate().available_permits(), 0, "the abandoned check holds its place");
        let second = check_input(&held, "test.held", &input, Duration::from_millis(200), &never).await;
        assert_eq!(kind(&second), Some("deadline"), "{second:?}");

        // Once the abandoned work ends, its place is free again.
        drop(release);
        let third = check_input(&held, "test.held", &input, Duration::from_secs(600), &never).await;
        assert_eq!(third, InputCheck::Fits);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_ends_when_its_caller_stops_or_leaves() {
        let (held, release) = held_until_released();
        let input = json!("x");
        let (stop, stopped) = StopSignal::channel();
        stop.send(true).unwrap();
        let check = check_input(&held, "test.held", &input, Duration::from_secs(600), &stopped).await;
        assert_eq!(kind(&check), Some("stopped"), "{check:?}");

        // A caller that goes away drops the wait; the work it started
        // keeps the capability's place until it ends.
        drop(release);
        let (held, release) = held_until_released();
        let never = StopSignal::default();
        let left = tokio::time::timeout(
            Duration::from_millis(200),
            check_input(&held, "test.held", &input, Duration::from_secs(600), &never),
        )
        .await;
        assert!(left.is_err(), "the caller left before an answer");
        let taken = async {
            while held.gate().available_permits() > 0 {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), taken).await.expect("the check holds its place");
        drop(release);
        let freed = held.gate().clone().acquire_owned();
        let _place =
            tokio::time::timeout(Duration::from_secs(60), freed).await.expect("the place is given back").unwrap();
    }

    #[tokio::test]
    async fn a_cheap_check_answers_in_the_pipelines_words() {
        let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
        let validator = Arc::new(InputValidator::build(&schema).unwrap());
        assert!(validator.is_cheap_for(&json!({ "n": "one" })));
        let never = StopSignal::default();
        let within = Duration::from_secs(600);
        let fits = check_input(&validator, "test.n", &json!({ "n": 1 }), within, &never).await;
        assert_eq!(fits, InputCheck::Fits);
        let refused = check_input(&validator, "test.n", &json!({ "n": "one" }), within, &never).await;
        let Some(("invalid-input", message)) = refused.refusal() else { panic!("not refused as invalid input") };
        assert!(message.starts_with("input does not match the schema of test.n: "), "{message}");
        assert!(message.contains("at /n"), "{message}");
        // The same answer when the check runs off the async threads.
        let far = costly(schema);
        let refused = check_input(&far, "test.n", &json!({ "n": "one" }), within, &never).await;
        assert_eq!(refused.refusal(), Some(("invalid-input", message)));
    }
}
