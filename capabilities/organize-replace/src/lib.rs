//! Capability `organize.replace` (label execute, plan type `replacement`):
//! carries out an upgrade — an organization whose items replace files the
//! library holds for the title. Each new file is placed as planned and
//! each file it replaces is moved to the `recycle` root (the recycle
//! folder in the host's data directory) under the organization's id,
//! never deleted. It carries out nothing else, and `organize.execute`
//! carries out no upgrade: a replacement has its own plan type, so an
//! approval of one never authorises the other. The work is
//! [`capstan_organize::carry`].

#[cfg(test)]
mod tests;

use capstan_organize::carry::{self, Carried, CarryInput, Carrying};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};

/// The capability.
pub struct OrganizeReplace;

impl Capability for OrganizeReplace {
    type Input = CarryInput;
    type Output = Carried;

    const META: Meta = Meta {
        id: "organize.replace",
        version: 1,
        label: Label::Execute,
        summary: "Carry out an upgrade: put the better files in the library and keep the replaced ones in the recycle folder",
        description: "Carries out an organization plan that replaces files the library holds (an upgrade to a better quality, or a PROPER/REPACK), given the plan's id and fingerprint from organize.plan. Places each new file as planned (hardlink, copy or move) and moves each replaced file to the recycle folder in Capstan's data directory, under the organization's id; nothing is deleted or overwritten. Refuses with a conflict when the plan replaces nothing (organize.execute carries that out), when it was re-made since, when the download's files changed, or when a destination holds a file the plan does not replace. Running it again after an interruption finishes what is left. On success the download is imported and the slot settled by what it now holds.",
        tags: &["organize", "policy.library", "plan:replacement", "library", "upgrade", "replace"],
        aliases: &[
            "upgrade",
            "replace file",
            "replace with better",
            "swap for better quality",
            "洗版",
            "升级",
            "替换文件",
        ],
        replay: Replay::Verify,
        services: &[],
    };

    fn invoke(input: CarryInput) -> Result<Outcome<Carried>, Failure> {
        carry::invoke(&input, Carrying::Replacing).map(Outcome::Succeeded)
    }

    /// Done when the organization succeeded with this fingerprint; see
    /// [`carry::verify`].
    fn verify(input: CarryInput) -> Result<Verification<Carried>, Failure> {
        carry::verify(&input)
    }
}

capstan_sdk::export_capability!(OrganizeReplace);
