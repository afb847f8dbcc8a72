//! Test component `test.counter-verify` (label execute, replay verify): adds
//! one to the loopback counter service per call.

#[path = "../../counter-safe/src/common.rs"]
mod common;

counter_capability!("test.counter-verify", capstan_sdk::Replay::Verify);
