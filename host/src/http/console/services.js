// The console's Services tab: TMDB, up to three Torznab indexers, a
// tracker's RSS feed, qBittorrent, the notification targets and media servers
// (notifications.js adds each one's state), the downloads and library folders, the library's naming,
// and the external MCP servers (their state and tools; those set up here
// with Save, Test and Forget, and a card to add one) — each saved through /setup and checked with its Test button,
// which makes a real request with the form's values (saved or not) and
// says what it found and what it used, and forgotten (with
// its secret) by Forget. What capstan.toml sets is shown and cannot be
// changed here; what the environment gives TMDB is named. Uses
// console.js's helpers.
"use strict";

const SERVICE_TITLES = {
  tmdb: "TMDB (titles, posters)",
  torznab: "Indexer 1 (Torznab)",
  "torznab-2": "Indexer 2 (Torznab)",
  "torznab-3": "Indexer 3 (Torznab)",
  rss: "Tracker RSS feed",
  qbittorrent: "qBittorrent",
  transmission: "Transmission",
  webhook: "Webhook (JSON)",
  ntfy: "ntfy",
  telegram: "Telegram bot",
  discord: "Discord webhook",
  jellyfin: "Jellyfin",
  emby: "Emby",
  plex: "Plex",
};

/// What each kind's secret is called, and its placeholder when unset.
const SECRET_LABELS = {
  qbittorrent: ["Password", "not set"],
  transmission: ["Password", "none (optional)"],
  tmdb: ["Key or token", "not set"],
  webhook: ["Bearer token", "none (optional)"],
  ntfy: ["Access token", "none (optional)"],
  telegram: ["Bot token", "123456789:AAH… from BotFather"],
  discord: ["Webhook URL", "https://discord.com/api/webhooks/…"],
  rss: ["Feed URL", "https://tracker.example/rss.php?passkey=…"],
  jellyfin: ["API key", "Dashboard → API Keys"],
  emby: ["API key", "Settings → API Keys"],
  plex: ["Token", "X-Plex-Token"],
};

const MEDIA_SERVERS = ["jellyfin", "emby", "plex"];

function field(id, label, value, type, placeholder) {
  const wrap = el("label", label + " ");
  const input = document.createElement("input");
  input.id = id;
  input.type = type || "text";
  if (value != null) input.value = value;
  if (placeholder) input.placeholder = placeholder;
  wrap.append(input);
  return wrap;
}

