//! Test component `test.counter-never` (label execute, replay never): adds
//! one to the loopback counter service per call.

#[path = "../../counter-safe/src/common.rs"]
mod common;

counter_capability!("test.counter-never", capstan_sdk::Replay::Never);
