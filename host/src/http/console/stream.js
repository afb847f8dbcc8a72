// The console's one event stream: a single EventSource on /api/v1/events
// while signed in, and one dispatcher handing each event to the views that
// follow its kind (runs.js for the Agent tab, decisions.js for the
// Decisions tab). While the stream is down every follower is polled every
// 2.5 s instead, and when it opens (again) each catches up once, so what
// happened in between shows without a reload. The browser reconnects a
// dropped stream by itself; a stream it gave up on (an error answer, from
// a proxy say) is opened again at the next poll. The header says which of
// the two is on. Uses console.js's helpers.
"use strict";

const POLL_MS = 2500;
const live = { source: null, followers: [], poll: null };

/// Calls `handler(event)` for each streamed event whose kind is in `kinds`,
/// and `catchUp()` whenever the stream (re)opens and at each poll while it
/// is down.
function follow(kinds, handler, catchUp) {
  live.followers.push({ kinds, handler, catchUp });
}

/// `fn` as a function that never runs twice at once: called while it runs,
/// it runs once more afterwards. A burst of events costs at most two
/// reads, and incremental reads never overlap (two reads from the same
/// position would show the same events twice).
function coalesced(fn) {
  let busy = false;
  let again = false;
  return async function run() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        await fn();
      } while (again);
    } finally {
      busy = false;
    }
  };
}

function dispatch(message) {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch (_) {
    return;
  }
  for (const f of live.followers) if (f.kinds.includes(event.kind)) f.handler(event);
}

function catchUpAll() {
  for (const f of live.followers) f.catchUp();
}

/// What the header says about updates.
function sayLive(on) {
  const note = $("live");
  note.hidden = false;
  note.className = on ? "live-on" : "live-off";
  note.textContent = on ? "Live" : "Live updates interrupted: refreshing every " + POLL_MS / 1000 + " s";
}

// A new stream starts at the newest event; what came before is read by the
// catch-up when it opens, so nothing falls in between.
function connect() {
  const source = new EventSource("/api/v1/events");
  for (const kind of new Set(live.followers.flatMap((f) => f.kinds))) source.addEventListener(kind, dispatch);
  source.onopen = () => {
    if (source !== live.source) return;
    stopPolling();
    sayLive(true);
    catchUpAll();
  };
  source.onerror = () => {
    if (source !== live.source) return;
    sayLive(false);
    startPolling();
  };
  live.source = source;
}

function startPolling() {
  if (live.poll) return;
  live.poll = setInterval(() => {
    if (live.source && live.source.readyState === EventSource.CLOSED) connect();
    catchUpAll();
  }, POLL_MS);
}

function stopPolling() {
  if (live.poll) clearInterval(live.poll);
  live.poll = null;
}

/// Follows the event stream while signed in.
function openStream() {
  closeStream();
  connect();
}

function closeStream() {
  stopPolling();
  if (live.source) live.source.close();
  live.source = null;
  $("live").hidden = true;
}