function serviceCard(s) {
  const card = el("fieldset", undefined, "service");
  card.dataset.service = s.name;
  card.append(el("legend", SERVICE_TITLES[s.name] || s.name));
  const fromFile = s.source === "file";
  if (fromFile) card.append(el("p", "Set in capstan.toml (" + s.baseUrl + "); change it there.", "hint"));
  const id = (part) => "svc-" + s.name + "-" + part;
  const urlHint = { torznab: "http://127.0.0.1:9696/1", webhook: "https://hooks.example.net/capstan/7f3a" }[s.kind] || "";
  const url = field(id("url"), s.kind === "webhook" ? "Webhook URL" : "URL", s.baseUrl, "url", urlHint);
  // A Discord webhook's or a tracker feed's whole URL is its secret: no
  // URL field of its own. A feed shows its URL without the passkey.
  if (s.kind !== "discord" && s.kind !== "rss") card.append(url);
  if (s.kind === "rss") {
    const saved = s.source === "console" ? "Reads " + s.baseUrl + (s.feedPath || "") + "; paste the feed URL again to change it." : "";
    card.append(el("p", saved || "Paste the feed's whole URL, passkey and all: Capstan keeps the passkey and shows the rest.", "hint"));
  }
  if (s.kind === "qbittorrent") card.append(field(id("user"), "User", s.username || "admin"));
  if (s.kind === "transmission") card.append(field(id("user"), "User", s.username, "text", "none (optional)"));
  if (s.kind === "ntfy") card.append(field(id("topic"), "Topic", s.topic, "text", "capstan-home-7f3a"));
  if (s.kind === "telegram") card.append(field(id("chat"), "Chat id", s.chatId, "text", "123456789 or @channel"));
  if (MEDIA_SERVERS.includes(s.kind)) {
    card.append(field(id("library"), "Library folder as the server sees it", s.libraryPath, "text", "the same path as Capstan's"));
  }
  if (s.kind === "tmdb") {
    const wrap = el("label", "Credential ");
    const select = document.createElement("select");
    select.id = id("token");
    select.append(new Option("API key (v3)", "apiKey"), new Option("Read access token (v4)", "readToken"));
    select.value = s.tokenKind || "apiKey";
    wrap.append(select);
    card.append(wrap);
  }
  const [secretLabel, unsetHint] = SECRET_LABELS[s.kind] || ["API key", "not set"];
  // TMDB may take its key or URL from the environment Capstan started with.
  const fromEnv = (s.fromEnvironment || []).filter((v) => v !== "TMDB_BASE_URL");
  if (s.fromEnvironment && s.fromEnvironment.length) {
    card.append(el("p", "From the environment: " + s.fromEnvironment.join(", ") + "; what you save here wins.", "hint"));
  }
  const unset = fromEnv.length ? "from " + fromEnv[0] + " — leave empty to use it" : unsetHint;
  card.append(field(id("secret"), secretLabel, "", "password", s.secretSet ? "set — leave empty to keep" : unset));
  const save = el("button", "Save", "save");
  save.type = "button";
  save.id = id("save");
  const test = el("button", "Test", "test");
  test.type = "button";
  test.id = id("test");
  const result = el("p", "", "found");
  result.id = id("result");
  result.setAttribute("role", "status");
  // Forgetting removes the service and its secret: the way to clear one.
  const forget = el("button", "Forget", "forget");
  forget.type = "button";
  forget.id = id("forget");
  if (fromFile) {
    card.querySelectorAll("input, select").forEach((i) => (i.disabled = true));
    card.append(test, result);
  } else if (s.source === "console") {
    card.append(save, test, forget, result);
  } else {
    card.append(save, test, result);
  }
  forget.addEventListener("click", async () => {
    const answer = await api("DELETE", "/setup/services/" + s.name);
    if (answer.status === 200) await refreshServices();
    else {
      result.className = "found error";
      result.textContent = errorText(answer);
    }
  });
  // What Save stores and Test tries: the form as it is now.
  const formValues = () => {
    const body = { baseUrl: url.querySelector("input").value };
    if ($(id("user"))) body.username = $(id("user")).value;
    if ($(id("topic"))) body.topic = $(id("topic")).value;
    if ($(id("chat"))) body.chatId = $(id("chat")).value;
    if ($(id("library"))) body.libraryPath = $(id("library")).value;
    if (s.kind === "rss" && s.feedPath) body.feedPath = s.feedPath;
    if ($(id("token"))) body.tokenKind = $(id("token")).value;
    if ($(id("secret")).value) body.secret = $(id("secret")).value;
    return body;
  };
  save.addEventListener("click", async () => {
    const answer = await api("PUT", "/setup/services/" + s.name, formValues());
    if (answer.status !== 200) {
      result.className = "found error";
      result.textContent = errorText(answer);
      return;
    }
    // Shown again as stored (now with Forget), saying it was saved.
    await refreshServices();
    $(id("result")).textContent = answer.data.madeGrant
      ? "Saved. A grant (Automation grants) lets the sweeps " + (MEDIA_SERVERS.includes(s.kind) ? "ask it to rescan." : "send to it.")
      : "Saved.";
  });
  test.addEventListener("click", async () => {
    result.textContent = "Testing…";
    const answer = await api("POST", "/setup/services/" + s.name + "/test", fromFile ? undefined : formValues());
    showFound(result, answer);
  });
  return card;
}

function rootRow(r) {
  const row = el("p", undefined, "root");
  const input = field("root-" + r.name, r.name === "downloads" ? "Downloads folder" : "Library folder", r.path, "text", "/srv/" + r.name);
  row.append(input);
  if (r.source === "file") {
    input.querySelector("input").disabled = true;
    row.append(el("span", " set in capstan.toml", "hint"));
    return row;
  }
  const save = el("button", "Save", "save");
  save.type = "button";
  save.id = "root-" + r.name + "-save";
  const said = el("span", "", "found");
  said.id = "root-" + r.name + "-result";
  save.addEventListener("click", async () => {
    const answer = await api("PUT", "/setup/roots/" + r.name, { path: $("root-" + r.name).value });
    said.className = answer.status === 200 ? "found" : "found error";
    said.textContent = answer.status === 200 ? " Saved." : " " + errorText(answer);
    if (answer.status === 200) {
      showChecklist(answer.data);
      showSavePathDefault(answer.data.roots);
    }
  });
  row.append(save, said);
  return row;
}

