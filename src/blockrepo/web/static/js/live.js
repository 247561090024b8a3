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

// Calls `onChange(changeset)` for each change to element `id` of `type` after `revision`.
export function watchElement(type, id, revision, onChange) {
  stopWatching();
  if (typeof EventSource === "undefined") return;
  const watching = new EventSource(`/api/history/stream?type=${encodeURIComponent(type)}`, {
    withCredentials: true,
  });
  // Marks the page as listening (what a test waits for before it changes the element elsewhere).
  watching.addEventListener("open", () => {
    if (source === watching) document.documentElement.dataset.live = "open";
  });
  watching.addEventListener("change", (event) => {
    const change = JSON.parse(event.data);
    if (String(change.id) === String(id) && change.revision > revision) onChange(change);
  });
  // The server ended the stream (the session ended or lost the right to read history): no reconnecting.
  watching.addEventListener("end", () => {
    if (source === watching) stopWatching();
  });
  source = watching;
}
