//! Test component `test.preinit-hang` whose pre-initialisation tries every
//! way to wait on the outside — hashing a FIFO in a root, a request to a
//! slow service, a domain query — and then spins for ever. Loading it must
//! neither wedge the scan nor keep the host from serving or stopping.

use capstan_sdk::host::{self, Request, files, outbound};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct PreinitHang;

impl Capability for PreinitHang {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.preinit-hang",
        version: 1,
        label: Label::Read,
        summary: "Pre-initialisation that waits and spins",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Safe,
        services: &["slow"],
    };

    fn preinit() {
        let _ = files::sha256("downloads", "fifo");
        let _ = outbound::read(Request::get("slow", "/slow"));
        let _ = host::domain::query("entity.get", &serde_json::json!({"id": "x"}));
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn invoke(_: Input) -> Result<Outcome<Output>, Failure> {
        Ok(Outcome::Succeeded(Output {}))
    }
}

capstan_sdk::export_capability!(PreinitHang);