/// One external MCP server: where it stands, its tools as offered, held
/// or refused, and — for one set up here — its form with Save, Test and
/// Forget; `view` is null for the card that adds a server.
function mcpServerCard(view) {
  const card = el("fieldset", undefined, "service mcp-server");
  const name = view ? view.name : "";
  card.dataset.mcpServer = name || "new";
  card.append(el("legend", view ? name + " (MCP)" : "Add an MCP server"));
  const id = (part) => "mcp-" + (name || "new") + "-" + part;
  if (view) {
    const s = view.status;
    const state = s.state === "connected" ? "✓ connected" : s.state === "connecting" ? "… connecting" : "✗ unreachable";
    card.append(el("p", state + " — " + s.url + (s.detail ? " — " + s.detail : ""), s.state === "unreachable" ? "found error" : "found"));
    const list = el("ul");
    for (const t of view.offered) list.append(el("li", t.id + " (" + t.class + ")"));
    for (const t of view.held) list.append(el("li", t.id + " — held: " + t.reason, "error"));
    for (const t of view.refused) list.append(el("li", t.what + " — refused: " + t.reason, "error"));
    card.append(list);
  }
  const fromFile = view && view.source === "file";
  const stored = (view && view.stored) || { entry: {}, tokenSet: false };
  if (fromFile) {
    card.append(el("p", "Set in capstan.toml; change it there.", "hint"));
  } else {
    if (!view) card.append(field(id("name"), "Name", "", "text", "notes"));
    card.append(field(id("url"), "URL", stored.entry.url || "", "url", "http://127.0.0.1:3001/mcp"));
    card.append(field(id("token"), "Bearer token", "", "password", stored.tokenSet ? "set — leave empty to keep" : "none"));
    card.append(field(id("tools"), "Only these tools", (stored.entry.tools || []).join(", "), "text", "every tool"));
    const classes = Object.entries(stored.entry.classes || {}).map(([t, c]) => t + "=" + c).join(", ");
    card.append(field(id("classes"), "Classes", classes, "text", "lookup=read (others are execute)"));
  }
  const result = el("p", "", "found");
  result.id = id("result");
  result.setAttribute("role", "status");
  const serverName = () => (view ? name : $(id("name")).value.trim());
  const form = () => {
    const body = { url: $(id("url")).value, classes: {} };
    const token = $(id("token")).value;
    if (token) body.token = token;
    const tools = $(id("tools")).value.split(",").map((t) => t.trim()).filter(Boolean);
    if (tools.length) body.tools = tools;
    for (const pair of $(id("classes")).value.split(",").map((p) => p.trim()).filter(Boolean)) {
      const [tool, cls] = pair.split("=").map((p) => p.trim());
      body.classes[tool] = cls;
    }
    return body;
  };
  const button = (label, part, onClick) => {
    const b = el("button", label, part);
    b.type = "button";
    b.id = id(part);
    b.addEventListener("click", onClick);
    card.append(b);
  };
  if (!fromFile) {
    button("Save", "save", async () => {
      if (!serverName()) {
        result.className = "found error";
        result.textContent = "Give the server a name first.";
        return;
      }
      const saving = serverName();
      const answer = await api("PUT", "/setup/mcp/" + encodeURIComponent(saving), form());
      if (answer.status !== 200) {
        result.className = "found error";
        result.textContent = errorText(answer);
        return;
      }
      // Drawn again as stored (the add card empty again), saying so.
      await refreshServices();
      const saved = $("mcp-" + saving + "-result");
      if (saved) saved.textContent = "Saved; connecting.";
    });
  }
  button("Test", "test", async () => {
    if (!serverName()) {
      result.className = "found error";
      result.textContent = "Give the server a name first.";
      return;
    }
    result.textContent = "Testing…";
    showFound(result, await api("POST", "/setup/mcp/" + encodeURIComponent(serverName()) + "/test", fromFile ? undefined : form()));
  });
  if (view && !fromFile) {
    button("Forget", "forget", async () => {
      const answer = await api("DELETE", "/setup/mcp/" + encodeURIComponent(name));
      if (answer.status !== 200) {
        result.className = "found error";
        result.textContent = errorText(answer);
        return;
      }
      await refreshServices();
    });
  }
  card.append(result);
  return card;
}

