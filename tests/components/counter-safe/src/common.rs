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
