// The operator console: a session login, agent runs (start, follow, message,
// abort; in runs.js), decisions waiting for a human (decisions.js), the
// library (library.js), services (services.js),
// durable tasks, approvals waiting for a human, automation grants
// (grants.js), the loaded capabilities, skills (skills.js), the audit log, and settings
// (settings.js). Every request
// goes to the same API as scripts use (/api/v1), with the session cookie
// and, for changes, the session's CSRF token. The Agent and Decisions tabs
// follow the event stream (stream.js); the other views poll. Nothing here
// holds authority the session does not.
"use strict";

const state = { csrf: sessionStorage.getItem("capstan.csrf"), run: null, afterSeq: 0, timers: [] };
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && state.csrf) headers["x-csrf-token"] = state.csrf;
  const resp = await fetch("/api/v1" + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  let data = null;
  try {
    data = await resp.json();
  } catch (_) {
    data = null;
  }
  if (resp.status === 401 && path !== "/session") showLogin();
  return { status: resp.status, data };
}

function errorText(answer) {
  const e = answer.data && answer.data.error;
  return e ? e.message : "the request failed (HTTP " + answer.status + ")";
}

/// Whether a failure is about a service nobody set up yet.
function aboutMissingService(text) {
  return /not set up|not configured|no Torznab indexer|no file root named/i.test(text || "");
}

/// A button that opens the Services page, for failures about a missing service.
function servicesLink() {
  const link = el("button", "Set up services", "link");
  link.type = "button";
  link.addEventListener("click", () => document.querySelector("nav button[data-tab=services]").click());
  return link;
}

/// `node` saying `text`, with a way to the Services page when that is the fix.
function sayFailure(node, text) {
  node.replaceChildren(text || "");
  if (aboutMissingService(text)) node.append(" ", servicesLink());
}

// --- field errors: said next to the field, cleared when it changes ----------

/// Shows `message` right after `field` and marks it invalid.
function fieldError(field, message) {
  clearFieldError(field);
  const note = el("span", message, "field-error");
  note.setAttribute("role", "alert");
  field.setAttribute("aria-invalid", "true");
  field.after(note);
}

function clearFieldError(field) {
  field.removeAttribute("aria-invalid");
  const next = field.nextElementSibling;
  if (next && next.classList.contains("field-error")) next.remove();
}

function clearFieldErrors(scope) {
  scope.querySelectorAll("[aria-invalid]").forEach(clearFieldError);
}

/// Why the number in `field` is not one it may hold (from its min, max and
/// step), or "" when it is fine. A browser keeps text that is no number
/// out of `value`, so `badInput` is what tells "abc" from an empty field.
function numberProblem(field) {
  const v = field.validity;
  if (v.badInput) return "not a number";
  if (field.value.trim() === "") return "enter a number";
  if (v.stepMismatch) return field.step === "1" ? "must be a whole number" : "not a step this field takes";
  if (v.rangeUnderflow) return "must be at least " + field.min;
  if (v.rangeOverflow) return "must be at most " + field.max;
  return "";
}

/// An API refusal: next to the field it names (`fields` maps API names to
/// element ids; otherwise the field of that name in `scope`), and in `node`.
function showAnswerError(answer, scope, node, suffix, fields) {
  const e = answer.data && answer.data.error;
  node.textContent = errorText(answer) + (suffix || "");
  if (!e || !e.field) return;
  const field = fields && fields[e.field] ? $(fields[e.field]) : scope.querySelector("[name='" + e.field + "']");
  if (field) fieldError(field, e.message);
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function stopTimers() {
  state.timers.forEach(clearInterval);
  state.timers = [];
}

function showLogin() {
  stopTimers();
  if (typeof closeStream === "function") closeStream();
  $("app-view").hidden = true;
  $("logout").hidden = true;
  $("who").textContent = "";
  $("login-view").hidden = false;
}

function showApp(admin) {
  $("login-view").hidden = true;
  $("app-view").hidden = false;
  $("logout").hidden = false;
  $("who").textContent = admin ? "Signed in as " + admin : "";
  stopTimers();
  checkModel();
  refreshRuns();
  refreshLibrary();
  refreshApprovals();
  // The Services tab, loaded ahead: it keeps the first-run checklist.
  refreshServices();
  refreshCapabilities();
  refreshSettings();
  refreshGrants();
  refreshDecisions();
  // Runs and decisions change as their events arrive, not on a timer.
  openStream();
  refreshTasks();
  state.timers.push(setInterval(refreshTasks, 3000));
  state.timers.push(setInterval(refreshCapabilities, 5000));
  refreshAudit();
  state.timers.push(setInterval(refreshAudit, 5000));
  state.timers.push(setInterval(refreshLibrary, 5000));
  state.timers.push(setInterval(refreshApprovals, 3000));
  openTabOfAddress();
}

// --- session -------------------------------------------------------------

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  const answer = await api("POST", "/session", { name: $("login-name").value, password: $("login-password").value });
  if (answer.status !== 200) {
    $("login-error").textContent = errorText(answer);
    return;
  }
  state.csrf = answer.data.csrfToken;
  sessionStorage.setItem("capstan.csrf", state.csrf);
  sessionStorage.setItem("capstan.admin", answer.data.admin);
  $("login-password").value = "";
  showApp(answer.data.admin);
});

