//! `capstan-sdk`: everything a plugin author needs to write a Capstan
//! capability in Rust.
//!
//! A capability is a type implementing [`Capability`] with typed serde input
//! and output; [`export_capability!`] turns it into the component exports the
//! host expects (the input JSON Schema is generated from the input type with
//! `schemars`). Host imports are reached through the helpers in [`host`],
//! which on the wasm target call the real imports and on the native target
//! call the mock host in [`testing`], so capability logic is unit-tested
//! with plain `cargo test`. [`commands`] runs the operator's commands and
//! shapes their result. [`qbittorrent`] and [`transmission`] are typed
//! clients for the download clients several capabilities share, built on
//! those helpers; both give torrents as one record.
//!
//! This crate owns the guest side of the WIT contract and protocol clients
//! over it; it must not grow capability logic (what to download, where to
//! put it) of its own.

pub mod bindings;
mod capability;
pub mod commands;
pub mod downloads;
pub mod host;
pub mod qbittorrent;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod transmission;

pub use capability::{__describe, __invoke, __verify, Capability, Failure, Label, Meta, Outcome, Replay, Verification};
pub use capstan_contract as contract;
pub use host::HostError;
pub use schemars;
pub use schemars::JsonSchema;
pub use serde;
pub use serde_json;

/// Exports `$ty` (a type implementing [`Capability`]) as this component's
/// capability, with `verify` wired to [`Capability::verify`].
#[macro_export]
macro_rules! export_capability {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __CapstanExport;

        impl $crate::bindings::exports::capstan::capability::capability::Guest for __CapstanExport {
            fn describe() -> $crate::bindings::capstan::capability::types::Descriptor {
                $crate::__describe::<$ty>()
            }
            fn invoke(
                input: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::bindings::capstan::capability::types::Outcome,
                $crate::bindings::capstan::capability::types::Failure,
            > {
                $crate::__invoke::<$ty>(&input)
            }
        }

        impl $crate::bindings::Guest for __CapstanExport {
            fn capstan_preinit() {
                <$ty as $crate::Capability>::preinit()
            }
        }

        impl $crate::bindings::exports::capstan::capability::verifier::Guest for __CapstanExport {
            fn verify(
                input: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::bindings::capstan::capability::types::Verification,
                $crate::bindings::capstan::capability::types::Failure,
            > {
                $crate::__verify::<$ty>(&input)
            }
        }

        // The component exports only exist on wasm32; natively the export
        // names (with `:` and `#`) are not valid linker symbols, and the
        // native build is for unit tests through `capstan_sdk::testing`.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_bindings!(__CapstanExport with_types_in $crate::bindings);
    };
}
