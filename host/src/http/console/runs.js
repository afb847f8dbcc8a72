// The console's agent runs: start one, follow it, message it, abort it.
// The transcript shows the conversation as it happened — the user's own
// messages, each model step with its time, its words and the tool calls it
// made (each call's input, status and error) — and the report as a summary
// a person reads: what was asked, what was done, what is verified in the
// library, what is still waiting, and the model's own last words labelled
// unverified, with the raw report behind a toggle. The tab follows the
// event stream (stream.js): an event of the selected run reads what it
// added, and a run's change of status refreshes the list. Uses
// console.js's helpers.
"use strict";

const ENDED = ["succeeded", "failed", "nothing_done", "cancelled", "budget_exceeded"];
// Every kind of event a run writes; any of them for the selected run
// prompts a read of all it has written since the last one.
const RUN_EVENTS = [
  "agent.message",
  "agent.text_delta",
  "agent.tool_call",
  "agent.run_status",
  "agent.plan",
  "agent.checked",
  "agent.compacted",
  "agent.snapshot",
  "agent.skill_read",
];
// Most events a read asks for; a read that gets this many reads on.
const RUN_PAGE = 500;
const transcript = { step: null, answered: false, calls: {} };

function clock(at) {
  return new Date(at).toLocaleTimeString();
}

function newStep(at) {
  const step = el("div", undefined, "step");
  step.append(el("time", clock(at)), el("span", " Agent: ", "who"), el("span", "", "words"), el("ul", undefined, "calls"));
  $("run-text").append(step);
  transcript.step = step;
  transcript.answered = false;
  return step;
}

function currentStep(at) {
  return !transcript.step || transcript.answered ? newStep(at) : transcript.step;
}

function callLine(p) {
  const input = p.input ? " " + p.input : "";
  const outcome = p.status ? " — " + p.status + (p.error ? ": " + p.error : "") : " — running";
  return p.name + input + outcome + (p.actor === "subagent" ? " (subagent)" : "");
}

function addEvent(event) {
  const p = event.payload;
  if (event.kind === "agent.message") {
    const said = el("div", undefined, "step you");
    const who = p.newTask ? " You (new task): " : " You: ";
    said.append(el("time", clock(event.at)), el("span", who, "who"), el("span", p.text));
    $("run-text").append(said);
    transcript.step = null;
  } else if (event.kind === "agent.text_delta") {
    currentStep(event.at).querySelector(".words").textContent += p.text;
  } else if (event.kind === "agent.tool_call") {
    if (p.phase === "started") {
      const line = el("li", callLine(p));
      line.dataset.input = p.input || "";
      currentStep(event.at).querySelector(".calls").append(line);
      transcript.calls[p.toolCallId] = line;
    } else {
      const line = transcript.calls[p.toolCallId] || currentStep(event.at).querySelector(".calls").appendChild(el("li"));
      line.className = "status-" + (p.status || p.phase);
      sayFailure(line, callLine(Object.assign({ input: line.dataset.input }, p)));
      // The next words are the model's answer to these results: a new step.
      transcript.answered = true;
      $("run-tools").append(el("li", callLine(p)));
    }
  } else if (event.kind === "agent.skill_read") {
    // Under the read_skill call it came from: what the skill opened, and
    // what stayed closed to this run and why.
    const closed = (p.closed || []).map((c) => c.tool + " (" + c.reason + ")");
    const text =
      "skill " + p.skill + (p.startedWith ? ", read before the first step" : "") +
      " — may call " + (p.callable.length ? p.callable.join(", ") : "none of its tools") +
      (closed.length ? "; closed: " + closed.join(", ") : "") + (p.actor === "subagent" ? " (subagent)" : "");
    currentStep(event.at).querySelector(".calls").append(el("li", text, "skill"));
  } else if (event.kind === "agent.run_status") {
    statusLine(event.at, p.status + (p.detail ? " — " + p.detail : ""));
  } else if (event.kind === "agent.snapshot") {
    // What a run that stopped short let go of: a call that started without
    // a result may have done its work ("result unknown").
    const calls = (p.calls || []).map((c) => c.name + ": " + c.state.replace("_", " "));
    statusLine(event.at, "stopped with " + (calls.length ? calls.join(", ") : "no calls open"));
  } else if (event.kind === "agent.checked") {
    const checks = (p.checks || []).map((c) => c.capability + ": " + c.outcome.replace("_", " "));
    statusLine(event.at, "checked before going on — " + checks.join(", "));
  }
}

