// Renews the session while its user works in an open form; when and how often is unsaved.js's rule.

import { api } from "./api.js";
import { pingInterval, shouldPing, tickInterval } from "./unsaved.js";

// What counts as working in the page (not the mouse merely resting on it).
const ACTIVITY = ["keydown", "pointerdown", "input"];
// The cheapest authenticated request: it names the session's user and, like any, renews the session.
const PING_PATH = "/api/j_service_security_check";

let stopRunning = null;

export function stopKeepAlive() {
  stopRunning?.();
  stopRunning = null;
}

// Keeps the session alive while `root` is in the page and its user is active, under the server's idle
// timeout (seconds; null: nothing to keep). `onEnded` hears of a renewal that found the session already
// ended (its absolute lifetime, a logout in another tab), `onRenewed` of one that worked.
export function keepSessionAlive(root, idleSeconds, { onEnded = () => {}, onRenewed = () => {} } = {}) {
  stopKeepAlive();
  const interval = pingInterval(idleSeconds);
  if (interval === null) return;
  // The page was just read: that request renewed the session.
  const state = { lastPing: Date.now(), lastActivity: 0, busy: false };
  const noteActivity = () => {
    state.lastActivity = Date.now();
  };
  const tick = async () => {
    if (!root.isConnected) {
      stopKeepAlive();
      return;
    }
    const now = Date.now();
    if (state.busy || !shouldPing({ ...state, now, hidden: document.hidden, interval })) return;
    state.busy = true;
    state.lastPing = now;
    try {
      await api("GET", PING_PATH, { auth: "quiet" });
      onRenewed();
    } catch (error) {
      // Not the page's business to log in here: the next save does it in place.
      if (error.status === 401) onEnded();
    } finally {
      state.busy = false;
    }
  };
  const onVisibility = () => {
    if (!document.hidden) tick();
  };
  const options = { capture: true, passive: true };
  for (const type of ACTIVITY) document.addEventListener(type, noteActivity, options);
  document.addEventListener("visibilitychange", onVisibility);
  const timer = setInterval(tick, tickInterval(interval));
  stopRunning = () => {
    clearInterval(timer);
    for (const type of ACTIVITY) document.removeEventListener(type, noteActivity, options);
    document.removeEventListener("visibilitychange", onVisibility);
  };
}
