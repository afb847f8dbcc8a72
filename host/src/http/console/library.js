// The console's Library tab: what the library holds and wants, and "Add
// title" — search TMDB through catalog.lookup, pick a result, choose a
// quality, a profile and (for a series) the seasons, and want it through
// POST /library/titles. Wanted titles can be changed or given up. Uses the
// helpers of console.js (api, el, $, errorText), loaded before it.
"use strict";

// TMDB's image host with a size, unless the settings name another
// (library.poster_base_url); the page's policy admits that host.
const POSTERS = "https://image.tmdb.org/t/p/w92";

async function posterBase() {
  const answer = await api("GET", "/settings");
  const set = answer.status === 200 ? answer.data.settings["library.poster_base_url"] : null;
  return (set || POSTERS).replace(/\/+$/, "");
}
// What each slot status means to someone watching a title arrive.
const SLOT_WORDS = { wanted: "wanted", reserved: "being fetched", satisfied: "in the library", unwanted: "not wanted" };
// announced: the entity the "Wanted: …" line is about, until its row
// says what is happening to it.
// grantFor: the entity the offer of standing grants is about.
const library = { picked: null, announced: null, grantFor: null };

async function refreshLibrary() {
  refreshCalendar();
  refreshProfiles();
  refreshBlocklist();
  const answer = await api("GET", "/library");
  if (answer.status !== 200) return;
  const body = $("library");
  body.replaceChildren();
  for (const item of answer.data.items) {
    const e = item.entity;
    if (e.id === library.announced && item.slots.some((s) => s.status !== "wanted" || s.download || s.waitingPlan)) {
      // Its row says what is happening now: the line has done its work.
      $("add-done").textContent = "";
      library.announced = null;
    }
    const wanted = el("td");
    for (const s of item.slots) {
      wanted.append(slotLine(s));
      const episodes = s.episodes ? episodeList(s) : null;
      if (episodes) wanted.append(episodes);
    }
    const row = el("tr");
    row.dataset.entityId = e.id;
    row.append(el("td", e.title + (e.year ? " (" + e.year + ")" : "")), el("td", e.kind), wanted);
    const actions = el("td");
    if (item.slots.some((s) => s.status === "wanted" || s.status === "reserved")) {
      const stop = el("button", "Stop wanting", "unwant");
      stop.type = "button";
      stop.addEventListener("click", async () => {
        const done = await api("DELETE", "/library/titles/" + encodeURIComponent(e.id));
        $("library-error").textContent = done.status === 200 ? "" : errorText(done);
        refreshLibrary();
      });
      actions.append(stop);
    }
    if (item.slots.some((s) => s.status === "wanted")) {
      const search = el("button", "Search now", "search-now");
      search.type = "button";
      search.addEventListener("click", async () => {
        const done = await api("POST", "/library/titles/" + encodeURIComponent(e.id) + "/search");
        $("library-error").textContent = done.status === 202 ? "" : errorText(done);
        $("library-done").textContent = done.status === 202 ? "Searching the indexers for " + e.title + " now." : "";
      });
      actions.append(" ", search);
    }
    row.append(actions);
    body.append(row);
  }
}

/// A button that opens another tab, as a link in a sentence.
function tabLink(text, tab, then) {
  const link = el("button", text, "link");
  link.type = "button";
  link.addEventListener("click", () => {
    document.querySelector("nav button[data-tab=" + tab + "]").click();
    if (then) then();
  });
  return link;
}

function bytesPerSecond(n) {
  if (n >= 1048576) return (n / 1048576).toFixed(1) + " MB/s";
  if (n >= 1024) return Math.round(n / 1024) + " kB/s";
  return n + " B/s";
}

function timeLeft(seconds) {
  if (seconds < 60) return "under a minute left";
  if (seconds < 3600) return Math.round(seconds / 60) + " min left";
  return (seconds / 3600).toFixed(1) + " h left";
}