function statusLine(at, text) {
  const line = el("div", undefined, "step status");
  line.append(el("time", clock(at)), " " + text);
  $("run-text").append(line);
  transcript.step = null;
}

/// The model's current plan (its notes, not proof), as the run holds it.
function showPlan(plan) {
  const marks = { pending: "[ ]", in_progress: "[>]", completed: "[x]", blocked: "[!]" };
  const list = $("run-plan");
  list.replaceChildren();
  if (!plan) return;
  list.append(el("li", "Plan: " + plan.goal, "goal"));
  for (const step of plan.steps) {
    list.append(el("li", (marks[step.status] || "") + " " + step.title + (step.evidence ? " — " + step.evidence : "")));
  }
}

function summary(report) {
  const body = report.body;
  const v = body.verified || {};
  const list = $("run-summary");
  list.replaceChildren();
  const row = (term, text) => list.append(el("dt", term), el("dd", text));
  row("Asked", body.goal);
  row("Outcome", body.status + (body.reason ? " — " + body.reason : ""));
  const writes = (v.calls && v.calls.writes) || { ok: 0, notOk: 0 };
  row("Done", writes.ok + " change(s) made" + (writes.notOk ? ", " + writes.notOk + " failed or refused" : ""));
  const imported = (v.imported || []).map((p) => p.title || p.planId);
  row("Verified in the library", imported.length ? imported.join(", ") : "nothing");
  const waiting = (v.plans || []).filter((p) => !/imported/.test(p.outcome || "")).map((p) => (p.title || p.planId) + ": " + p.outcome);
  row("Still waiting", waiting.length ? waiting.join("; ") : "nothing");
  const said = body.modelFinalText && body.modelFinalText.text;
  if (said) row("The model said (not verified)", said);
}

const refreshRuns = coalesced(async () => {
  const answer = await api("GET", "/agent/runs");
  if (answer.status !== 200) return;
  const list = $("runs");
  list.replaceChildren();
  for (const run of answer.data.items) {
    const item = el("li");
    item.dataset.runId = run.id;
    item.append(el("span", run.status, "status-" + run.status), " — " + run.goal);
    if (run.id === state.run) item.classList.add("selected");
    item.addEventListener("click", () => selectRun(run.id));
    list.append(item);
  }
});

function selectRun(id) {
  state.run = id;
  state.afterSeq = 0;
  transcript.step = null;
  transcript.calls = {};
  $("run-text").replaceChildren();
  $("run-tools").replaceChildren();
  $("run-report").textContent = "";
  $("run-report-status").textContent = "";
  $("run-reasons").replaceChildren();
  $("run-summary").replaceChildren();
  $("run-why").textContent = "";
  $("run-detail").hidden = false;
  document.querySelectorAll("#runs li").forEach((li) => li.classList.toggle("selected", li.dataset.runId === id));
  refreshRun();
}

/// Reads what the selected run wrote after the last event shown, so every
/// event is shown once, in order, however the read was prompted.
const refreshRun = coalesced(async () => {
  let read;
  do {
    if (!state.run) return;
    const id = state.run;
    const after = state.afterSeq;
    const answer = await api("GET", "/agent/runs/" + id + "?afterSeq=" + after + "&limit=" + RUN_PAGE);
    // Another run was selected meanwhile, or this one shown afresh.
    if (answer.status !== 200 || id !== state.run || after !== state.afterSeq) return;
    read = answer.data;
    showRun(read);
  } while (read.events.length === RUN_PAGE);
});

