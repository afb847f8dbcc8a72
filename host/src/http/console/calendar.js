// The Library tab's calendar: wanted episodes airing from a week ago to two
// weeks ahead, day by day with where each stands, and the releases handed
// to the download client in that time (GET /calendar). Drawn again with
// the library. Uses the helpers of console.js (api, el, $, errorText) and
// episodes.js's EPISODE_WORDS.
"use strict";

async function refreshCalendar() {
  const answer = await api("GET", "/calendar");
  const list = $("calendar");
  if (answer.status !== 200) {
    $("calendar-error").textContent = "Could not read the calendar: " + errorText(answer);
    return;
  }
  $("calendar-error").textContent = "";
  const days = new Map();
  const dayOf = (d) => {
    if (!days.has(d)) days.set(d, []);
    return days.get(d);
  };
  for (const ep of answer.data.episodes) {
    const number = "S" + String(ep.season).padStart(2, "0") + "E" + String(ep.episode).padStart(2, "0");
    const words = ep.series + " " + number + (ep.title ? " " + ep.title : "") + " · " + (EPISODE_WORDS[ep.state] || ep.state);
    dayOf(ep.airDate).push(el("li", words, "calendar-episode episode-" + ep.state));
  }
  for (const g of answer.data.grabbed) {
    const day = new Date(g.at).toISOString().slice(0, 10);
    dayOf(day).push(el("li", "grabbed " + g.release + " for " + g.title, "calendar-grab"));
  }
  list.replaceChildren();
  if (days.size === 0) {
    list.append(el("li", "Nothing airs or was grabbed in these three weeks.", "hint"));
    return;
  }
  for (const day of [...days.keys()].sort()) {
    const item = el("li", undefined, "calendar-day");
    item.dataset.day = day;
    const entries = el("ul");
    entries.append(...days.get(day));
    item.append(el("strong", day), entries);
    list.append(item);
  }
}
