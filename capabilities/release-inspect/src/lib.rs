//! Capability `release.inspect` (label read): turns a release name such as
//! `Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv` into
//! structured fields. Pure computation: it imports nothing from the host.
//! The output type and the parser live in the `release-name` crate (so
//! other components can link them without this one's exports) and are
//! re-exported here as [`parse`] and [`parser`]. The parser keeps no state
//! between calls and builds nothing at run time (its tables are static
//! code), so the component needs no pre-initialisation: a fresh instance is
//! ready.

pub use release_name::{parse, parser};

#[cfg(any(test, feature = "compare"))]
pub mod conformance;
#[cfg(any(test, feature = "compare"))]
pub mod guessit_results;
#[cfg(any(test, feature = "compare"))]
pub mod hunch_parse;

use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Deserialize;

/// Input: one release name.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectInput {
    /// The release or file name, optionally with folders before it.
    pub name: String,
}

/// The capability.
pub struct ReleaseInspect;

impl Capability for ReleaseInspect {
    type Input = InspectInput;
    type Output = parse::ReleaseInfo;

    const META: Meta = Meta {
        id: "release.inspect",
        version: 2,
        label: Label::Read,
        summary: "Parse a release name into title, year, season/episode and quality fields",
        description: "Reads a torrent or file release name and returns what it says: title, year, season, episodes, resolution, source, codecs, HDR, bit depth, release group, edition, languages, streaming service, container and whether it is a movie or an episode. It looks nothing up; use catalog.lookup to confirm the title.",
        tags: &["release", "parse", "quality", "metadata"],
        aliases: &["parse release", "release name", "identify release", "解析", "种子名", "识别"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: InspectInput) -> Result<Outcome<parse::ReleaseInfo>, Failure> {
        let name = input.name.trim();
        if name.is_empty() {
            return Err(Failure::InvalidInput("name must not be empty".into()));
        }
        if name.len() > 1024 {
            return Err(Failure::InvalidInput("name is longer than 1024 bytes".into()));
        }
        Ok(Outcome::Succeeded(parse::inspect(name)))
    }
}

capstan_sdk::export_capability!(ReleaseInspect);

/// Through the SDK's mock host, as the component is called: the input glue,
/// the refusals, and a descriptor that asks for nothing.
#[cfg(test)]
mod through_the_sdk {
    use capstan_sdk::Failure;
    use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
    use serde_json::json;

    use super::ReleaseInspect;

    #[test]
    fn a_release_name_comes_back_as_fields() {
        MockHost::new("release.inspect").install();
        let Ok(Called::Succeeded(out)) =
            invoke::<ReleaseInspect>(json!({"name": "The.Mandalorian.S02E05.1080p.WEB.H264-GLHF"}))
        else {
            panic!("release.inspect did not succeed");
        };
        assert_eq!((out["title"].as_str(), out["season"].as_i64()), (Some("The Mandalorian"), Some(2)));
        assert_eq!(out["release_group"], "GLHF");
    }

    #[test]
    fn empty_long_and_misspelt_inputs_are_refused() {
        MockHost::new("release.inspect").install();
        for input in [json!({"name": "  "}), json!({"name": "x".repeat(1025)}), json!({"title": "Dune"})] {
            assert!(
                matches!(invoke::<ReleaseInspect>(input.clone()), Err(Failure::InvalidInput(_))),
                "{input} should be invalid input"
            );
        }
    }

    #[test]
    fn the_descriptor_is_read_only_with_no_services_and_both_languages() {
        let d = descriptor::<ReleaseInspect>();
        assert_eq!(d.id, "release.inspect");
        assert!(matches!(d.label, capstan_sdk::bindings::capstan::capability::types::Label::Read));
        assert!(d.services.is_empty());
        assert!(d.aliases.iter().any(|a| a.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))));
        assert!(d.aliases.iter().any(|a| a.is_ascii()));
    }
}
