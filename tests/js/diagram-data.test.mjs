import assert from "node:assert/strict";
import { test } from "node:test";

import {
  barColor,
  edgeId,
  flowGraph,
  neighbours,
  roadmapRows,
  yearScale,
} from "../../src/blockrepo/web/static/js/diagram-data.js";

test("flowGraph: systems coloured by status, only flows between two known systems", () => {
  const systems = [
    { id: [1], name: ["ERP"], status: ["CURRENT"] },
    { id: [2], name: ["CRM"] },
  ];
  const flows = [
    { id: [10], name: ["orders"], sourceSystem: [{ id: 1 }], targetSystem: [{ id: 2 }] },
    { id: [11], name: ["half"], sourceSystem: [{ id: 1 }], targetSystem: [] },
    { id: [12], name: ["elsewhere"], sourceSystem: [{ id: 1 }], targetSystem: [{ id: 99 }] },
    { id: [13], name: ["none"] },
  ];
  const { nodes, edges } = flowGraph(systems, flows);
  assert.deepEqual(
    nodes.map((node) => [node.id, node.label, node.color]),
    [
      ["IS/1", "ERP", "#2f7d4f"],
      ["IS/2", "CRM", "#1f4e79"],
    ],
  );
  assert.deepEqual(edges, [{ id: "IF/10", source: "IS/1", target: "IS/2", label: "orders", directed: true }]);
  assert.deepEqual(flowGraph([], []), { nodes: [], edges: [] });
});

test("neighbours: relation ends, parent and children", () => {
  const def = {
    relationEnds: [
      { name: "usedBy", type: "Project" },
      { name: "empty", type: "X" },
    ],
  };
  const element = { usedBy: [{ id: 5, name: "P" }], parent: [{ id: 1 }], children: [{ id: 2 }, { id: 3 }] };
  assert.deepEqual(
    neighbours(def, "IS", element).map(({ type, ref, label }) => `${type}/${ref.id} ${label}`),
    ["Project/5 usedBy", "IS/1 parent", "IS/2 child", "IS/3 child"],
  );
  assert.deepEqual(neighbours(null, "IS", {}), []);
});

test("edgeId: the same for either direction", () => {
  assert.equal(edgeId("IS/2", "IS/10", "uses"), edgeId("IS/10", "IS/2", "uses"));
  assert.notEqual(edgeId("IS/2", "IS/10", "uses"), edgeId("IS/2", "IS/10", "parent"));
});

test("roadmapRows: earliest start first, open ends null", () => {
  const items = [
    { id: [1], name: ["late"], runtimePeriod: [{ start: "2025-01-01", end: null }] },
    {
      id: [2],
      name: ["open start"],
      runtimePeriod: [{ start: null, end: "2024-06-30" }],
      status: ["PLANNED"],
    },
    { id: [3], name: ["early"], runtimePeriod: [{ start: "2020-03-01", end: "2021-01-01" }] },
  ];
  const rows = roadmapRows("InformationSystem", items);
  assert.deepEqual(
    rows.map((row) => row.name),
    ["open start", "early", "late"],
  );
  assert.deepEqual(rows[0], {
    type: "InformationSystem",
    id: 2,
    name: "open start",
    status: "PLANNED",
    start: null,
    end: Date.UTC(2024, 5, 30),
  });
  assert.equal(rows[2].end, null);
  assert.deepEqual(
    items.map((item) => item.id[0]),
    [1, 2, 3],
    "the input is not reordered",
  );
});

test("barColor: projects in their colour, systems by status", () => {
  assert.equal(barColor({ type: "Project", status: "CURRENT" }), "#b7791f");
  assert.equal(barColor({ type: "InformationSystem", status: "PLANNED" }), "#2b6cb0");
  assert.equal(barColor({ type: "InformationSystem" }), "#1f4e79");
});

test("yearScale: first known year (or today's) to the year after the last; steps for long spans", () => {
  const today = Date.UTC(2026, 5, 1);
  const none = yearScale([], today);
  assert.deepEqual([none.minYear, none.maxYear, none.step], [2026, 2027, 1]);
  assert.equal(none.from, Date.UTC(2026, 0, 1));
  assert.equal(none.to, Date.UTC(2028, 0, 1));
  const open = yearScale([{ start: null, end: null }], today);
  assert.deepEqual([open.minYear, open.maxYear], [2026, 2027]);
  const rows = [{ start: Date.UTC(2010, 0, 1), end: Date.UTC(2030, 0, 1) }];
  assert.deepEqual(Object.values(yearScale(rows, today)).slice(0, 3), [2010, 2031, 2]);
  assert.equal(yearScale([{ start: Date.UTC(1990, 0, 1), end: null }], today).step, 5);
  assert.equal(yearScale([{ start: Date.UTC(2014, 0, 1), end: null }], today).step, 2);
  assert.equal(yearScale([{ start: Date.UTC(2015, 0, 1), end: null }], today).step, 1);
});
