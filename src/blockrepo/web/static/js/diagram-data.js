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

// The years a roadmap spans: from the first known time (or today) to the year after the last, and the
// step between year lines so that a long span does not crowd them.
export function yearScale(rows, today) {
  const known = rows.flatMap((row) => [row.start, row.end]).filter((v) => v !== null);
  const minYear = new Date(Math.min(...known, today)).getUTCFullYear();
  const maxYear = new Date(Math.max(...known, today)).getUTCFullYear() + 1;
  const span = maxYear - minYear;
  const step = span > 24 ? 5 : span > 12 ? 2 : 1;
  return { minYear, maxYear, step, from: Date.UTC(minYear, 0, 1), to: Date.UTC(maxYear + 1, 0, 1) };
}
