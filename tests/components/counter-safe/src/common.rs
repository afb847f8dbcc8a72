//! Shared by the counter test components: each call adds one to a counter
//! on the `counter` service (a loopback test server), tagged with the
//! call's idempotency key, so tests can count real effects and `verify`
//! can ask the server whether a key's effect happened.

use capstan_sdk::host::{self, Request, outbound};
use capstan_sdk::{Failure, Outcome, Verification};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {
    /// Anything; different labels make different calls.
    pub label: String,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Output {
    pub count: u64,
}

/// The server's answer to a count; `crash` asks the component to trap after
/// the effect, which is how tests produce an `unknown` outcome.
#[derive(Deserialize)]
struct Counted {
    count: u64,
    #[serde(default)]
    crash: bool,
}

fn key() -> String {
    host::context().idempotency_key.unwrap_or_default()
}

pub fn invoke(_input: Input) -> Result<Outcome<Output>, Failure> {
    let req = Request {
        service: "counter".into(),
        method: "POST".into(),
        path: "/count".into(),
        query: vec![("key".into(), key())],
        ..Request::default()
    };
    let counted: Counted = outbound::write(req)?.json()?;
    if counted.crash {
        panic!("crashing after the effect, as the test server asked");
    }
    Ok(Outcome::Succeeded(Output { count: counted.count }))
}

pub fn verify(_input: Input) -> Result<Verification<Output>, Failure> {
    let resp = outbound::read(Request::get("counter", "/count/status").query("key", key()))?;
    #[derive(Deserialize)]
    struct Status {
        done: bool,
        count: u64,
    }
    let status: Status = resp.json()?;
    Ok(if status.done { Verification::Done(Output { count: status.count }) } else { Verification::NotDone })
}

/// Defines and exports a counter capability with `id` and replay policy.
#[macro_export]
macro_rules! counter_capability {
    ($id:literal, $replay:expr) => {
        pub struct Counter;

        impl capstan_sdk::Capability for Counter {
            type Input = common::Input;
            type Output = common::Output;
            const META: capstan_sdk::Meta = capstan_sdk::Meta {
                id: $id,
                version: 1,
                label: capstan_sdk::Label::Execute,
                summary: "Counts its effects on a test server",
                description: "Used by the end-to-end suites only.",
                tags: &["test", "policy.counting"],
                aliases: &[],
                replay: $replay,
                services: &["counter"],
            };

            fn invoke(input: common::Input) -> Result<capstan_sdk::Outcome<common::Output>, capstan_sdk::Failure> {
                common::invoke(input)
            }

            fn verify(input: common::Input) -> Result<capstan_sdk::Verification<common::Output>, capstan_sdk::Failure> {
                common::verify(input)
            }
        }

        capstan_sdk::export_capability!(Counter);
    };
}