/// How a season's episodes stand: "(4 of 10 episodes, 2 missing, 4 not aired)".
function episodeWords(e) {
  const wanted = e.total - e.unmonitored;
  const parts = [e.have + " of " + wanted + (wanted === 1 ? " episode" : " episodes")];
  if (e.missing) parts.push(e.missing + " missing");
  if (e.notAired) parts.push(e.notAired + " not aired");
  return "(" + parts.join(", ") + ")";
}

/// Files below the profile's cutoff: "upgrading: have 720p, cutoff 1080p",
/// or for a season "upgrading 3 episodes to 1080p".
function upgradeWords(u) {
  if (u.below > 1) return "upgrading " + u.below + " episodes to " + u.cutoff;
  return "upgrading: have " + (u.have || "an unknown quality") + ", cutoff " + u.cutoff;
}

/// One slot as a line: what it is, and what is happening to it now.
function slotLine(s) {
  const line = el("div", undefined, "slot slot-" + s.status);
  line.dataset.slotId = s.id;
  const what = (s.season != null ? "season " + s.season + " " : "") + s.quality + " " + (SLOT_WORDS[s.status] || s.status) + (s.profile ? " (" + s.profile + ")" : "");
  line.append(el("span", what, "status-" + s.status));
  if (s.episodes) line.append(" ", el("span", episodeWords(s.episodes), "episodes"), " ", episodeToggle(s));
  if (s.upgrade) line.append(" ", el("span", upgradeWords(s.upgrade), "upgrade"));
  if (s.download || s.waitingPlan) line.append(": ");
  const d = s.download;
  const waiting = s.waitingPlan;
  if (d) {
    const parts = [d.status + " " + Math.floor(d.progress * 100) + "%"];
    if (d.status === "downloading" && d.downloadSpeed != null) parts.push(bytesPerSecond(d.downloadSpeed));
    if (d.seeds != null && !["completed", "importing", "imported"].includes(d.status)) parts.push(d.seeds + (d.seeds === 1 ? " seed" : " seeds"));
    if (d.etaSeconds != null && d.status === "downloading") parts.push(timeLeft(d.etaSeconds));
    if (d.clientState) parts.push("qBittorrent: " + d.clientState);
    line.append(el("span", parts.join(" · "), "download status-" + d.status));
  } else if (waiting && waiting.submitFailure) {
    const f = waiting.submitFailure;
    const next = f.retryAt ? "; tried " + f.failures + (f.failures === 1 ? " time" : " times") + ", next try " + new Date(f.retryAt).toLocaleTimeString() : "";
    line.append(el("span", "could not be sent to the download client: " + (f.reason || "no reason given") + next, "submit-failed"));
    if (f.decisionId) line.append(" ", tabLink("What to do", "decisions"));
  } else if (waiting) {
    line.append(el("span", "waiting for your approval: " + (waiting.title || "a release"), "waiting-approval"), " ");
    line.append(tabLink("Approve", "approvals"));
  }
  return line;
}

async function lookup(input) {
  return api("POST", "/capabilities/catalog.lookup/invoke", { input });
}

function lookupError(answer) {
  if (answer.status !== 200) return errorText(answer);
  const e = answer.data.error;
  return e ? e.message : null;
}

$("add-search").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("add-error").textContent = "";
  $("add-done").textContent = "";
  $("add-unattended").hidden = true;
  library.announced = null;
  $("add-form").hidden = true;
  const list = $("add-results");
  list.replaceChildren();
  const answer = await lookup({ action: "search", query: $("add-query").value, kind: $("add-kind").value });
  const failed = lookupError(answer);
  if (failed) {
    sayFailure($("add-error"), failed);
    return;
  }
  const results = answer.data.output.results;
  if (results.length === 0) $("add-error").textContent = "TMDB knows no title like that.";
  const posters = await posterBase();
  for (const hit of results) {
    const item = el("li", undefined, "result");
    item.dataset.tmdbId = hit.tmdb_id;
    if (hit.poster_path) {
      const img = document.createElement("img");
      img.src = posters + hit.poster_path;
      img.alt = "";
      img.width = 46;
      item.append(img);
    }
    const text = el("div");
    text.append(
      el("strong", hit.title + (hit.year ? " (" + hit.year + ")" : "")),
      el("span", " " + (hit.kind === "tv" ? "series" : "movie")),
      el("p", (hit.overview || "").slice(0, 240), "overview"),
    );
    const choose = el("button", "Choose", "choose");
    choose.type = "button";
    choose.addEventListener("click", () => pick(hit));
    item.append(text, choose);
    list.append(item);
  }
});

