//! Test component `test.counter-safe` (label execute, replay safe): adds
//! one to the loopback counter service per call.

mod common;

counter_capability!("test.counter-safe", capstan_sdk::Replay::Safe);
