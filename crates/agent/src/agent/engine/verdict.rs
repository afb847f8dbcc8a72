//! How a run that ended normally is judged. The report never claims what
//! it did not verify: an execute run succeeds when every plan it touched
//! reached the library, or — touching no plan — when the changes it made
//! succeeded (the ledger says so) or its goal only asked a question and it
//! answered. A run whose changes all failed or were denied, or whose every
//! call failed, has `failed`; one whose goal asked for a change and that
//! made none (saying what it called), or that gave no answer, has
//! `nothing_done` — a plan-only run asked to fetch something too, saying
//! what it drafted and that fetching needs an approval or an execute run.
//! The reasons name the calls.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::report::{Standing, Touched};
use super::toolbox::{self, ToolStatus};
use crate::agent::runs::{RunEvent, RunMode, RunStatus};
use crate::ledger::LedgerStatus;
use crate::runtime::{EffectClass, Snapshot};

/// One capability call the run's own agent made, as it ended.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    status: ToolStatus,
    error: Option<String>,
    write: bool,
    /// The ledger row of a write.
    row: Option<String>,
}

/// What the run's agent called and how each ended.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    calls: Vec<Call>,
}

impl Activity {
    /// From the run's `agent.tool_call` events: the agent's own capability
    /// calls (not a subagent's, not session tools), as they ended. A call
    /// is a write when its capability is labelled above preview. A write
    /// is judged by its ledger row as it stands now (`ledger`: invocation
    /// id → status), once per row: a write that ended `unknown` and was
    /// later found done by a check counts as done, and a write repeated
    /// in its request (answered from the row) counts once.
    pub(crate) fn from_events(
        events: &[RunEvent],
        snapshot: &Snapshot,
        ledger: &HashMap<String, LedgerStatus>,
    ) -> Activity {
        let mut seen = HashSet::new();
        let mut calls: Vec<Call> = events
            .iter()
            .filter(|e| e.kind == "agent.tool_call")
            .map(|e| &e.payload)
            .filter(|p| {
                p["actor"] == "agent"
                    && matches!(p["phase"].as_str(), Some("finished" | "denied" | "rejected" | "reconciled"))
            })
            .filter_map(|p| {
                let name = p["name"].as_str()?;
                if toolbox::is_session_tool(name) {
                    return None;
                }
                let write = snapshot.get(name).is_some_and(|l| l.descriptor.label > EffectClass::Preview);
                let mut call = Call {
                    name: name.to_string(),
                    status: p["status"].as_str().and_then(ToolStatus::parse).unwrap_or(ToolStatus::Failed),
                    error: p["error"].as_str().map(str::to_string),
                    write,
                    row: p["invocationId"].as_str().map(str::to_string),
                };
                if let Some(now) =
                    call.row.as_ref().and_then(|row| ledger.get(row)).and_then(|s| ToolStatus::of_ledger(*s))
                    && now != call.status
                {
                    call.status = now;
                    call.error = None;
                }
                Some(call)
            })
            .collect();
        // The latest call of each row stands for it.
        calls.reverse();
        calls.retain(|c| c.row.as_ref().is_none_or(|row| seen.insert(row.clone())));
        calls.reverse();
        Activity { calls }
    }

    fn writes(&self) -> impl Iterator<Item = &Call> {
        self.calls.iter().filter(|c| c.write)
    }

    /// What the report says of the calls.
    pub fn summary(&self) -> Value {
        let count = |write: bool, ok: bool| {
            self.calls.iter().filter(|c| c.write == write && ok == c.status.went_through()).count()
        };
        json!({
            "writes": {"ok": count(true, true), "notOk": count(true, false)},
            "reads": {"ok": count(false, true), "notOk": count(false, false)},
        })
    }

    /// One line per way calls did not succeed, in the order first seen,
    /// with how many times when more than once.
    pub fn reasons(&self) -> Vec<String> {
        let mut lines: Vec<(String, usize)> = Vec::new();
        for c in self.calls.iter().filter(|c| !ok(c)) {
            let line = match &c.error {
                Some(e) => format!("{} {}: {e}", c.name, c.status.as_str()),
                None => format!("{} {}", c.name, c.status.as_str()),
            };
            match lines.iter_mut().find(|(l, _)| *l == line) {
                Some((_, n)) => *n += 1,
                None => lines.push((line, 1)),
            }
        }
        lines.into_iter().map(|(l, n)| if n > 1 { format!("{l} (×{n})") } else { l }).collect()
    }
}

