// What the diagrams draw, computed from API data: graph nodes and edges, an element's neighbours, the
// roadmap's rows and time scale. No DOM, no network (tests/js/diagram-data.test.mjs).

import { parseDay } from "./format.js";
import { STATUS_COLORS } from "./palette.js";

export const SYSTEM_COLOR = "#1f4e79";
export const PROJECT_COLOR = "#b7791f";

// Information systems as nodes, the flows between two known systems as directed edges.
export function flowGraph(systems, flows) {
  const nodes = systems.map((system) => ({
    id: `IS/${system.id[0]}`,
    label: system.name[0],
    color: STATUS_COLORS[system.status?.[0]] || SYSTEM_COLOR,
    type: "InformationSystem",
    elementId: system.id[0],
  }));
  const known = new Set(nodes.map((node) => node.id));
  const edges = flows
    .filter((flow) => flow.sourceSystem?.length && flow.targetSystem?.length)
    .map((flow) => ({
      id: `IF/${flow.id[0]}`,
      source: `IS/${flow.sourceSystem[0].id}`,
      target: `IS/${flow.targetSystem[0].id}`,
      label: flow.name[0],
      directed: true,
    }))
    .filter((edge) => known.has(edge.source) && known.has(edge.target));
  return { nodes, edges };
}

// Everything an element refers to: its relation ends (of the type's definition), parent and children.
export function neighbours(def, type, element) {
  const found = [];
  for (const end of def?.relationEnds || []) {
    for (const ref of element[end.name] || []) found.push({ type: end.type, ref, label: end.name });
  }
  for (const ref of element.parent || []) found.push({ type, ref, label: "parent" });
  for (const ref of element.children || []) found.push({ type, ref, label: "child" });
  return found;
}

// One edge between two nodes for one label, whichever side it was found from.
export function edgeId(a, b, label) {
  const [first, second] = [a, b].sort();
  return `${first}|${second}|${label}`;
}

// Roadmap rows of one type, earliest start first (no start first of all); times in ms, null when open.
export function roadmapRows(type, items) {
  const start = (item) => item.runtimePeriod[0].start || "";
  return [...items]
    .sort((a, b) => start(a).localeCompare(start(b)))
    .map((item) => ({
      type,
      id: item.id[0],
      name: item.name[0],
      status: item.status?.[0],
      start: parseDay(item.runtimePeriod[0].start),
      end: parseDay(item.runtimePeriod[0].end),
    }));
}

export function barColor(row) {
  return row.type === "Project" ? PROJECT_COLOR : STATUS_COLORS[row.status] || SYSTEM_COLOR;
}

// The years a roadmap spans: from the first known time (or today, or a time in `more`) to the year after
// the last, and the step between year lines so that a long span does not crowd them.
export function yearScale(rows, today, more = []) {
  const known = rows.flatMap((row) => [row.start, row.end]).filter((v) => v !== null);
  const minYear = new Date(Math.min(...known, today, ...more)).getUTCFullYear();
  const maxYear = new Date(Math.max(...known, today, ...more)).getUTCFullYear() + 1;
  const span = maxYear - minYear;
  const step = span > 24 ? 5 : span > 12 ? 2 : 1;
  return { minYear, maxYear, step, from: Date.UTC(minYear, 0, 1), to: Date.UTC(maxYear + 1, 0, 1) };
}

// --- A plan: the landscape on a date, or two dates compared -------------------------------------------

const DAY = /^\d{4}-\d{2}-\d{2}$/;

// Whether a text is a real calendar day (YYYY-MM-DD); "2027-02-30" is not.
export function isDay(text) {
  if (!DAY.test(text || "")) return false;
  const time = parseDay(text);
  return Number.isFinite(time) && new Date(time).toISOString().slice(0, 10) === text;
}

// The plan a diagram's route asks for: the date it shows ("as on"), the date it is compared with (none
// unless another day) and the keys of the scenarios applied. Null without a valid date: today's diagram.
export function readPlan(query) {
  const at = query.get("at");
  if (!isDay(at)) return null;
  const compare = query.get("compare");
  const scenarios = (query.get("scenarios") || "")
    .split(",")
    .map((key) => key.trim())
    .filter(Boolean);
  return {
    at,
    compare: isDay(compare) && compare !== at ? compare : null,
    scenarios: [...new Set(scenarios)],
  };
}

