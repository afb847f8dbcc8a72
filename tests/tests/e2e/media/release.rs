//! `release.inspect` in the sandbox answers exactly what the same parser
//! answers natively.

use capstan::runtime::{CallOutcome, EffectClass};
use capstan_tests::host::TestHost;
use serde_json::json;

use crate::grant;

const NAMES: &[&str] = &[
    "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv",
    "The.Last.of.Us.S01E03.1080p.WEB.H264-CAKES",
    "Breaking.Bad.S05E14.720p.BluRay.x264-DEMAND.mkv",
    "[SubsPlease] Frieren - 12 (1080p) [ABCD1234].mkv",
    "Oppenheimer.2023.IMAX.2160p.UHD.BluRay.REMUX.HDR.HEVC.DTS-HD.MA.5.1-GROUP",
    "Shogun.2024.S01E01E02.2160p.DSNP.WEB-DL.DDP5.1.H.265-NTb",
];

#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_and_native_parsing_agree() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    for name in NAMES {
        let report = runtime
            .call("release.inspect", &json!({ "name": name }).to_string(), grant(EffectClass::Read))
            .await
            .unwrap();
        let CallOutcome::Succeeded { output } = report.outcome else { panic!("{name}: {:?}", report.outcome) };
        let native = serde_json::to_value(cap_release_inspect::parse::inspect(name)).unwrap();
        assert_eq!(output, native, "{name}");
        assert!(output["title"].is_string(), "{name} has a title");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn empty_and_oversized_names_are_invalid_input() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    for name in [String::new(), "x".repeat(2000)] {
        let report = runtime
            .call("release.inspect", &json!({ "name": name }).to_string(), grant(EffectClass::Read))
            .await
            .unwrap();
        match report.outcome {
            CallOutcome::Failed { failure } => assert_eq!(failure.kind, "invalid-input"),
            other => panic!("expected invalid input, got {other:?}"),
        }
    }
}