fn ok(call: &Call) -> bool {
    call.status.went_through()
}

/// Words of a goal that asks for something to change.
const CHANGE_WORDS: &[&str] = &[
    "download", "fetch", "grab", "get me", "add ", "import", "organize", "organise", "move ", "rename", "delete",
    "remove", "cancel", "retry", "recheck", "apply", "submit", "publish", "want ", "下载", "添加", "整理", "删除",
];

/// First words of a question, which asks nothing to change.
const QUESTION_WORDS: &[&str] = &[
    "what", "which", "how", "is", "are", "do", "does", "did", "can", "could", "list", "show", "tell", "where", "when",
    "why", "who", "查", "什么", "哪",
];

/// Whether the goal asks for a change rather than an answer.
pub(crate) fn asks_for_change(goal: &str) -> bool {
    let goal = goal.trim().to_lowercase();
    let first = goal.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
    let question = goal.ends_with('?')
        || goal.ends_with('？')
        || QUESTION_WORDS.iter().any(|w| first == *w || (!w.is_ascii() && goal.starts_with(w)));
    !question && CHANGE_WORDS.iter().any(|w| format!("{goal} ").contains(w))
}

/// What a run was asked for, as its verdict reads it.
pub struct Asked<'a> {
    pub mode: RunMode,
    pub goal: &'a str,
    /// An investigation reads and proposes by design: its goal names what
    /// went wrong ("a download failed"), never a change it must make.
    pub investigation: bool,
}

/// Why a plan-only run whose goal asks for a change did not succeed: what
/// it drafted, and what fetching takes.
fn plan_only_change(touched: &[Touched], activity: &Activity) -> String {
    let drafted = touched.len();
    let mut said = if drafted > 0 {
        format!(
            "a plan-only run changes nothing: it drafted {drafted} plan(s), which wait for approval on the Approvals tab; \
             fetching needs them approved, or an execute run"
        )
    } else {
        "a plan-only run changes nothing, and this one drafted no plan: nothing was fetched; fetching needs an \
         execute run"
            .to_string()
    };
    let reasons = activity.reasons();
    if !reasons.is_empty() {
        said.push_str(&format!(" (what did not work: {})", reasons.join("; ")));
    }
    said
}

/// What the run read, for a run that changed nothing: "release.search (×2)
/// and inventory.query", or that it called nothing.
fn what_it_read(activity: &Activity) -> String {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for call in &activity.calls {
        match names.iter_mut().find(|(n, _)| *n == call.name) {
            Some((_, count)) => *count += 1,
            None => names.push((&call.name, 1)),
        }
    }
    let named: Vec<String> =
        names.iter().map(|(n, c)| if *c > 1 { format!("{n} (×{c})") } else { n.to_string() }).collect();
    match named.as_slice() {
        [] => "it called no capability".to_string(),
        [one] => format!("it called only {one}"),
        [head @ .., last] => format!("it called only {} and {last}", head.join(", ")),
    }
}