async function pick(hit) {
  library.picked = hit;
  $("add-picked").textContent = hit.title + (hit.year ? " (" + hit.year + ")" : "");
  const seasons = $("add-seasons");
  seasons.replaceChildren(el("legend", "Seasons"));
  seasons.hidden = hit.kind !== "tv";
  if (hit.kind === "tv") {
    const answer = await lookup({ action: "details", kind: "tv", tmdb_id: hit.tmdb_id });
    const failed = lookupError(answer);
    if (failed) {
      sayFailure($("add-error"), failed);
      return;
    }
    for (const s of answer.data.output.seasons || []) {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = s.season_number;
      box.checked = s.season_number >= 1;
      const label = el("label");
      label.append(box, " " + (s.season_number === 0 ? "Specials" : "Season " + s.season_number));
      seasons.append(label);
    }
  }
  const profiles = await api("GET", "/policies");
  const select = $("add-profile");
  select.replaceChildren(new Option("none (the most seeded release)", ""));
  if (profiles.status === 200) {
    const names = [...new Set(profiles.data.policies.filter((p) => p.name.startsWith("quality.") && p.status === "published").map((p) => p.name))];
    for (const name of names) select.append(new Option(name, name));
  }
  $("add-form").hidden = false;
}

$("add-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const hit = library.picked;
  if (!hit) return;
  const body = { tmdbId: hit.tmdb_id, kind: hit.kind, quality: $("add-quality").value };
  if ($("add-profile").value) body.profile = $("add-profile").value;
  if (hit.kind === "tv") {
    body.seasons = [...$("add-seasons").querySelectorAll("input:checked")].map((b) => Number(b.value));
  }
  const answer = await api("POST", "/library/titles", body);
  if (answer.status === 201) {
    $("add-error").textContent = "";
    $("add-done").textContent = "Wanted: " + $("add-picked").textContent + ". The background sweep searches the indexers for it.";
    library.announced = answer.data.entity.id;
    library.grantFor = answer.data.entity.id;
    $("add-unattended").hidden = false;
    $("add-grant").disabled = false;
    $("add-form").hidden = true;
    $("add-results").replaceChildren();
    refreshLibrary();
  } else {
    sayFailure($("add-error"), errorText(answer));
  }
});

// After Want it: the standing grants that let the sweep fetch, import and
// upgrade this title without asking, scoped to it alone.
$("add-grant").addEventListener("click", async () => {
  const entity = library.grantFor;
  if (!entity) return;
  $("add-grant").disabled = true;
  const expiresAt = Date.now() + 30 * 86400000;
  const made = [];
  for (const action of ["download.submit", "organize.execute", "organize.replace"]) {
    const grant = { action, scope: { entityIds: [entity] }, dailyInvocations: 10, expiresAt, reason: "fetch and import a title wanted from the Library" };
    const answer = await api("POST", "/automation-grants", grant);
    if (answer.status !== 201) {
      sayFailure($("add-error"), "Could not grant " + action + ": " + errorText(answer));
      $("add-grant").disabled = false;
      return;
    }
    made.push(action);
  }
  $("add-unattended").hidden = true;
  $("add-done").textContent += " Granted " + made.join(", ") + " for it: the sweep fetches, imports and upgrades it without asking.";
  if (typeof refreshGrants === "function") refreshGrants();
});
