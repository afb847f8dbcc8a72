// The console's Decisions tab: what went wrong and waits for a human, open
// ones first — the problem, the evidence behind it, an investigation's
// conclusion and the run that made it, the options as buttons — and what
// was decided, by whom, and what carrying it out came to. Kept current by
// the event stream (stream.js): every decision.created / decision.updated
// refreshes it, so a choice made elsewhere shows here at once.
"use strict";

const UNDECIDED = ["open", "investigating", "awaiting_user"];

/// The nav button's text: the tab's name and how many wait.
function markWaiting(count) {
  const button = document.querySelector("nav button[data-tab=decisions]");
  if (button) button.textContent = count > 0 ? "Decisions (" + count + ")" : "Decisions";
}

const refreshDecisions = coalesced(async () => {
  const answer = await api("GET", "/decisions?limit=200");
  if (answer.status !== 200) {
    $("decisions-error").textContent = errorText(answer);
    return;
  }
  const all = answer.data.decisions;
  const undecided = all.filter((d) => UNDECIDED.includes(d.status));
  const decided = all.filter((d) => !UNDECIDED.includes(d.status));
  markWaiting(undecided.length);
  $("decisions-none").hidden = undecided.length > 0;
  $("decisions-open").replaceChildren(...undecided.map(decisionCard));
  $("decisions-done").replaceChildren(...decided.map(decisionCard));
});

/// One decision, as a card.
function decisionCard(d) {
  const card = el("li", undefined, "decision status-" + d.status);
  card.dataset.decisionId = d.id;
  const title = el("h3", d.kind.replaceAll("_", " ") + (d.subject ? " · " + d.subject : ""));
  title.append(" ", el("span", d.status.replace("_", " "), "decision-status"));
  const opened = "Opened " + new Date(d.createdAt).toLocaleString() + (d.openedBy ? " by " + d.openedBy : "");
  card.append(title, el("p", opened, "hint"));
  const evidence = d.evidence || {};
  if (evidence.problem) card.append(el("p", evidence.problem, "problem"));
  const investigation = evidence.agentInvestigation;
  if (investigation) {
    const p = el("p", "Investigation: " + (investigation.conclusion || "no conclusion"), "investigation");
    if (investigation.runId) {
      const open = el("button", "see the run", "link run-link");
      open.type = "button";
      open.addEventListener("click", () => {
        document.querySelector("nav button[data-tab=agent]").click();
        selectRun(investigation.runId);
      });
      p.append(" ", open);
    }
    card.append(p);
  }
  const recovery = evidence.autoRecover;
  if (recovery) {
    let said = "";
    if (recovery.degraded) said = "Not recovered automatically: " + recovery.why + ".";
    else if (recovery.skipped) said = "Not recovered automatically: it came back too often (" + recovery.skipped + ").";
    else if (recovery.outcome) said = "Automatic recovery: " + recovery.outcome + ".";
    else if (recovery.attempt) said = "Automatic recovery, attempt " + recovery.attempt + ".";
    if (recovery.suggestion) said += " Suggestion: " + recovery.suggestion + ".";
    card.append(el("p", said, "auto-recover"));
  }
  const raw = el("details");
  raw.append(el("summary", "Evidence"), el("pre", JSON.stringify(evidence, null, 2)));
  card.append(raw);
  if (UNDECIDED.includes(d.status)) {
    card.append(optionButtons(d));
  } else {
    card.append(resolutionText(d));
  }
  return card;
}

function optionButtons(d) {
  const actions = el("div", undefined, "decision-options");
  for (const option of d.options || []) {
    const button = el("button", option.label, "decision-option");
    button.dataset.optionId = option.id;
    button.title = option.capabilityId ? "Runs " + option.capabilityId : option.action;
    button.addEventListener("click", () => answerDecision(d, { status: "resolved", optionId: option.id }));
    actions.append(button);
    // What choosing it runs, whatever its label says.
    if (option.capabilityId) actions.append(el("code", optionCall(option), "option-call"));
  }
  const dismiss = el("button", "Dismiss", "decision-dismiss link");
  dismiss.addEventListener("click", () => answerDecision(d, { status: "dismissed" }));
  actions.append(dismiss);
  return actions;
}

/// The call an option makes: its capability and input, cut short.
function optionCall(option) {
  const input = JSON.stringify(option.input || {});
  return option.capabilityId + " " + (input.length > 200 ? input.slice(0, 200) + "…" : input);
}

/// Who decided, what, and what came of it.
function resolutionText(d) {
  const r = d.resolution || {};
  const by = d.resolvedBy || "someone";
  let text;
  if (d.status === "dismissed") text = "Dismissed by " + by;
  else if (r.cleared) text = "Cleared by itself (seen by " + by + ")";
  else text = "Resolved by " + by + ": " + ((r.option && r.option.label) || r.optionId || "");
  const p = el("p", text, "resolution");
  const x = r.execution;
  if (x && x.kind === "capability") {
    const outcome = x.status === "succeeded" ? "done" : x.status + (x.error ? ": " + x.error.message : "");
    p.append(el("span", " — " + x.capabilityId + " " + outcome, "execution status-" + x.status));
  } else if (x && x.outcome) {
    p.append(el("span", " — " + (typeof x.outcome === "string" ? x.outcome : JSON.stringify(x.outcome)), "execution"));
  } else if (!r.cleared && d.status === "resolved") {
    p.append(el("span", " — being carried out", "execution"));
  }
  return p;
}

async function answerDecision(d, body) {
  $("decisions-error").textContent = "";
  const answer = await api("PATCH", "/decisions/" + d.id, body);
  if (answer.status !== 200) $("decisions-error").textContent = errorText(answer);
  await refreshDecisions();
}

follow(["decision.created", "decision.updated"], refreshDecisions, refreshDecisions);
