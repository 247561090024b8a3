import assert from "node:assert/strict";
import { test } from "node:test";

import {
  barColor,
  compareGraphs,
  compareItems,
  compareNeighbours,
  compareRows,
  edgeId,
  flowGraph,
  isDay,
  markOf,
  neighbours,
  planDays,
  planQuery,
  readPlan,
  roadmapRows,
  withPeriod,
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

test("yearScale: the plan's days widen the span", () => {
  const today = Date.UTC(2026, 5, 1);
  const scale = yearScale([], today, [Date.UTC(2031, 0, 1)]);
  assert.deepEqual([scale.minYear, scale.maxYear], [2026, 2032]);
});

test("isDay: real calendar days only", () => {
  assert.ok(isDay("2027-07-01"));
  assert.ok(isDay("2028-02-29"));
  for (const text of ["2027-02-30", "2027-7-1", "next year", "", null, undefined, "2027-07-01T00:00"]) {
    assert.equal(isDay(text), false, String(text));
  }
});

test("readPlan and planQuery: the plan in a route's query and back", () => {
  const query = (text) => new URLSearchParams(text);
  assert.equal(readPlan(query("")), null);
  assert.equal(readPlan(query("scenarios=a&compare=2027-01-01")), null, "no day: today's diagram");
  assert.equal(readPlan(query("at=2027-02-30")), null);
  const plan = readPlan(query("at=2027-07-01&compare=2027-01-01&scenarios=b, a,,b"));
  assert.deepEqual(plan, { at: "2027-07-01", compare: "2027-01-01", scenarios: ["b", "a"] });
  assert.deepEqual(readPlan(query(new URLSearchParams(planQuery(plan)).toString())), plan);
  assert.equal(
    readPlan(query("at=2027-07-01&compare=2027-07-01")).compare,
    null,
    "the same day: no comparison",
  );
  assert.equal(readPlan(query("at=2027-07-01&compare=soon")).compare, null);
  assert.deepEqual(readPlan(query("at=2027-07-01")).scenarios, []);
  assert.deepEqual(planQuery(null), {});
});

test("planDays: one day, or two with the earlier first", () => {
  assert.deepEqual(planDays({ at: "2027-07-01", compare: null }), ["2027-07-01"]);
  assert.deepEqual(planDays({ at: "2027-07-01", compare: "2027-01-01" }), ["2027-01-01", "2027-07-01"]);
  assert.deepEqual(planDays({ at: "2026-01-01", compare: "2027-01-01" }), ["2026-01-01", "2027-01-01"]);
});

test("markOf: added, removed, changed, or nothing; bookkeeping and order of relation ends aside", () => {
  const erp = { id: [1], name: ["ERP"], revision: [3], usedBy: [{ id: 2 }, { id: 5 }] };
  assert.equal(markOf(undefined, erp), "added");
  assert.equal(markOf(erp, undefined), "removed");
  assert.equal(markOf(undefined, undefined), null);
  assert.equal(markOf(erp, { ...erp, revision: [9], lastModificationTime: ["x"] }), null);
  assert.equal(markOf(erp, { ...erp, usedBy: [{ id: 5 }, { id: 2 }] }), null);
  assert.equal(markOf(erp, { ...erp, usedBy: [{ id: 5 }] }), "changed");
  assert.equal(markOf(erp, { ...erp, name: ["ERP 2"] }), "changed");
});

test("compareItems: both days' elements once, as on the later day, marked", () => {
  const earlier = [
    { id: [1], name: ["kept"] },
    { id: [2], name: ["retired"] },
    { id: [3], name: ["renamed"] },
  ];
  const later = [
    { id: [1], name: ["kept"] },
    { id: [3], name: ["renamed later"] },
    { id: [4], name: ["new"] },
  ];
  assert.deepEqual(
    compareItems(earlier, later).map(({ item, mark }) => [item.name[0], mark]),
    [
      ["kept", null],
      ["renamed later", "changed"],
      ["new", "added"],
      ["retired", "removed"],
    ],
  );
});

test("compareGraphs: the union of two days' flow graphs, nodes and edges marked", () => {
  const erp = { id: [1], name: ["ERP"], status: ["CURRENT"] };
  const crm = { id: [2], name: ["CRM"] };
  const lake = { id: [3], name: ["Data Lake"] };
  const orders = { id: [10], name: ["orders"], sourceSystem: [{ id: 1 }], targetSystem: [{ id: 2 }] };
  const feed = { id: [11], name: ["feed"], sourceSystem: [{ id: 1 }], targetSystem: [{ id: 3 }] };
  const earlier = flowGraph([erp, crm], [orders]);
  const later = flowGraph([{ ...erp, status: ["PLANNED"] }, lake], [orders, feed]);
  const { nodes, edges } = compareGraphs(earlier, later);
  assert.deepEqual(
    nodes.map((node) => [node.id, node.mark]),
    [
      ["IS/1", "changed"],
      ["IS/3", "added"],
      ["IS/2", "removed"],
    ],
  );
  assert.equal(nodes[0].color, "#2b6cb0", "drawn as on the later day");
  assert.deepEqual(
    edges.map((edge) => [edge.id, edge.mark]),
    [
      ["IF/11", "added"],
      ["IF/10", "removed"],
    ],
    "a flow whose end is gone on the later day is gone with it",
  );
  const same = compareGraphs(earlier, earlier);
  assert.ok([...same.nodes, ...same.edges].every((entry) => entry.mark === null));
});

test("compareNeighbours: relations of two days, one per neighbour and label", () => {
  const link = (id, label, name = "P") => ({ type: "Project", ref: { id, name }, label });
  const marked = compareNeighbours(
    [link(1, "usedBy"), link(2, "usedBy"), link(3, "usedBy")],
    [link(1, "usedBy"), link(3, "usedBy", "P renamed"), link(2, "parent"), link(4, "usedBy")],
  );
  assert.deepEqual(
    marked.map(({ ref, label, mark }) => `${ref.id} ${label} ${mark}`),
    ["1 usedBy null", "3 usedBy changed", "2 parent added", "4 usedBy added", "2 usedBy removed"],
  );
});

test("withPeriod and compareRows: bars of both days, marked, earliest start first", () => {
  assert.deepEqual(
    withPeriod([{ runtimePeriod: [] }, { runtimePeriod: [{ start: "2020-01-01" }] }, {}]).length,
    1,
  );
  const rows = (items) => roadmapRows("InformationSystem", items);
  const period = (start, end = null) => [{ start, end }];
  const earlier = rows([
    { id: [1], name: ["kept"], runtimePeriod: period("2020-01-01") },
    { id: [2], name: ["ends"], runtimePeriod: period("2019-01-01", "2027-03-01") },
    { id: [3], name: ["moved"], runtimePeriod: period("2021-01-01", "2030-01-01") },
  ]);
  const later = rows([
    { id: [1], name: ["kept"], runtimePeriod: period("2020-01-01") },
    { id: [3], name: ["moved"], runtimePeriod: period("2021-01-01", "2028-01-01") },
    { id: [4], name: ["open start"], runtimePeriod: period(null, "2029-01-01") },
  ]);
  assert.deepEqual(
    compareRows(earlier, later).map((row) => [row.name, row.mark]),
    [
      ["open start", "added"],
      ["ends", "removed"],
      ["kept", null],
      ["moved", "changed"],
    ],
  );
  assert.equal(compareRows(earlier, later)[3].end, Date.UTC(2028, 0, 1));
});