$("logout").addEventListener("click", async () => {
  await api("DELETE", "/session");
  state.csrf = null;
  sessionStorage.removeItem("capstan.csrf");
  showLogin();
});

/// The nav button of tab `name`, if there is one.
function tabButton(name) {
  return [...document.querySelectorAll("nav button")].find((b) => b.dataset.tab === name);
}

// Each tab has its own address (#library, #approvals, ...): a reload opens
// the same tab, and Back and Forward move between the tabs opened.
function openTabOfAddress() {
  const button = tabButton(location.hash.slice(1));
  if (button) button.click();
}
window.addEventListener("popstate", openTabOfAddress);

document.querySelectorAll("nav button").forEach((button) => {
  button.addEventListener("click", () => {
    if (location.hash !== "#" + button.dataset.tab) history.pushState(null, "", "#" + button.dataset.tab);
    document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b === button));
    document.querySelectorAll(".tab").forEach((tab) => {
      tab.hidden = tab.id !== "tab-" + button.dataset.tab;
    });
    // Forms being edited are not refreshed under the user: loaded on opening.
    // Lists kept fresh by a timer are read again too, so a tab never opens
    // on what was true a few seconds ago.
    const onOpening = {
      services: refreshServices,
      decisions: refreshDecisions,
      tasks: refreshTasks,
      library: refreshLibrary,
      approvals: refreshApprovals,
      capabilities: refreshCapabilities,
      skills: refreshSkills,
      audit: refreshAudit,
    }[button.dataset.tab];
    if (onOpening) onOpening();
  });
});

// --- tasks -----------------------------------------------------------------

async function refreshTasks() {
  const sweeps = $("tasks-sweeps").checked;
  const answer = await api("GET", "/tasks?limit=100" + (sweeps ? "&sweeps=true" : ""));
  if (answer.status !== 200) return;
  const folded = answer.data.foldedSweeps;
  $("tasks-folded").textContent = folded > 0 ? folded + " of the background sweeps' own tasks are folded away." : "";
  const body = $("tasks");
  body.replaceChildren();
  for (const task of answer.data.tasks) {
    const row = el("tr");
    row.dataset.taskId = task.id;
    row.append(
      el("td", task.kind + (task.subject ? " · " + task.subject : "")),
      el("td", task.status, "status-" + task.status),
      el("td", task.attempts + "/" + task.maxAttempts),
      el("td", task.lastError || ""),
      el("td", new Date(task.updatedAt).toLocaleString()),
    );
    const actions = el("td");
    const change = { queued: "cancel", running: "cancel", failed: "retry", dead: "retry", cancelled: "retry" }[task.status];
    if (change) {
      const button = el("button", change === "cancel" ? "Cancel" : "Run again", change);
      button.addEventListener("click", async () => {
        const answer = await api("POST", "/tasks/" + task.id + "/" + change);
        $("tasks-error").textContent = answer.status === 200 ? "" : errorText(answer);
        await refreshTasks();
      });
      actions.append(button);
    }
    row.append(actions);
    body.append(row);
  }
}

$("tasks-sweeps").addEventListener("change", refreshTasks);

// --- approvals -------------------------------------------------------------

function megabytes(bytes) {
  if (bytes == null) return "";
  if (bytes >= 1073741824) return (bytes / 1073741824).toFixed(1) + " GB";
  return Math.max(1, Math.round(bytes / 1048576)) + " MB";
}