/// The status a normally ended run finishes with, and why when it is not
/// success. A plan-only run's drafts are its result, unless its goal asked
/// for a change: drafting is then not what was asked, and it says so.
pub fn verdict(
    touched: &[Touched],
    asked: &Asked<'_>,
    activity: &Activity,
    final_text: &str,
) -> (RunStatus, Option<String>) {
    let (mode, goal) = (asked.mode, asked.goal);
    let count = |standing: Standing| touched.iter().filter(|t| t.standing == standing).count();
    let approvals = touched.iter().filter(|t| matches!(t.standing, Standing::AwaitingApproval(_))).count();
    let (failed, moving, awaiting) =
        (count(Standing::Failed), count(Standing::InFlight), count(Standing::AwaitingHuman) + approvals);
    let rejected = count(Standing::Rejected);
    if rejected > 0 {
        return (RunStatus::Failed, Some(format!("a human rejected {rejected} of the plans the run touched")));
    }
    if failed > 0 {
        return (RunStatus::Failed, Some(format!("{failed} of the plans the run touched failed")));
    }
    if moving > 0 {
        return (RunStatus::Failed, Some(format!("{moving} of the plans the run touched had not settled")));
    }
    if mode == RunMode::PlanOnly {
        if !asked.investigation && asks_for_change(goal) {
            return (RunStatus::NothingDone, Some(plan_only_change(touched, activity)));
        }
        return (RunStatus::Succeeded, None);
    }
    if awaiting > 0 {
        let detail = format!(
            "{awaiting} plan(s) wait for a human to approve them; nothing they describe has happened and nothing reached the library"
        );
        return (RunStatus::Failed, Some(detail));
    }
    if !touched.is_empty() {
        // Every plan it touched is in the library.
        return (RunStatus::Succeeded, None);
    }
    let because = |what: String| {
        let reasons = activity.reasons();
        if reasons.is_empty() { what } else { format!("{what}: {}", reasons.join("; ")) }
    };
    let writes: Vec<&Call> = activity.writes().collect();
    let done = writes.iter().filter(|c| ok(c)).count();
    if !writes.is_empty() && done == 0 {
        return (RunStatus::Failed, Some(because("every change the run tried failed or was denied".into())));
    }
    if done < writes.len() {
        let detail =
            format!("{} of the {} changes the run tried failed or were denied", writes.len() - done, writes.len());
        return (RunStatus::Failed, Some(because(detail)));
    }
    if done > 0 {
        return (RunStatus::Succeeded, None);
    }
    if !activity.calls.is_empty() && activity.calls.iter().all(|c| !ok(c)) {
        return (RunStatus::Failed, Some(because("every call the run made failed or was denied".into())));
    }
    if asks_for_change(goal) {
        let why = format!(
            "the goal asks for a change and the run made none; nothing was verified: {}",
            what_it_read(activity)
        );
        return (RunStatus::NothingDone, Some(why));
    }
    if final_text.trim().is_empty() {
        return (RunStatus::NothingDone, Some("the run gave no answer".into()));
    }
    (RunStatus::Succeeded, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(mode: RunMode, goal: &str, investigation: bool, activity: &Activity) -> (RunStatus, Option<String>) {
        verdict(&[], &Asked { mode, goal, investigation }, activity, "Here is what I found.")
    }

    fn read(name: &str, status: ToolStatus) -> Call {
        Call { name: name.into(), status, error: None, write: false, row: None }
    }

    #[test]
    fn a_plan_only_run_asked_to_fetch_says_it_fetched_nothing_and_what_fetching_takes() {
        let searched = Activity {
            calls: vec![read("release.search", ToolStatus::Succeeded), read("catalog.lookup", ToolStatus::Succeeded)],
        };
        let (status, why) = judged(RunMode::PlanOnly, "find and fetch Dune", false, &searched);
        let why = why.unwrap();
        assert_eq!(status, RunStatus::NothingDone, "{why}");
        assert!(why.contains("drafted no plan") && why.contains("execute run"), "{why}");
        // A question, or an investigation of a failed download, is what a
        // plan-only run is for.
        assert_eq!(judged(RunMode::PlanOnly, "what is in my library?", false, &searched).0, RunStatus::Succeeded);
        let investigating = judged(RunMode::PlanOnly, "Investigate: download d1 failed", true, &searched);
        assert_eq!(investigating.0, RunStatus::Succeeded);
    }

    #[test]
    fn an_execute_run_that_fetched_nothing_says_what_it_called() {
        let searched = Activity {
            calls: vec![read("release.search", ToolStatus::Succeeded), read("release.search", ToolStatus::Succeeded)],
        };
        let (status, why) = judged(RunMode::Execute, "fetch Dune", false, &searched);
        assert_eq!(status, RunStatus::NothingDone);
        assert!(why.unwrap().ends_with("it called only release.search (×2)"));
        let (_, why) = judged(RunMode::Execute, "fetch Dune", false, &Activity::default());
        assert!(why.unwrap().ends_with("it called no capability"));
    }

    #[test]
    fn questions_ask_nothing_to_change() {
        for goal in ["fetch Dune: Part Two", "Download the new Expanse season", "please grab Alien in 4K", "下载沙丘2"]
        {
            assert!(asks_for_change(goal), "{goal}");
        }
        for goal in [
            "What does my library hold?",
            "what is downloading",
            "how many downloads failed?",
            "list my movies",
            "查一下下载",
        ] {
            assert!(!asks_for_change(goal), "{goal}");
        }
    }
}
