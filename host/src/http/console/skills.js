// The console's Skills tab: the playbooks agent runs read (built in, and
// the skills folder's), the folders refused with the reason, one skill
// whole, and writing one. A skill written here is checked by the server as
// a listing checks it and stored in the skills folder; a refused text
// changes nothing and its reason is said beside the text. Uses console.js's
// helpers.
"use strict";

const SKILL_TEMPLATE = [
  "---",
  "name: my-skill",
  'description: "One line: what this skill is for."',
  "tools: [inventory.query, task.inspect]",
  "---",
  "# What to do",
  "",
  "1. Call `inventory.query` with words of the title.",
  "",
].join("\n");

/// A skill as the text of its SKILL.md (the front matter as the server
/// reads it: a quoted description, lists in brackets).
function skillText(skill) {
  const list = (items) => "[" + items.join(", ") + "]";
  const lines = ["---", "name: " + skill.name, "description: " + JSON.stringify(skill.description), "tools: " + list(skill.tools)];
  if (skill.triggers.length) lines.push("triggers: " + list(skill.triggers));
  lines.push("---", skill.instructions, "");
  return lines.join("\n");
}

/// Puts `text` in the editor under `name`; a skill of the folder may be
/// replaced, a built-in's copy needs a name of its own.
function editSkill(name, text, replace) {
  $("skill-name").value = name;
  $("skill-text").value = text;
  $("skill-replace").checked = replace;
  clearFieldErrors($("skill-form"));
  $("skill-saved").textContent = "";
  $("skill-name").focus();
}

function showSkill(skill) {
  const view = $("skill-view");
  view.hidden = false;
  const where = skill.source.kind === "builtIn" ? "built in" : skill.source.path;
  $("skill-view-title").textContent = skill.name + " — " + where;
  $("skill-view-facts").textContent =
    "Tools: " + (skill.tools.join(", ") || "none") + (skill.triggers.length ? " · playbook for " + skill.triggers.join(", ") : "");
  $("skill-view-text").textContent = skill.instructions;
  const edit = $("skill-view-edit");
  if (skill.source.kind === "builtIn") {
    edit.textContent = "Copy into a new skill";
    edit.onclick = () => editSkill(skill.name + "-copy", skillText(Object.assign({}, skill, { name: skill.name + "-copy" })), false);
  } else {
    edit.textContent = "Edit";
    edit.onclick = () => editSkill(skill.name, skillText(skill), true);
  }
}

async function refreshSkills() {
  const answer = await api("GET", "/skills");
  if (answer.status !== 200) {
    $("skills-error").textContent = errorText(answer);
    return;
  }
  $("skills-error").textContent = "";
  const body = $("skills");
  body.replaceChildren();
  for (const skill of answer.data.skills) {
    const row = el("tr");
    row.dataset.skill = skill.name;
    const open = el("button", skill.name, "link");
    open.type = "button";
    open.addEventListener("click", () => showSkill(skill));
    const name = el("td");
    name.append(open);
    const source = skill.source.kind === "builtIn" ? "built in" : "skills folder";
    row.append(name, el("td", skill.description), el("td", skill.tools.join(", ")), el("td", skill.triggers.join(", ")), el("td", source));
    body.append(row);
  }
  const refused = answer.data.refused;
  $("skills-refused-none").hidden = refused.length > 0;
  $("skills-refused").replaceChildren(...refused.map((r) => el("li", r.folder + " — " + r.reason)));
}

async function saveSkill(event) {
  event.preventDefault();
  const form = $("skill-form");
  clearFieldErrors(form);
  $("skill-saved").textContent = "";
  const name = $("skill-name").value.trim();
  if (!name) {
    fieldError($("skill-name"), "Give the skill a name: the same as the name in its front matter.");
    return;
  }
  const body = { text: $("skill-text").value, replace: $("skill-replace").checked };
  const answer = await api("PUT", "/skills/" + encodeURIComponent(name), body);
  if (answer.status === 200 || answer.status === 201) {
    $("skill-saved").textContent =
      (answer.status === 201 ? "Saved as a new skill: " : "Replaced: ") + answer.data.name + ". Runs read it from their next task.";
    $("skill-replace").checked = true;
    showSkill(answer.data);
    await refreshSkills();
  } else if (answer.status === 409) {
    fieldError($("skill-name"), errorText(answer));
  } else {
    fieldError($("skill-text"), errorText(answer));
  }
}

$("skill-form").addEventListener("submit", saveSkill);
$("skill-new").addEventListener("click", () => editSkill("my-skill", SKILL_TEMPLATE, false));
