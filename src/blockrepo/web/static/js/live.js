// Live refresh: a page that shows an element listens to the change stream (GET /api/history/stream) and
// draws itself again when someone changes that element. EventSource reconnects by itself and resumes with
// Last-Event-ID, so a change made while the connection dropped still arrives.

let source = null;

export function stopWatching() {
  if (source) {
    source.close();
    source = null;
  }
  delete document.documentElement.dataset.live;
}

// Calls `onChange(changeset)` for each change to element `id` of `type` after `revision`; in a planning
// scenario (`scenario`, its key), for each change written to it in the scenario from now on (the
// scenario's own stream: main's changes do not reach a scenario until it is synced).
export function watchElement(type, id, revision, onChange, scenario = null) {
  stopWatching();
  if (typeof EventSource === "undefined") return;
  const query = new URLSearchParams({ type });
  if (scenario) query.set("scenario", scenario);
  const watching = new EventSource(`/api/history/stream?${query}`, { withCredentials: true });
  // Marks the page as listening (what a test waits for before it changes the element elsewhere).
  watching.addEventListener("open", () => {
    if (source === watching) document.documentElement.dataset.live = "open";
  });
  watching.addEventListener("change", (event) => {
    const change = JSON.parse(event.data);
    if (String(change.id) === String(id) && (scenario || change.revision > revision)) onChange(change);
  });
  // The server ended the stream (the session ended or lost the right to read history): no reconnecting.
  watching.addEventListener("end", () => {
    if (source === watching) stopWatching();
  });
  source = watching;
}
