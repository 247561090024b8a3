// A scenario's diff (GET /api/scenarios/{key}/diff) as the review page shows it: each field's base, main and
// scenario values as text, its state, the conflicts at each field and how each can be settled. No DOM, no
// network (tests/js/scenario-diff.test.mjs).

import { EMPTY, formatValues } from "./format.js";

const FIELD_STATES = {
  "unchanged-in-main": "Scenario only",
  changed: "Changed in both, merges",
  conflict: "Conflict",
};

const CONFLICT_KINDS = {
  bothChanged: "Changed on both sides",
  deletedInMain: "Deleted in main",
  changedInMain: "Changed in main",
  relationToDeleted: "Relates to an element deleted in main",
  nameTaken: "Name taken in main",
  cycle: "Parent makes a cycle",
  metamodelChanged: "No longer in the metamodel",
};

// What a conflict of each kind can be settled with (the API refuses the others: TAKES in
// scenarios/service.py).
const CHOICES = {
  bothChanged: ["scenario", "main", "value"],
  changedInMain: ["scenario", "main"],
  deletedInMain: ["main"],
  relationToDeleted: ["main"],
  nameTaken: ["main", "value"],
  cycle: ["main", "value"],
  metamodelChanged: ["main"],
};

// What the value form asks for, by kind: a new name, another parent, or the field's values.
const VALUE_LABELS = { nameTaken: "New name", cycle: "Parent" };

const ACTIONS = { created: "Created", updated: "Changed", deleted: "Deleted" };

export function fieldStateLabel(state, resolution) {
  if (state === "conflict" && resolution) return `Settled: ${takeLabel(resolution.take, "bothChanged")}`;
  return FIELD_STATES[state] || state;
}

export function conflictKindLabel(kind) {
  return CONFLICT_KINDS[kind] || kind;
}

export function actionLabel(action) {
  return ACTIONS[action] || action;
}

// The takes a conflict allows; an element the scenario created has no name in main to go back to.
export function conflictChoices(kind, action) {
  const choices = CHOICES[kind] || ["main"];
  return kind === "nameTaken" && action === "created" ? choices.filter((take) => take !== "main") : choices;
}

export function valueLabel(kind) {
  return VALUE_LABELS[kind] || "Value";
}

export function valueButtonLabel(kind) {
  return `Use this ${{ nameTaken: "name", cycle: "parent" }[kind] || "value"}`;
}

// A button's words for a choice: for an element deleted on one side they say what happens to it.
export function takeLabel(take, kind) {
  if (kind === "changedInMain") return take === "scenario" ? "delete it anyway" : "keep main's element";
  if (kind === "deletedInMain") return "accept the deletion";
  if (kind === "relationToDeleted") return "drop the relation";
  if (kind === "metamodelChanged") return "drop what the metamodel no longer has";
  if (kind === "nameTaken") return take === "main" ? "keep main's name" : "a new name";
  if (kind === "cycle") return take === "main" ? "keep main's parent" : "another parent";
  return { scenario: "the scenario's value", main: "main's value", value: "another value" }[take] || take;
}

// A settling button's words.
export function choiceLabel(take, kind) {
  if (kind === "bothChanged" || !CHOICES[kind]) {
    return { scenario: "Take the scenario's", main: "Take main's", value: "Use another value" }[take] || take;
  }
  const words = takeLabel(take, kind);
  return words.charAt(0).toUpperCase() + words.slice(1);
}

// How a settled conflict reads; `property` formats a chosen value.
export function resolutionText(resolution, kind, property) {
  if (!resolution) return "Open";
  if (resolution.take === "value") return `Settled with ${formatValues(property, resolution.value)}`;
  return `Settled: ${takeLabel(resolution.take, kind)}`;
}

function refNames(refs) {
  return (refs || []).map((ref) => ref.name ?? `#${ref.id}`);
}

// A relation end's change as text: "+ A, + B, − C"; EMPTY when nothing changed.
export function endChangeText(added, removed) {
  const parts = [...refNames(added).map((name) => `+ ${name}`), ...refNames(removed).map((n) => `− ${n}`)];
  return parts.length ? parts.join(", ") : EMPTY;
}

// One field of the diff as the review table shows it. A value field: its values at the base, in main and in
// the scenario; a relation end: what the scenario added and removed (and main, when main changed it too).
// `wholeElement`: the element is deleted on one side, so its fields are settled with the element's conflict.
export function fieldRow(field, property, { wholeElement = false } = {}) {
  const common = {
    field: field.field,
    state: field.state,
    stateLabel: wholeElement ? "With the element" : fieldStateLabel(field.state, field.resolution),
    resolution: field.resolution || null,
  };
  if ("added" in field || "removed" in field) {
    const mainChanged = "mainAdded" in field || "mainRemoved" in field;
    return {
      ...common,
      relation: true,
      base: "", // the diff names what changed on a relation end, not the whole end
      main: mainChanged ? endChangeText(field.mainAdded, field.mainRemoved) : "unchanged",
      scenario: endChangeText(field.added, field.removed),
    };
  }
  return {
    ...common,
    relation: false,
    base: formatValues(property, field.base),
    main: "main" in field ? formatValues(property, field.main) : "",
    scenario: formatValues(property, field.scenario),
  };
}

// The field a conflict belongs to: a relation to a deleted element is "end/id", the element as a whole "*".
export function conflictField(conflict) {
  if (conflict.kind === "relationToDeleted") {
    const cut = conflict.field.lastIndexOf("/");
    return cut > 0 ? conflict.field.slice(0, cut) : conflict.field;
  }
  return conflict.field;
}

export function openConflictCount(item) {
  return (item.conflicts || []).filter((conflict) => !conflict.resolution).length;
}

// The summary's counts by type, e.g. [["InformationSystem", "1 created, 2 changed"]], types by name.
export function summaryLines(summary) {
  const order = ["created", "updated", "deleted"];
  return Object.keys(summary || {})
    .sort()
    .map((type) => [
      type,
      order
        .filter((action) => summary[type][action])
        .map((action) => `${summary[type][action]} ${actionLabel(action).toLowerCase()}`)
        .join(", "),
    ]);
}

export function behindMainText(count) {
  if (!count) return "up to date with main";
  return `behind main by ${count} revision${count === 1 ? "" : "s"}`;
}

// A merge's (or dry run's) counts: "1 to create, 2 to update" or, once merged, "1 created, 2 updated".
export function mergeCountsText(counts, done = false) {
  const words = done
    ? { create: "created", update: "updated", delete: "deleted" }
    : { create: "to create", update: "to update", delete: "to delete" };
  const parts = ["create", "update", "delete"]
    .filter((operation) => counts?.[operation])
    .map((operation) => `${counts[operation]} ${words[operation]}`);
  return parts.length ? parts.join(", ") : "nothing to write";
}

// One entry of a 409 `scenario_conflicts` answer as a line of text.
export function mergeConflictText(conflict) {
  const element = conflict.element ? `${conflict.element.name ?? `#${conflict.element.id}`}: ` : "";
  return `${element}${conflict.message || conflictKindLabel(conflict.kind)}`;
}

// A refused request as one line: its detail, then each problem that says more than the detail does.
export function problemText(message, problem) {
  const more = (problem?.errors || [])
    .map((error) => error.message)
    .filter((text) => text && !message.includes(text));
  return [message, ...new Set(more)].join(": ");
}
