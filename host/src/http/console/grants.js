// The console's Automation grants tab: the standing grants, a form for a
// new one and revoking. The form offers only what a grant can name — a
// loaded execute capability, or a policy action such capabilities carry —
// and holds its budgets and expiry to the bounds the server reports, so a
// wrong number is an error next to its field before anything is sent.
// Uses console.js's helpers.
"use strict";

const GRANT_FIELDS = { dailyInvocations: "grant-calls", dailyBytes: "grant-mb", expiresAt: "grant-days", action: "grant-action" };

/// Puts the server's bounds on the form's number fields.
function boundGrantForm(limits) {
  const mb = 1000000;
  const bounds = {
    "grant-calls": limits.dailyInvocations,
    "grant-mb": { minimum: 1, maximum: Math.floor(limits.dailyBytes.maximum / mb) },
    "grant-days": limits.expiresInDays,
  };
  for (const [id, bound] of Object.entries(bounds)) {
    $(id).min = String(bound.minimum);
    $(id).max = String(bound.maximum);
    $(id).step = "1";
    $(id).required = true;
  }
}

/// The choices a grant can name, from the loaded capabilities: execute
/// capabilities, then the policy actions they carry. Rebuilt only when
/// they change, so a choice being made is not reset under the user.
function offerGrantChoices(capabilities) {
  const execute = capabilities.map((c) => c.descriptor).filter((d) => d.label === "execute");
  const policies = [...new Set(execute.flatMap((d) => d.tags || []).filter((t) => t.startsWith("policy.")))].sort();
  const ids = execute.map((d) => d.id).sort();
  const signature = ids.join(",") + "|" + policies.join(",");
  const select = $("grant-action");
  if (select.dataset.signature === signature) return;
  const chosen = select.value;
  const caps = el("optgroup");
  caps.label = "Execute capabilities";
  for (const d of execute.sort((a, b) => a.id.localeCompare(b.id))) caps.append(new Option(d.id + " — " + d.summary, d.id));
  const actions = el("optgroup");
  actions.label = "Policy actions (every execute capability with the tag)";
  for (const p of policies) actions.append(new Option(p, p));
  select.replaceChildren(caps, actions);
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
  select.dataset.signature = signature;
}

async function refreshGrants() {
  const answer = await api("GET", "/automation-grants");
  if (answer.status !== 200) return;
  boundGrantForm(answer.data.limits);
  const body = $("grants");
  body.replaceChildren();
  for (const grant of answer.data.grants) {
    const row = el("tr");
    row.dataset.grantId = grant.id;
    const ended = grant.revokedAt ? "revoked" : grant.expiresAt < Date.now() ? "expired" : null;
    row.append(
      el("td", grant.action),
      el("td", String(grant.dailyInvocations)),
      el("td", ended || new Date(grant.expiresAt).toLocaleString()),
      el("td", grant.createdBy),
    );
    const actions = el("td");
    if (!ended) {
      const revoke = el("button", "Revoke", "revoke");
      revoke.addEventListener("click", async () => {
        const answer = await api("PATCH", "/automation-grants/" + grant.id, { revoke: true });
        $("grants-error").textContent = answer.status === 200 ? "" : errorText(answer);
        await refreshGrants();
      });
      actions.append(revoke);
    }
    row.append(actions);
    body.append(row);
  }
}

$("grant-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("grants-error").textContent = "";
  clearFieldErrors($("grant-form"));
  let valid = true;
  for (const id of ["grant-calls", "grant-mb", "grant-days"]) {
    const problem = numberProblem($(id));
    if (problem) {
      fieldError($(id), problem);
      valid = false;
    }
  }
  if (!$("grant-action").value) {
    fieldError($("grant-action"), "choose what the grant is for");
    valid = false;
  }
  if (!valid) return;
  const grant = {
    action: $("grant-action").value,
    dailyInvocations: Number($("grant-calls").value),
    dailyBytes: Number($("grant-mb").value) * 1000000,
    expiresAt: Date.now() + Number($("grant-days").value) * 86400000,
  };
  const answer = await api("POST", "/automation-grants", grant);
  if (answer.status !== 201) {
    showAnswerError(answer, $("grant-form"), $("grants-error"), "", GRANT_FIELDS);
    return;
  }
  await refreshGrants();
});

for (const id of ["grant-calls", "grant-mb", "grant-days", "grant-action"]) {
  $(id).addEventListener("input", () => clearFieldError($(id)));
}
