//! The capabilities compiled into the binary: each component of
//! `capabilities/`, built for wasm32-wasip2 by this crate's build script,
//! with its pre-initialised snapshot compiled ahead for the binary's engine
//! (`build/precompile.rs`). A crate of its own so that building them runs
//! beside the compile of the runtime and the crates above it; the
//! composition root hands [`BUILT_INS`] to the runtime it starts.

use capstan_runtime::builtins::BuiltIns;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));
}

/// The built-in capabilities of this build.
pub static BUILT_INS: BuiltIns =
    BuiltIns { precompiled_for: generated::PRECOMPILED_FOR, components: generated::BUILTINS };
