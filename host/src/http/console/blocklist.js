// The Library tab's blocklist: the releases no search or feed picks again
// (given up with "Find another release", or blocked by an operator), each
// with why, who and when, and Unblock to let it be picked again
// (GET /blocklist, DELETE /blocklist/{releaseId}). Drawn again with the
// library. Uses the helpers of console.js (api, el, $, errorText).
"use strict";

async function refreshBlocklist() {
  const answer = await api("GET", "/blocklist");
  const list = $("blocklist");
  if (answer.status !== 200) {
    $("blocklist-error").textContent = "Could not read the blocklist: " + errorText(answer);
    return;
  }
  list.replaceChildren();
  if (!answer.data.releases.length) list.append(el("li", "Nothing is blocked.", "hint"));
  for (const b of answer.data.releases) {
    const item = el("li", undefined, "blocked");
    item.dataset.releaseId = b.releaseId;
    const when = new Date(b.createdAt).toLocaleString();
    item.append(el("strong", b.title), " — " + b.reason + " (" + b.blockedBy + ", " + when + ") ");
    const unblock = el("button", "Unblock");
    unblock.type = "button";
    unblock.addEventListener("click", async () => {
      const done = await api("DELETE", "/blocklist/" + encodeURIComponent(b.releaseId));
      $("blocklist-error").textContent = done.status === 204 ? "" : errorText(done);
      refreshBlocklist();
    });
    item.append(unblock);
    list.append(item);
  }
}