async function refreshServices() {
  const answer = await api("GET", "/setup");
  if (answer.status !== 200) return;
  const { services, roots, library: naming, libraryFromFile, mcpServers } = answer.data;
  const notifying = (s) => ["webhook", "ntfy", "telegram", "discord"].includes(s.kind);
  const serving = (s) => MEDIA_SERVERS.includes(s.kind);
  $("services").replaceChildren(...services.filter((s) => !notifying(s) && !serving(s)).map(serviceCard));
  $("notify-targets").replaceChildren(...services.filter(notifying).map(serviceCard));
  $("media-servers").replaceChildren(...services.filter(serving).map(serviceCard));
  refreshNotifications();
  $("roots").replaceChildren(...roots.map(rootRow));
  $("mcp-servers").replaceChildren(...(mcpServers || []).map(mcpServerCard), mcpServerCard(null));
  for (const [key, id] of [["movieTemplate", "lib-movie"], ["episodeTemplate", "lib-episode"], ["savePath", "lib-save-path"], ["category", "lib-category"], ["mode", "lib-mode"]]) {
    $(id).value = naming[key] || (key === "mode" ? "hardlink" : "");
    $(id).disabled = libraryFromFile.includes(key);
  }
  showSavePathDefault(roots);
  showChecklist(answer.data);
}

/// Without a save path of its own, qBittorrent saves into the downloads
/// folder: the field's placeholder says which, as soon as it is set.
function showSavePathDefault(roots) {
  const downloads = roots.find((r) => r.name === "downloads");
  $("lib-save-path").placeholder = downloads && downloads.path ? "the downloads folder: " + downloads.path : "the downloads folder, once it is set";
}

/// A Test's answer in `where`: what it found, and the values it used.
function showFound(where, answer) {
  const ok = answer.status === 200 && answer.data.ok;
  where.className = ok ? "found ok" : "found error";
  if (answer.status !== 200) {
    where.textContent = errorText(answer);
    return;
  }
  where.replaceChildren((ok ? "✓ " : "✗ ") + answer.data.found);
  if (answer.data.used) where.append(el("span", " — tested with " + answer.data.used, "used"));
}

$("roots-test").addEventListener("click", async () => {
  $("roots-found").textContent = "Testing…";
  // The folders as typed, saved or not; one set in capstan.toml is the file's.
  const body = {};
  for (const name of ["downloads", "library"]) {
    const input = $("root-" + name);
    if (input && !input.disabled && input.value.trim()) body[name] = input.value;
  }
  showFound($("roots-found"), await api("POST", "/setup/roots/test", body));
});

$("library-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = {};
  for (const [key, id] of [["movieTemplate", "lib-movie"], ["episodeTemplate", "lib-episode"], ["savePath", "lib-save-path"], ["category", "lib-category"], ["mode", "lib-mode"]]) {
    if ($(id).value && !$(id).disabled) body[key] = $(id).value;
  }
  const answer = await api("PUT", "/setup/library", body);
  $("library-found").className = answer.status === 200 ? "found" : "found error";
  $("library-found").textContent = answer.status === 200 ? "Saved." : errorText(answer);
});

/// The first-run checklist above the tabs: what fetching needs (TMDB, an
/// indexer, qBittorrent, the two folders), each ticked once it is set up,
/// with a link to where it is done; gone once everything is.
function showChecklist(setup) {
  const set = (s) => s.source !== "unset";
  const service = (name) => setup.services.find((s) => s.name === name);
  const root = (name) => setup.roots.find((r) => r.name === name);
  const items = [
    ["tmdb", "TMDB, to find titles", !!service("tmdb") && set(service("tmdb"))],
    ["indexer", "an indexer (Torznab), to find releases", setup.services.some((s) => s.kind === "torznab" && set(s))],
    ["qbittorrent", "a download client (qBittorrent or Transmission), to download them", ["qbittorrent", "transmission"].some((n) => !!service(n) && set(service(n)))],
    ["folders", "the downloads and library folders", ["downloads", "library"].every((n) => root(n) && root(n).path)],
  ];
  const list = $("checklist-items");
  list.replaceChildren();
  for (const [key, text, done] of items) {
    const item = el("li", (done ? "✓ " : "○ ") + text, done ? "done" : "todo");
    item.dataset.item = key;
    if (!done) item.append(" — ", tabLink("set it up on the Services tab", "services"));
    list.append(item);
  }
  $("checklist").hidden = items.every(([, , done]) => done);
}