/// What a plan is, in words a person judges it by: the title, and for a
/// download the release, its size, quality and indexer (and whether it is
/// an upgrade); for an import each file's source and destination, and for
/// an upgrade the file each one replaces. The plan's id stays for reference.
function planCell(title, plan, planType, planId) {
  const cell = el("td");
  cell.append(el("strong", title || planType + " plan"));
  if (plan && plan.release) cell.append(el("div", plan.release, "release"));
  const facts = [];
  if (plan && plan.size != null) facts.push(megabytes(plan.size));
  if (plan && plan.quality) facts.push(plan.quality);
  if (plan && plan.indexer) facts.push("from " + plan.indexer);
  if (plan && plan.mode) facts.push("by " + plan.mode);
  if (plan && plan.upgrade) facts.push(UPGRADE_WORDS[plan.upgrade] || "an upgrade");
  if (facts.length) cell.append(el("div", facts.join(" · "), "hint"));
  for (const file of (plan && plan.files) || []) {
    cell.append(el("div", file.source + " → " + file.destination, "file-move"));
    for (const old of file.replaces || []) cell.append(el("div", "replaces " + old + " (kept in the recycle folder)", "file-replaced"));
  }
  if (plan && plan.moreFiles) cell.append(el("div", "and " + plan.moreFiles + " more files", "hint"));
  if (plan && plan.handOff) cell.append(el("div", plan.handOff, "hint"));
  cell.append(el("div", planType + " " + planId, "hint plan-id"));
  return cell;
}

const UPGRADE_WORDS = {
  better: "an upgrade: better than the file the library holds",
  proper: "an upgrade: a PROPER/REPACK of the file the library holds",
};

/// The nav button's text: the tab's name and how many wait for a person.
function markApprovalsWaiting(count) {
  const button = document.querySelector("nav button[data-tab=approvals]");
  if (button) button.textContent = count > 0 ? "Approvals (" + count + ")" : "Approvals";
}

// Pending requests and approvals not yet used (past their expiry they are
// neither): both can be revoked, and then authorise nothing. One row a
// plan: the newest approval of it.
async function refreshApprovals() {
  const answer = await api("GET", "/approvals");
  if (answer.status !== 200) return;
  const body = $("approvals");
  body.replaceChildren();
  const usable = (a) => (a.status === "pending" || a.status === "approved") && a.expiresAt > Date.now();
  const open = [];
  const seen = new Set();
  for (const approval of answer.data.approvals.filter(usable)) {
    const key = approval.planType + ":" + approval.planId;
    if (seen.has(key)) continue;
    seen.add(key);
    open.push(approval);
  }
  const drafts = await refreshDrafts(new Set(open.map((a) => a.planId)));
  markApprovalsWaiting(drafts + open.filter((a) => a.status === "pending").length);
  for (const approval of open) {
    const row = el("tr");
    row.dataset.approvalId = approval.id;
    const status = approval.status === "approved" ? "approved by " + approval.decidedBy : "pending";
    const plan = approval.plan;
    const what = planCell(plan && plan.title, plan, approval.planType, approval.planId);
    if (approval.stale) what.append(el("div", "changed since it was requested", "hint"));
    row.append(what, el("td", approval.requestedBy), el("td", status, "status-" + approval.status));
    const actions = el("td");
    const choices = approval.status === "pending" ? [["Approve", "approved"], ["Reject", "rejected"]] : [];
    for (const [label, status] of choices) {
      const button = el("button", label);
      button.className = "decide-" + status;
      button.addEventListener("click", () => decide(approval, status));
      actions.append(button);
    }
    // A stale approval authorises nothing already: nothing to revoke.
    if (!approval.stale) {
      const revoke = el("button", "Revoke", "revoke");
      revoke.title = "Withdraw it: it will authorise nothing";
      revoke.addEventListener("click", () => changeApproval(approval, { status: "revoked" }));
      actions.append(revoke);
    }
    row.append(actions);
    body.append(row);
  }
}

// Drafts with no open approval (pending, or approved and not yet used):
// one click approves one (asked for and decided at once); answers how many
// are listed.
// The name of each slot a draft is for, by slot id: the library is read
// again only when a draft names a slot not known yet, not every refresh.
const draftTitles = new Map();

