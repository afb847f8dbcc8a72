// The console's Settings tab: every setting the host knows, grouped by area
// (model, agent, budgets, automation) under its label, each field carrying
// the bounds the server enforces. What is typed is checked where it is
// typed: a number out of range or not a number at all is an error next to
// the field and nothing is sent. A Default button shows the default in the
// field before it is saved; a set secret can be cleared. Changed fields are
// saved together, all or none. Uses console.js's helpers.
"use strict";

// Builds the field for one setting from its schema; `data-original` keeps
// what was shown, so only changed fields are sent.
function settingField(key, value, described) {
  const schema = described.schema;
  let field;
  if (schema.type === "boolean") {
    field = el("input");
    field.type = "checkbox";
    field.checked = value === true;
    field.dataset.original = String(field.checked);
  } else if (schema.enum) {
    field = el("select");
    for (const option of schema.enum) field.append(el("option", option));
    field.value = value;
    field.dataset.original = field.value;
  } else if (schema.contentMediaType === "application/json") {
    field = el("textarea");
    field.rows = 3;
    field.value = value == null ? "" : String(value);
    field.dataset.original = field.value;
  } else {
    field = el("input");
    if (schema.writeOnly) {
      field.type = "password";
      field.placeholder = value && value.set ? "set (hidden)" : "not set";
      field.autocomplete = "off";
    } else if (schema.type === "integer" || schema.type === "number") {
      field.type = "number";
      field.step = schema.type === "integer" ? "1" : "any";
      field.min = String(schema.minimum);
      field.max = String(schema.maximum);
      field.required = true;
    } else if (schema.maxLength) {
      field.maxLength = schema.maxLength;
    }
    field.value = schema.writeOnly || value == null ? "" : String(value);
    field.dataset.original = field.value;
  }
  field.name = key;
  field.id = "setting-" + key;
  field.dataset.kind = schema.writeOnly ? "secret" : schema.type;
  return field;
}

/// A button that puts the default into `field` (saved with the rest).
function defaultButton(field, described) {
  const button = el("button", "Default", "to-default");
  button.type = "button";
  button.title = "Put the default in the field: " + JSON.stringify(described.default);
  button.addEventListener("click", () => {
    const value = described.default;
    if (field.type === "checkbox") field.checked = value === true;
    else field.value = value == null ? "" : String(value);
    clearFieldError(field);
  });
  return button;
}

/// For a secret that is set: a box that clears it on save.
function clearSecretBox(key) {
  const label = el("label", undefined, "inline");
  const box = el("input");
  box.type = "checkbox";
  box.className = "clear-secret";
  box.dataset.for = key;
  label.append(box, " clear it");
  return label;
}

function settingRow(key, value, described) {
  const row = el("div", undefined, "setting");
  row.dataset.key = key;
  const field = settingField(key, value, described);
  const label = el("label", described.label);
  label.htmlFor = field.id;
  const control = el("span", undefined, "control");
  control.append(field);
  if (field.dataset.kind === "secret") {
    if (value && value.set) control.append(" ", clearSecretBox(key));
  } else {
    control.append(" ", defaultButton(field, described));
  }
  field.addEventListener("input", () => clearFieldError(field));
  row.append(label, control, el("span", described.help + " (" + key + ")", "hint"));
  return row;
}

async function refreshSettings() {
  const answer = await api("GET", "/settings");
  if (answer.status !== 200) return;
  const { settings, schema, groups } = answer.data;
  const sections = groups.map((group) => {
    const section = el("fieldset", undefined, "settings-group");
    section.dataset.group = group;
    section.append(el("legend", group));
    for (const [key, described] of Object.entries(schema)) {
      if (described.group === group) section.append(settingRow(key, settings[key], described));
    }
    return section;
  });
  $("settings").replaceChildren(...sections);
}

/// The changes typed, or null when a field holds what it may not (each
/// such field then says why).
function changedSettings() {
  const changes = {};
  let valid = true;
  for (const field of $("settings").querySelectorAll("input[name], select[name], textarea[name]")) {
    const kind = field.dataset.kind;
    if (kind === "boolean") {
      if (String(field.checked) !== field.dataset.original) changes[field.name] = field.checked;
    } else if (kind === "secret") {
      const clear = $("settings").querySelector(".clear-secret[data-for='" + field.name + "']");
      if (clear && clear.checked) changes[field.name] = null;
      else if (field.value !== "") changes[field.name] = field.value;
    } else if (kind === "integer" || kind === "number") {
      const problem = numberProblem(field);
      if (problem) {
        fieldError(field, problem);
        valid = false;
      } else if (field.value !== field.dataset.original) {
        changes[field.name] = Number(field.value);
      }
    } else if (field.value !== field.dataset.original) {
      changes[field.name] = field.value === "" ? null : field.value;
    }
  }
  return valid ? changes : null;
}

$("settings-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("settings-error").textContent = "";
  $("settings-saved").textContent = "";
  clearFieldErrors($("settings"));
  const changes = changedSettings();
  if (changes === null) {
    $("settings-error").textContent = "Some fields need fixing — nothing was changed.";
    return;
  }
  if (Object.keys(changes).length === 0) {
    $("settings-saved").textContent = "Nothing changed.";
    return;
  }
  const answer = await api("PATCH", "/settings", changes);
  if (answer.status !== 200) {
    showAnswerError(answer, $("settings"), $("settings-error"), " — nothing was changed.");
    return;
  }
  await refreshSettings();
  $("settings-saved").textContent = "Saved: " + Object.keys(changes).join(", ");
});