// A plan as the query of a diagram's route (see readPlan); none for today's diagram.
export function planQuery(plan) {
  if (!plan) return {};
  return { at: plan.at, compare: plan.compare, scenarios: plan.scenarios.join(",") };
}

// The days a plan reads the landscape on, the earlier first: one, or two when it compares.
export function planDays(plan) {
  return plan.compare ? [plan.at, plan.compare].sort() : [plan.at];
}

// How the marks of a comparison are drawn: on the later date only, on the earlier only, on both but
// different (its fields or relation ends).
export const MARKS = {
  added: { color: "#2f855a", dash: null, opacity: 1, label: "added (on the later date only)" },
  removed: { color: "#c53030", dash: "5 3", opacity: 0.45, label: "removed (on the earlier date only)" },
  changed: { color: "#d69e2e", dash: null, opacity: 1, label: "changed" },
};

const BOOKKEEPING = new Set(["revision", "lastModificationTime", "lastModificationUser"]);

// A value compared regardless of key order and of the order of relation ends (entries with an id).
function normalized(value) {
  if (Array.isArray(value)) {
    const items = value.map(normalized);
    const byId = items.every((item) => item && typeof item === "object" && "id" in item);
    return byId ? items.sort((a, b) => String(a.id).localeCompare(String(b.id))) : items;
  }
  if (value && typeof value === "object") {
    const keys = Object.keys(value).filter((key) => !BOOKKEEPING.has(key) && key !== "mark");
    return Object.fromEntries(keys.sort().map((key) => [key, normalized(value[key])]));
  }
  return value;
}

export function sameData(a, b) {
  return JSON.stringify(normalized(a)) === JSON.stringify(normalized(b));
}

// The mark of a thing (element, node, edge, bar) as it is on the earlier and on the later date
// (undefined where it is not there): null when it is the same on both, or on neither.
export function markOf(earlier, later) {
  if (earlier === undefined && later === undefined) return null;
  if (earlier === undefined) return "added";
  if (later === undefined) return "removed";
  return sameData(earlier, later) ? null : "changed";
}

// Two lists (of the two dates) as one: each entry once, as it is on the later date where it is there,
// with its mark; the later date's order first, then what only the earlier has.
export function unionMarked(earlier, later, keyOf) {
  const before = new Map(earlier.map((entry) => [keyOf(entry), entry]));
  const after = new Map(later.map((entry) => [keyOf(entry), entry]));
  const keys = [...after.keys(), ...[...before.keys()].filter((key) => !after.has(key))];
  return keys.map((key) => ({
    ...(after.get(key) ?? before.get(key)),
    mark: markOf(before.get(key), after.get(key)),
  }));
}

// Elements (of the API's shape) of two dates as one list of {item, mark}.
export function compareItems(earlier, later) {
  const byId = (item) => item.id[0];
  const before = new Map(earlier.map((item) => [byId(item), item]));
  const after = new Map(later.map((item) => [byId(item), item]));
  const ids = [...after.keys(), ...[...before.keys()].filter((id) => !after.has(id))];
  return ids.map((id) => ({
    item: after.get(id) ?? before.get(id),
    mark: markOf(before.get(id), after.get(id)),
  }));
}

// Two graphs (of two dates) as one: every node and edge of either, marked.
export function compareGraphs(earlier, later) {
  const byId = (entry) => entry.id;
  return {
    nodes: unionMarked(earlier.nodes, later.nodes, byId),
    edges: unionMarked(earlier.edges, later.edges, byId),
  };
}

// The relations of an element on two dates (neighbours' results) as one list, each marked.
export function compareNeighbours(earlier, later) {
  return unionMarked(earlier, later, ({ type, ref, label }) => `${type}/${ref.id}|${label}`);
}

// The elements that have a runtime period (the roadmap's bars).
export function withPeriod(items) {
  return items.filter((item) => item.runtimePeriod?.length);
}

// Roadmap rows of two dates as one, marked, earliest start first (no start first of all).
export function compareRows(earlier, later) {
  const rows = unionMarked(earlier, later, (row) => `${row.type}/${row.id}`);
  return rows.sort((a, b) => (a.start ?? -Infinity) - (b.start ?? -Infinity) || 0);
}
