//! What a call did through its host imports, kept when its grant asks for
//! it ([`Grant::recorded`](crate::Grant::recorded)): the mock host
//! of `capstan capabilities test` shows a plugin author every log line,
//! file operation, request, store call and command, with what the host
//! answered. Calls made for anyone else keep nothing.

use std::fmt::Debug;

use serde::Serialize;

use crate::bindings::capstan::host::types::HostError;
use crate::call_state::CallCore;
use crate::text::{clip, escape_controls};

/// Host calls one recorded call keeps; the rest are counted.
const MAX_RECORDED: usize = 1_000;

/// Bytes of an argument or answer kept in a record.
const MAX_SHOWN: usize = 512;

/// One host import a component called, and how the host answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostCall {
    /// The interface, as in `capstan:host/files-read`.
    pub interface: String,
    pub function: &'static str,
    /// The arguments, shortened.
    pub args: String,
    /// `ok` and what came back, or the error's kind and message.
    pub answer: String,
}

/// The host calls of one recorded call.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) calls: Vec<HostCall>,
    pub(crate) dropped: u64,
}

fn shown(text: &str) -> String {
    clip(&escape_controls(text), MAX_SHOWN).into_owned()
}

/// A host error as `kind: message`.
pub(crate) fn error_text(e: &HostError) -> String {
    let (kind, message) = match e {
        HostError::Denied(m) => ("denied", m),
        HostError::Invalid(m) => ("invalid", m),
        HostError::NotFound(m) => ("not-found", m),
        HostError::Unavailable(m) => ("unavailable", m),
        HostError::TooLarge(m) => ("too-large", m),
        HostError::Conflict(m) => ("conflict", m),
        HostError::Internal(m) => ("internal", m),
    };
    format!("{kind}: {message}")
}

impl CallCore {
    /// Whether this call keeps a record of its host calls.
    pub(crate) fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Records a host call that answered `answer` (already shown as text);
    /// `args` is `None` when the call keeps no record.
    fn record_text(&mut self, interface: &str, function: &'static str, args: Option<String>, answer: String) {
        let (Some(recording), Some(args)) = (self.recording.as_mut(), args) else { return };
        if recording.calls.len() >= MAX_RECORDED {
            recording.dropped += 1;
            return;
        }
        recording.calls.push(HostCall {
            interface: interface.to_string(),
            function,
            args: shown(&args),
            answer: shown(&answer),
        });
    }

    /// Records a host call that answered `result`, the success shown by
    /// `ok`.
    pub(crate) fn record<T>(
        &mut self,
        interface: &str,
        function: &'static str,
        args: Option<String>,
        result: &Result<T, HostError>,
        ok: impl FnOnce(&T) -> String,
    ) {
        if args.is_none() {
            return;
        }
        let answer = match result {
            Ok(value) => match ok(value) {
                shown if shown.is_empty() => "ok".to_string(),
                shown => format!("ok: {shown}"),
            },
            Err(e) => error_text(e),
        };
        self.record_text(interface, function, args, answer);
    }

    /// The arguments of a host call as text, only when recording.
    pub(crate) fn args(&self, args: impl FnOnce() -> String) -> Option<String> {
        self.recording().then(args)
    }
}

/// A value's debug text, for answers with nothing better to show.
pub(crate) fn debug<T: Debug>(value: &T) -> String {
    format!("{value:?}")
}
