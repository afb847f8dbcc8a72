// The Library tab's episode lists: a season's line offers "Episodes",
// which lists each episode with its title, air date and where it stands,
// and a tick box that wants it or not (PUT .../seasons/{n}/episodes).
// The lists that are open stay open when the library is drawn again.
// Uses the helpers of console.js (api, el, $, errorText).
"use strict";

// "entityId:season" of each open list.
const openEpisodes = new Set();

const EPISODE_WORDS = { have: "in the library", missing: "missing", "not-aired": "not aired yet", unmonitored: "not wanted" };

/// The "Episodes" button of a season's line, and its list when open.
function episodeToggle(slot) {
  const key = slot.entityId + ":" + slot.season;
  const button = el("button", openEpisodes.has(key) ? "Hide episodes" : "Episodes", "episodes-toggle");
  button.type = "button";
  button.addEventListener("click", () => {
    if (openEpisodes.has(key)) openEpisodes.delete(key);
    else openEpisodes.add(key);
    refreshLibrary();
  });
  return button;
}

/// The list of season `slot.season`'s episodes, filled once read.
function episodeList(slot) {
  const list = el("ul", undefined, "episode-list");
  list.dataset.season = slot.season;
  if (!openEpisodes.has(slot.entityId + ":" + slot.season)) return null;
  fillEpisodes(list, slot);
  return list;
}

async function fillEpisodes(list, slot) {
  const answer = await api("GET", "/library/titles/" + encodeURIComponent(slot.entityId) + "/episodes");
  if (answer.status !== 200) {
    list.append(el("li", "Could not read the episodes: " + errorText(answer), "error"));
    return;
  }
  for (const ep of answer.data.episodes.filter((e) => e.season === slot.season)) {
    const item = el("li", undefined, "episode episode-" + ep.state);
    item.dataset.episode = ep.episode;
    const box = el("input");
    box.type = "checkbox";
    box.checked = ep.monitored;
    box.title = "Want this episode";
    box.addEventListener("change", async () => {
      box.disabled = true;
      const path = "/library/titles/" + encodeURIComponent(slot.entityId) + "/seasons/" + slot.season + "/episodes";
      const done = await api("PUT", path, { monitored: box.checked, episodes: [ep.episode] });
      $("library-error").textContent = done.status === 200 ? "" : errorText(done);
      refreshLibrary();
    });
    const number = "E" + String(ep.episode).padStart(2, "0");
    const words = [number + (ep.title ? " " + ep.title : "")];
    if (ep.airDate) words.push(ep.airDate);
    words.push(EPISODE_WORDS[ep.state] || ep.state);
    const label = el("label");
    label.append(box, " ", el("span", words.join(" · ")));
    item.append(label);
    list.append(item);
  }
}
