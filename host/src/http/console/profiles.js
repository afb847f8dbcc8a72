// The Library tab's quality profiles: each published `quality.*` profile
// in words, and a form that writes one (PUT /policies/{name}) — checked as
// the sweep reads it, drafted and published on the invoke path. A cutoff
// makes a file below it wanted again, to be replaced by a better release.
// Uses the helpers of console.js (api, el, $, errorText).
"use strict";

/// The published revision of each quality profile, by name.
async function refreshProfiles() {
  const answer = await api("GET", "/policies");
  const list = $("profiles");
  if (answer.status !== 200) {
    $("profile-error").textContent = "Could not read the quality profiles: " + errorText(answer);
    return;
  }
  const published = answer.data.policies.filter((p) => p.name.startsWith("quality.") && p.status === "published");
  list.replaceChildren();
  if (!published.length) list.append(el("li", "No quality profile yet: without one the most seeded release is fetched and nothing is upgraded.", "hint"));
  for (const p of published) {
    const item = el("li", undefined, "profile");
    item.dataset.profile = p.name;
    item.append(el("strong", p.name), " " + profileWords(p.body) + " ");
    const edit = el("button", "Edit");
    edit.type = "button";
    edit.addEventListener("click", () => fillProfileForm(p.name, p.body));
    item.append(edit);
    list.append(item);
  }
}

/// "2160p > 1080p > 720p, upgraded until 1080p; sources Web, Blu-ray; rejects CAM".
function profileWords(b) {
  const parts = [(b.preferredResolutions || []).join(" > ") + (b.cutoff ? ", upgraded until " + b.cutoff : ", never upgraded")];
  if (b.allowedSources) parts.push("sources " + b.allowedSources.join(", "));
  if (b.preferredCodecs) parts.push("prefers " + b.preferredCodecs.join(", "));
  if (b.rejectTerms) parts.push("rejects " + b.rejectTerms.join(", "));
  if (b.minSizeMb != null || b.maxSizeMb != null) parts.push((b.minSizeMb ?? 0) + " to " + (b.maxSizeMb ?? "any") + " MB");
  return parts.join("; ");
}

const listed = (text) => text.split(",").map((v) => v.trim()).filter((v) => v);

function fillProfileForm(name, b) {
  $("profile-name").value = name;
  $("profile-resolutions").value = (b.preferredResolutions || []).join(", ");
  $("profile-cutoff").value = b.cutoff || "";
  $("profile-sources").value = (b.allowedSources || []).join(", ");
  $("profile-reject").value = (b.rejectTerms || []).join(", ");
  $("profile-min").value = b.minSizeMb ?? "";
  $("profile-max").value = b.maxSizeMb ?? "";
}

$("profile-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("profile-error").textContent = "";
  $("profile-done").textContent = "";
  const name = $("profile-name").value.trim();
  const body = { preferredResolutions: listed($("profile-resolutions").value) };
  if ($("profile-cutoff").value.trim()) body.cutoff = $("profile-cutoff").value.trim();
  if ($("profile-sources").value.trim()) body.allowedSources = listed($("profile-sources").value);
  if ($("profile-reject").value.trim()) body.rejectTerms = listed($("profile-reject").value);
  for (const [id, key] of [["profile-min", "minSizeMb"], ["profile-max", "maxSizeMb"]]) {
    if ($(id).value.trim()) body[key] = Number($(id).value);
  }
  const answer = await api("PUT", "/policies/" + encodeURIComponent(name), body);
  if (answer.status !== 200) {
    sayFailure($("profile-error"), errorText(answer));
    return;
  }
  $("profile-done").textContent = "Published " + name + " (revision " + answer.data.revision + "): titles that use it are judged by it from now on.";
  refreshProfiles();
  refreshLibrary();
});
