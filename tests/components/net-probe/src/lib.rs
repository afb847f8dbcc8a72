//! Test component `test.net-probe`: tries every way std offers to reach the
//! network (a TCP connect, a UDP bind and send, a name lookup), which
//! imports `wasi:sockets`. The host accepts the imports and links them with
//! every use switched off; the component reports how each attempt failed.

use std::net::{TcpStream, ToSocketAddrs, UdpSocket};

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Input {
    /// `ip:port` to connect to and send to.
    pub addr: String,
    /// A host name to look up.
    pub host: String,
}

/// How each attempt ended: `ok` when it reached the network, otherwise the
/// error's kind and message.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {
    pub tcp_connect: String,
    pub udp_bind: String,
    pub udp_send: String,
    pub name_lookup: String,
}

fn ended<T>(result: std::io::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => format!("{:?}: {e}", e.kind()),
    }
}

pub struct NetProbe;

impl Capability for NetProbe {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.net-probe",
        version: 2,
        label: Label::Read,
        summary: "Tries to reach the network",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: Input) -> Result<Outcome<Output>, Failure> {
        let tcp_connect = ended(TcpStream::connect(&input.addr));
        let udp_bind = ended(UdpSocket::bind("0.0.0.0:0"));
        // A socket std could not bind is never sent on; try the send on
        // whatever bind gave, so a host that allowed binding is caught too.
        let udp_send = ended(UdpSocket::bind("0.0.0.0:0").and_then(|s| s.send_to(b"capstan", &input.addr)));
        let name_lookup = ended((input.host.as_str(), 80).to_socket_addrs());
        Ok(Outcome::Succeeded(Output { tcp_connect, udp_bind, udp_send, name_lookup }))
    }
}

capstan_sdk::export_capability!(NetProbe);
