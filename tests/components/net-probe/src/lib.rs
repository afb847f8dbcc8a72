//! Test component `test.net-probe`: opens a TCP socket with std::net, which
//! imports `wasi:sockets`. The loader must refuse it.

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {
    pub addr: String,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {}

pub struct NetProbe;

impl Capability for NetProbe {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.net-probe",
        version: 1,
        label: Label::Execute,
        summary: "Tries to open a socket",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: Input) -> Result<Outcome<Output>, Failure> {
        std::net::TcpStream::connect(&input.addr).map_err(|e| Failure::Unavailable(e.to_string()))?;
        Ok(Outcome::Succeeded(Output {}))
    }
}

capstan_sdk::export_capability!(NetProbe);
