//! Capability `organize.execute` (label execute, plan type `organization`):
//! places a completed download's media in the library exactly as its
//! frozen organization plan says — and only while that plan is still
//! current. The work is [`capstan_organize::carry`], shared with
//! `organize.replace`: this one carries out only organizations that
//! replace no file the library holds, so what authorises placing files
//! never authorises replacing one.

#[cfg(test)]
mod tests;

use capstan_organize::carry::{self, Carried, CarryInput, Carrying};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};

/// Input: the organization to carry out and the fingerprint reviewed.
pub type ExecuteInput = CarryInput;
/// Output: what was placed where.
pub type ExecuteOutput = Carried;

/// The capability.
pub struct OrganizeExecute;

impl Capability for OrganizeExecute {
    type Input = ExecuteInput;
    type Output = ExecuteOutput;

    const META: Meta = Meta {
        id: "organize.execute",
        version: 1,
        label: Label::Execute,
        summary: "Carry out an organization plan: hardlink, copy or move a download's files into the library",
        description: "Places a completed download's media in the library exactly as the organization plan made by organize.plan says, given the plan's id and fingerprint. Refuses with a conflict when the plan was re-made since (another fingerprint) or the download's files changed, when a destination already holds a different file, while another call is carrying out the same organization, and when the plan replaces files the library holds (an upgrade, which organize.replace carries out); nothing is ever overwritten. Hardlinks fall back to a verified copy across devices; copies are verified by SHA-256. Running it again after an interruption finishes what is left. On success the download is imported and the slot settled: satisfied, or still wanted while something is missing or below the quality profile's cutoff.",
        tags: &["organize", "policy.library", "plan:organization", "library", "import", "rename"],
        aliases: &[
            "organize",
            "import",
            "rename",
            "run import",
            "move to library",
            "hardlink",
            "整理",
            "入库",
            "重命名",
            "执行整理",
            "导入媒体库",
        ],
        replay: Replay::Verify,
        services: &[],
    };

    fn invoke(input: ExecuteInput) -> Result<Outcome<ExecuteOutput>, Failure> {
        carry::invoke(&input, Carrying::Placing).map(Outcome::Succeeded)
    }

    /// Done when the organization succeeded with this fingerprint; see
    /// [`carry::verify`].
    fn verify(input: ExecuteInput) -> Result<Verification<ExecuteOutput>, Failure> {
        carry::verify(&input)
    }
}

capstan_sdk::export_capability!(OrganizeExecute);