async function refreshDrafts(asked) {
  const answer = await api("GET", "/acquisition-plans?status=draft");
  if (answer.status !== 200) return 0;
  const waiting = answer.data.plans.filter((p) => !asked.has(p.id));
  if (waiting.some((p) => !draftTitles.has(p.slotId))) {
    const held = await api("GET", "/library");
    for (const item of held.status === 200 ? held.data.items : []) {
      const e = item.entity;
      const named = e.title + (e.year ? " (" + e.year + ")" : "");
      for (const s of item.slots) draftTitles.set(s.id, named + (s.season != null ? " season " + s.season : ""));
    }
  }
  const titles = draftTitles;
  const body = $("drafts");
  body.replaceChildren();
  for (const plan of waiting) {
    const row = el("tr");
    row.dataset.planId = plan.id;
    const p = plan.payload || {};
    const summary = { release: p.title, size: p.size, quality: p.quality, indexer: p.indexer, handOff: p.handOff && p.handOff.note };
    const approve = el("button", "Approve", "approve-draft");
    approve.addEventListener("click", async () => {
      $("approvals-error").textContent = "";
      const made = await api("POST", "/approvals", { planType: "acquisition", planId: plan.id });
      if (made.status !== 201) {
        $("approvals-error").textContent = errorText(made);
      } else {
        const decided = await api("PATCH", "/approvals/" + made.data.id, { status: "approved", payloadHash: made.data.payloadHash });
        if (decided.status !== 200) $("approvals-error").textContent = errorText(decided);
      }
      await refreshApprovals();
    });
    const actions = el("td");
    actions.append(approve);
    row.append(planCell(titles.get(plan.slotId), summary, "acquisition", plan.id), el("td", plan.createdBy), actions);
    body.append(row);
  }
  return waiting.length;
}

function decide(approval, status) {
  return changeApproval(approval, { status, payloadHash: approval.payloadHash });
}

async function changeApproval(approval, change) {
  $("approvals-error").textContent = "";
  const answer = await api("PATCH", "/approvals/" + approval.id, change);
  if (answer.status !== 200) $("approvals-error").textContent = errorText(answer);
  await refreshApprovals();
}

// --- capabilities ----------------------------------------------------------

async function refreshCapabilities() {
  const answer = await api("GET", "/capabilities");
  if (answer.status !== 200) return;
  const body = $("capabilities");
  body.replaceChildren();
  offerGrantChoices(answer.data.capabilities);
  for (const cap of answer.data.capabilities) {
    const d = cap.descriptor;
    const row = el("tr");
    row.append(el("td", d.id), el("td", d.label), el("td", cap.effectClass), el("td", cap.source.kind || String(cap.source)), el("td", d.summary));
    body.append(row);
  }
  const compiling = answer.data.compiling || [];
  $("compiling").replaceChildren(...compiling.map((c) =>
    el("li", c.file + " — compiling since " + new Date(c.startedMs).toLocaleTimeString() + ", " +
      (c.bytes / 1e6).toFixed(1) + " MB")));
  // While something compiles, look again every second, so it shows as
  // loaded (or refused) soon after it is.
  clearTimeout(state.compilingTimer);
  if (compiling.length > 0) state.compilingTimer = setTimeout(refreshCapabilities, 1000);
  $("held").replaceChildren(...answer.data.held.map((h) => el("li", h.id + " — " + h.reason)));
  $("refused").replaceChildren(...answer.data.refused.map((r) => el("li", r.file + " — " + r.reason)));
}

// --- audit log -------------------------------------------------------------

async function refreshAudit() {
  const answer = await api("GET", "/audit?latest=100");
  if (answer.status !== 200) return;
  const body = $("audit");
  body.replaceChildren();
  for (const e of answer.data.events.slice().reverse()) {
    const row = el("tr");
    row.append(
      el("td", String(e.seq)),
      el("td", new Date(e.at).toLocaleString()),
      el("td", e.principal),
      el("td", e.action),
      el("td", e.subject),
      el("td", e.outcome, "status-" + e.outcome),
      el("td", e.detail || e.inputSummary || "", "detail"),
    );
    body.append(row);
  }
}

$("audit-verify").addEventListener("click", async () => {
  const answer = await api("GET", "/audit/verify");
  if (answer.status !== 200) {
    $("audit-verdict").textContent = errorText(answer);
    return;
  }
  const verdict = answer.data;
  $("audit-verdict").textContent = verdict.Intact
    ? "Intact: " + verdict.Intact.events + " events, every link checked."
    : "Broken at event " + verdict.Broken.seq + ": " + verdict.Broken.reason;
});

// --- start -----------------------------------------------------------------

// Only once every script has run: the tabs' scripts (runs.js, settings.js,
// ...) are deferred after this one, and a quick answer must not call them
// before they exist.
document.addEventListener("DOMContentLoaded", async () => {
  if (!state.csrf) {
    showLogin();
    return;
  }
  const answer = await api("GET", "/capabilities");
  if (answer.status === 200) showApp(sessionStorage.getItem("capstan.admin"));
  else showLogin();
});
