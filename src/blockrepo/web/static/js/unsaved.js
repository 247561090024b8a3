// Pure rules for never losing an edit: when an open form renews its session, and the drafts it keeps.

import { comparable } from "./format.js";

// --- keep-alive ----------------------------------------------------------------------------------------

export const MIN_PING_MS = 1000;

// How often an active user's form renews the session, from the server's idle timeout (seconds): a third
// of it. The server writes a session's idle time stamp back at most every tenth of the timeout, so a
// renewed session lives at least 0.9 of it; a ping every third, checked four times as often (tickInterval),
// leaves a wide margin. Null without a timeout (Basic credentials: no session to keep).
export function pingInterval(idleSeconds) {
  if (typeof idleSeconds !== "number" || !Number.isFinite(idleSeconds) || idleSeconds <= 0) return null;
  return Math.max(MIN_PING_MS, Math.floor((idleSeconds * 1000) / 3));
}

export function tickInterval(interval) {
  return Math.max(250, Math.floor(interval / 4));
}

// Whether to renew the session now. Only for a user who did something since the last renewal, in a tab
// they can see: keep-alive follows activity, so a form left open over the weekend still expires.
export function shouldPing({ now, lastPing, lastActivity, hidden, interval }) {
  return !hidden && interval !== null && lastActivity > lastPing && now - lastPing >= interval;
}

// --- drafts --------------------------------------------------------------------------------------------

export const DRAFT_PREFIX = "blockrepo.draft:";
export const DRAFT_VERSION = 1;
// sessionStorage holds about 5 MB per origin; one form's draft gets a small share of it.
export const MAX_DRAFT_CHARS = 100_000;
export const MAX_DRAFTS = 20;

// One draft per form as it was opened: its route, the scenario the tab works in and the revision it was
// opened at, so that a draft typed over revision 5 is never offered over revision 6 someone else made.
export function draftKey({ route, scenario = null, revision = null }) {
  return DRAFT_PREFIX + JSON.stringify([route, scenario || null, revision ?? null]);
}

export function isDraftKey(key) {
  return typeof key === "string" && key.startsWith(DRAFT_PREFIX);
}

// The fields whose value differs from the form as it was opened (values as the API takes them, lists):
// all that a draft keeps.
export function changedValues(current, initial) {
  const changed = {};
  for (const [key, value] of Object.entries(current)) {
    if (comparable(value) !== comparable(initial[key])) changed[key] = value;
  }
  return changed;
}

// What is stored for a form: who typed it, when, and the changed fields' values. Null when nothing
// changed, or when it is too big for sessionStorage to be a fair place for it.
export function makeDraft({ user, values, savedAt }) {
  if (!user || !values || !Object.keys(values).length) return null;
  const draft = { version: DRAFT_VERSION, user, savedAt, values };
  return JSON.stringify(draft).length <= MAX_DRAFT_CHARS ? draft : null;
}

function parsed(text) {
  let draft;
  try {
    draft = JSON.parse(text);
  } catch {
    return null;
  }
  const valid =
    draft !== null &&
    typeof draft === "object" &&
    draft.version === DRAFT_VERSION &&
    typeof draft.user === "string" &&
    typeof draft.savedAt === "number" &&
    draft.values !== null &&
    typeof draft.values === "object" &&
    !Array.isArray(draft.values) &&
    Object.values(draft.values).every(Array.isArray);
  return valid ? draft : null;
}

// A stored draft if it is one and `user` typed it: another user's work is never offered to them.
export function readDraft(text, user) {
  const draft = typeof text === "string" ? parsed(text) : null;
  return draft && draft.user === user ? draft : null;
}

// The keys of stored drafts ([key, text] pairs) to remove so that at most `keep` remain: unreadable ones,
// then the oldest.
export function draftsToDrop(entries, keep = MAX_DRAFTS) {
  const readable = [];
  const drop = [];
  for (const [key, text] of entries) {
    if (!isDraftKey(key)) continue;
    const draft = parsed(text);
    if (draft) readable.push([key, draft.savedAt]);
    else drop.push(key);
  }
  readable.sort((a, b) => b[1] - a[1]);
  return [...drop, ...readable.slice(keep).map(([key]) => key)];
}
