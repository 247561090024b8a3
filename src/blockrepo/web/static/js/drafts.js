// Drafts of edit forms in this tab's sessionStorage, so a reload loses nothing; their rules are unsaved.js's.

import { draftsToDrop, isDraftKey, makeDraft, readDraft } from "./unsaved.js";

function storage() {
  try {
    return globalThis.sessionStorage || null;
  } catch {
    return null; // storage refused (private mode, sandbox): the form alone holds what was typed
  }
}

// The draft stored under `key` if `user` typed it, else null.
export function loadDraft(key, user) {
  try {
    return readDraft(storage()?.getItem(key) ?? null, user);
  } catch {
    return null;
  }
}

// Keeps `values` (the changed fields) as the draft under `key`; none left when nothing is changed.
export function storeDraft(key, user, values) {
  const store = storage();
  if (!store) return;
  const draft = makeDraft({ user, values, savedAt: Date.now() });
  try {
    if (!draft) {
      store.removeItem(key);
      return;
    }
    store.setItem(key, JSON.stringify(draft));
    dropOldDrafts(store);
  } catch {
    // Storage full: the draft of an older form is not worth failing the form for.
  }
}

export function dropDraft(key) {
  try {
    storage()?.removeItem(key);
  } catch {
    // nothing stored, nothing to drop
  }
}

function dropOldDrafts(store) {
  const entries = [];
  for (let index = 0; index < store.length; index += 1) {
    const key = store.key(index);
    if (isDraftKey(key)) entries.push([key, store.getItem(key)]);
  }
  for (const key of draftsToDrop(entries)) store.removeItem(key);
}
