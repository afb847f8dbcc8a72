//! Agent runs: the loop and its scripted model, what the model is shown,
//! limits and endings, runs that cannot go on, model providers and the
//! requests real APIs accept, verdicts, and runs doing real media work.

mod boundaries;
mod commands;
mod context;
mod continuity;
mod engine;
mod gate;
mod investigation;
mod limits;
mod media;
mod outcomes;
mod providers;
pub mod runs;
mod third_party;
mod verdict;
mod wire;
