// The notification targets' and media servers' state on the Services tab:
// under each one's card, whether the sweeps may send to it (its grant) and how its last
// sends went — last told when, or how many failed in a row and why, with
// what to do next. Uses console.js's helpers; services.js draws the cards.
"use strict";

/// A time as the console shows it elsewhere.
function toldAt(ms) {
  return new Date(ms).toLocaleString();
}

/// The line under one target's (or media server's) card.
function targetLine(t) {
  if (!t.setUp) return null;
  const rescans = t.capabilityId === "mediaserver.refresh";
  if (!t.granted) {
    const what = rescans ? "ask it to rescan" : "send to it";
    return el("p", "✗ No grant lets the sweeps " + what + ": Save it again, or add one for " + t.capabilityId + " on Automation grants.", "found error");
  }
  const s = t.state;
  if (!s) {
    return el("p", rescans ? "Nothing rescanned yet: it is asked after the next import." : "Nothing told yet: it is told what happens from now on.", "found");
  }
  if (s.failures > 0) {
    const what = rescans ? " rescan request(s)" : " send(s)";
    return el("p", "✗ " + s.failures + what + " failed in a row, tried again with the next sweep: " + s.lastError, "found error");
  }
  if (s.lastError) return el("p", "✗ " + s.lastError, "found error");
  if (!s.lastSentAt) return el("p", rescans ? "✓ Nothing to rescan yet." : "✓ Nothing to tell yet.", "found ok");
  return el("p", (rescans ? "✓ Last asked to rescan " : "✓ Last told ") + toldAt(s.lastSentAt) + ".", "found ok");
}

async function refreshNotifications() {
  const answer = await api("GET", "/notifications");
  if (answer.status !== 200) return;
  for (const t of answer.data.targets) {
    const card = document.querySelector('fieldset[data-service="' + t.service + '"]');
    if (!card) continue;
    const old = card.querySelector(".target-state");
    if (old) old.remove();
    const line = targetLine(t);
    if (!line) continue;
    line.classList.add("target-state");
    line.dataset.target = t.capabilityId;
    card.querySelector("legend").after(line);
  }
}