function showRun({ run, events, nextSeq, report }) {
  $("run-id").textContent = run.id;
  $("run-status").textContent = run.status;
  $("run-status").className = "status-" + run.status;
  $("run-goal-text").textContent = run.goal;
  showPlan(run.plan);
  // Why it ended as it did (or what holds it back), in words, at the top.
  const why = run.error ? run.error + (run.blockedOn ? " — blocked (" + run.blockedOn + "): it goes on once that is fixed" : "") : "";
  sayFailure($("run-why"), why);
  // Abort only what can still be stopped.
  $("run-abort").hidden = ENDED.includes(run.status) && !run.blockedOn;
  // Only an ended run can be deleted; one kept for its open writes says so.
  $("run-delete").hidden = !ENDED.includes(run.status) || Boolean(run.deletedAt);
  if (run.deletedAt) sayFailure($("run-why"), "deleted; kept until its writes whose outcome is open are settled");
  for (const event of events) addEvent(event);
  state.afterSeq = nextSeq;
  if (report) {
    // A waiting run's report says where it stands now, not how it ended.
    $("run-report-status").textContent = (report.current ? "Where it stands now: " : "Verified outcome: ") +
      report.body.status + (report.body.reason ? " — " + report.body.reason : "");
    $("run-reasons").replaceChildren(...(report.body.reasons || []).map((r) => el("li", r)));
    summary(report);
    $("run-report").textContent = JSON.stringify(report.body, null, 2);
  }
}

follow(
  RUN_EVENTS,
  (event) => {
    const p = event.payload || {};
    if (event.kind === "agent.run_status") refreshRuns();
    // An event already shown (a reconnecting stream repeats a few) reads nothing.
    if (p.runId && p.runId === state.run && !(p.runSeq <= state.afterSeq)) refreshRun();
  },
  () => {
    refreshRuns();
    refreshRun();
  },
);

$("run-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("run-error").textContent = "";
  const answer = await api("POST", "/agent/runs", { goal: $("run-goal").value, mode: $("run-mode").value });
  if (answer.status !== 201) {
    sayFailure($("run-error"), errorText(answer));
    return;
  }
  $("run-goal").value = "";
  await refreshRuns();
  selectRun(answer.data.id);
});

$("message-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (!state.run || !$("message-text").value) return;
  // Without "New task" a message goes on with the run's task and plan.
  const body = { text: $("message-text").value, newTask: $("message-new-task").checked };
  const answer = await api("POST", "/agent/runs/" + state.run + "/messages", body);
  $("run-error").textContent = answer.status === 202 || answer.status === 200 ? "" : errorText(answer);
  if (answer.status === 200) {
    $("message-text").value = "";
    $("message-new-task").checked = false;
  }
});

$("run-delete").addEventListener("click", async () => {
  if (!state.run || !confirm("Delete this run, its messages, events and session log?")) return;
  const answer = await api("DELETE", "/agent/runs/" + state.run);
  if (answer.status !== 200) {
    sayFailure($("run-error"), errorText(answer));
    return;
  }
  $("run-error").textContent =
    answer.data.deleted === "kept" ? "Deleted; kept until its " + answer.data.openWrites + " open write(s) are settled." : "";
  state.run = null;
  $("run-detail").hidden = true;
  await refreshRuns();
});

$("run-abort").addEventListener("click", async () => {
  if (!state.run) return;
  const answer = await api("POST", "/agent/runs/" + state.run + "/abort", { reason: "aborted from the console" });
  $("run-error").textContent = answer.status < 300 ? "" : errorText(answer);
});

/// Until a real model is set up, runs default to plan only, and the console
/// says the demo model follows scripts, not goals.
async function checkModel() {
  const answer = await api("GET", "/settings");
  if (answer.status !== 200) return;
  const provider = answer.data.settings["model.provider"];
  const demo = !provider || provider === "scripted";
  $("run-demo-note").hidden = !demo;
  if (demo) $("run-mode").value = "plan_only";
}

$("run-demo-settings").addEventListener("click", () => document.querySelector("nav button[data-tab=settings]").click());
