// Diagrams: the information-flow graph, the neighbourhood of an element (expanded hop by hop) and the
// roadmap of runtime periods as a Gantt chart; each exported as SVG, PNG or draw.io. Each shows today's
// landscape or a plan's (plan-control.js): the landscape on a date, or two dates compared with what was
// added, removed or changed marked. What they draw is computed in diagram-data.js, the exports in svg.js.

import cytoscape from "../vendor/cytoscape/cytoscape.esm.min.js";
import { ApiError, allElements, get, projectedElements } from "./api.js";
import { pageHead } from "./components.js";
import {
  MARKS,
  PROJECT_COLOR,
  compareGraphs,
  compareItems,
  compareNeighbours,
  compareRows,
  edgeId,
  flowGraph,
  markOf,
  neighbours,
  planDays,
  readPlan,
  roadmapRows,
  withPeriod,
} from "./diagram-data.js";
import { h } from "./dom.js";
import { hopSummary } from "./format.js";
import { STATUS_COLORS } from "./palette.js";
import { elementPath, elementRoute, href } from "./paths.js";
import { markLegend, openScenarios, planControl, planNotice } from "./plan-control.js";
import { can, hasFunction, typeDef, typeLabel } from "./session.js";
import { exportButtons, ganttDrawio, ganttSvg, graphDrawio, graphSvg, svgToPng } from "./svg.js";

const TYPE_COLORS = [
  "#1f4e79",
  "#2f7d4f",
  "#b7791f",
  "#805ad5",
  "#c53030",
  "#2c7a7b",
  "#975a16",
  "#4a5568",
  "#d53f8c",
  "#3182ce",
  "#38a169",
  "#dd6b20",
  "#5a67d8",
  "#718096",
];

function typeColor(type) {
  const index = (typeDef(type)?.position ?? 0) % TYPE_COLORS.length;
  return TYPE_COLORS[index];
}

// The graph's own colours: the page's on screen (light or dark, the --canvas variables of app.css), the
// light ones in the PNG export so that it prints well.
const LIGHT_INK = { canvas: "#ffffff", label: "#52606d", selected: "#102a43" };

function pageInk() {
  const css = getComputedStyle(document.documentElement);
  const read = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    canvas: read("--canvas", LIGHT_INK.canvas),
    label: read("--canvas-label", LIGHT_INK.label),
    selected: read("--canvas-selected", LIGHT_INK.selected),
  };
}

const graphStyle = (ink) => [
  {
    selector: "node",
    style: {
      shape: "round-rectangle",
      label: "data(label)",
      "text-valign": "center",
      "text-halign": "center",
      "font-size": 11,
      color: "#fff",
      "background-color": "data(color)",
      width: (node) => Math.max(48, node.data("label").length * 6.6 + 20),
      height: 28,
      "padding-left": 10,
      "padding-right": 10,
      "border-width": 0,
      "border-color": "#102a43",
    },
  },
  { selector: "node.focus", style: { "border-width": 3, "border-color": "#f2b134" } },
  { selector: "node:selected", style: { "border-width": 3, "border-color": ink.selected } },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "line-color": "#9aa5b1",
      "target-arrow-color": "#7b8794",
      "curve-style": "bezier",
      label: "data(label)",
      "font-size": 9,
      color: ink.label,
      "text-rotation": "autorotate",
      "text-background-color": ink.canvas,
      "text-background-opacity": 0.8,
    },
  },
  { selector: "edge[?directed]", style: { "target-arrow-shape": "triangle" } },
  ...Object.entries(MARKS).flatMap(([mark, { color, dash, opacity }]) => [
    {
      selector: `node.${mark}`,
      style: { "border-width": 3, "border-color": color, "border-style": dash ? "dashed" : "solid", opacity },
    },
    {
      selector: `edge.${mark}`,
      style: {
        width: 2.5,
        "line-color": color,
        "target-arrow-color": color,
        "line-style": dash ? "dashed" : "solid",
        opacity,
      },
    },
  ]),
];

const graphElement = (data) => ({ data, classes: data.mark || "" });

function graphPanel(id, nodes, edges) {
  const container = h("div", {
    class: "graph",
    id,
    role: "img",
    "aria-label": `Graph with ${nodes.length} nodes and ${edges.length} edges`,
  });
  // Created headless and mounted once the container is in the page (its size is unknown before).
  const cy = cytoscape({
    elements: [...nodes.map(graphElement), ...edges.map(graphElement)],
    style: graphStyle(pageInk()),
    styleEnabled: true,
    minZoom: 0.2,
    maxZoom: 3,
  });
  return { container, cy };
}

function setCounts(container, cy) {
  container.dataset.nodeCount = String(cy.nodes().length);
  container.dataset.edgeCount = String(cy.edges().length);
  for (const mark of Object.keys(MARKS)) {
    container.dataset[`${mark}Count`] = String(cy.elements(`.${mark}`).length);
  }
  container.setAttribute(
    "aria-label",
    `Graph with ${cy.nodes().length} nodes and ${cy.edges().length} edges`,
  );
}

// Connected elements by a force-directed layout; unconnected ones in rows below it, where they neither
// crowd the graph nor get scattered across it.
function runLayout(cy) {
  const isolated = cy.nodes().filter((node) => node.degree() === 0);
  const connected = cy.elements().not(isolated);
  if (connected.length) {
    connected
      .layout({
        name: "cose",
        animate: false,
        nodeRepulsion: () => 12000,
        idealEdgeLength: () => 110,
        nodeDimensionsIncludeLabels: true,
        padding: 20,
        randomize: false,
      })
      .run();
  }
  if (!isolated.length) return;
  const box = connected.length ? connected.boundingBox() : { x1: 0, y2: 0, w: 900 };
  const width = Math.max(box.w, 900);
  const columns = Math.max(1, Math.floor(width / 150));
  isolated
    .layout({
      name: "grid",
      avoidOverlap: true,
      nodeDimensionsIncludeLabels: true,
      columns,
      condense: false,
      boundingBox: { x1: box.x1, y1: box.y2 + 70, w: width, h: 50 * Math.ceil(isolated.length / columns) },
    })
    .run();
}

// Drawn in the light colours for the moment it takes (the blob is made synchronously).
function graphPng(cy) {
  cy.style(graphStyle(LIGHT_INK));
  const png = cy.png({ full: true, scale: 2, bg: LIGHT_INK.canvas, output: "blob" });
  cy.style(graphStyle(pageInk()));
  return png;
}

function needsMassdata() {
  return hasFunction("MASSDATA")
    ? null
    : h("p", { class: "notice" }, "This diagram needs the MASSDATA permission.");
}

function statusLegend(...more) {
  const entry = ([status, color]) =>
    h("li", {}, h("span", { class: "swatch", style: `background:${color}` }), status);
  return h("ul", { class: "legend" }, Object.entries(STATUS_COLORS).map(entry), more);
}

// The graph's content as links a keyboard or screen-reader user can reach by Tab: every flow and every
// system ({item, mark} each: a comparison's mark, also said in words).
function flowTable(systems, flows) {
  const link = (type, ref) => h("a", { href: href(elementRoute(type, ref.id)) }, ref.name);
  const end = (refs) => (refs?.length ? link("InformationSystem", refs[0]) : "—");
  const said = (mark) => (mark ? h("span", { class: `mark-text ${mark}` }, ` (${mark})`) : null);
  const row = ({ item: flow, mark }) =>
    h(
      "tr",
      { "data-flow": flow.id[0], "data-mark": mark },
      h("td", {}, end(flow.sourceSystem)),
      h("th", { scope: "row" }, link("InformationFlow", { id: flow.id[0], name: flow.name[0] }), said(mark)),
      h("td", {}, end(flow.targetSystem)),
    );
  const column = (text) => h("th", { scope: "col" }, text);
  const system = ({ item, mark }) =>
    h(
      "li",
      { "data-mark": mark },
      link("InformationSystem", { id: item.id[0], name: item.name[0] }),
      said(mark),
    );
  return h(
    "section",
    { class: "panel", id: "flow-table", "aria-labelledby": "flow-table-title" },
    h("h2", { id: "flow-table-title" }, "Flows as a table"),
    h(
      "table",
      { class: "changes" },
      h("thead", {}, h("tr", {}, column("From"), column("Information flow"), column("To"))),
      h("tbody", {}, flows.map(row)),
    ),
    h("h3", {}, "Information systems"),
    h("ul", { class: "node-list", id: "flow-systems" }, systems.map(system)),
  );
}

// What a diagram reads for a plan, or the page that says why the server refused the plan (a scenario
// merged, closed or no longer shared since the link was made), with the Plan control to change it.
async function readOrRefused(plan, read, head, route, scenarios) {
  try {
    return { data: await read() };
  } catch (error) {
    if (!plan || !(error instanceof ApiError) || error.status === 401 || error.status >= 500) throw error;
    const refused = h(
      "p",
      { class: "notice", role: "alert", id: "plan-refused" },
      `This plan cannot be shown: ${error.message}`,
    );
    return { refused: h("div", {}, head, planControl(route, plan, await scenarios), refused) };
  }
}

const SYSTEM_FIELDS = ["name", "status"];
const FLOW_FIELDS = ["name", "sourceSystem", "targetSystem"];
const unmarked = (items) => items.map((item) => ({ item, mark: null }));

// Today's systems and flows, or the plan's on each of its days; and the graph and table entries.
async function flowData(plan) {
  if (!plan) {
    const [systems, flows] = await Promise.all([
      allElements("InformationSystem", SYSTEM_FIELDS),
      allElements("InformationFlow", FLOW_FIELDS),
    ]);
    return { ...flowGraph(systems, flows), systems: unmarked(systems), flows: unmarked(flows) };
  }
  const days = await Promise.all(
    planDays(plan).map((day) =>
      Promise.all([
        projectedElements("InformationSystem", day, plan.scenarios, SYSTEM_FIELDS),
        projectedElements("InformationFlow", day, plan.scenarios, FLOW_FIELDS),
      ]),
    ),
  );
  if (days.length === 1) {
    const [[systems, flows]] = days;
    return { ...flowGraph(systems, flows), systems: unmarked(systems), flows: unmarked(flows) };
  }
  const [[systemsBefore, flowsBefore], [systemsAfter, flowsAfter]] = days;
  return {
    ...compareGraphs(flowGraph(systemsBefore, flowsBefore), flowGraph(systemsAfter, flowsAfter)),
    systems: compareItems(systemsBefore, systemsAfter),
    flows: compareItems(flowsBefore, flowsAfter),
  };
}

export async function renderFlows({ query }) {
  const title = h(
    "div",
    {},
    h("h1", {}, "Information flows"),
    h(
      "p",
      { class: "muted" },
      "Information systems and the information flows between them. " +
        "Drag to arrange; click a system to open it.",
    ),
  );
  if (needsMassdata()) return h("div", {}, pageHead(title), needsMassdata());
  const plan = readPlan(query);
  const listing = openScenarios();
  const route = "/diagram/flows";
  const read = await readOrRefused(plan, () => flowData(plan), pageHead(title), route, listing);
  if (read.refused) return read.refused;
  const [scenarios, { nodes, edges, systems, flows }] = [await listing, read.data];
  const { container, cy } = graphPanel("flow-graph", nodes, edges);
  cy.on("tap", "node", (event) => {
    location.hash = `#/element/InformationSystem/${event.target.data("elementId")}`;
  });
  const summary = `${nodes.length} information systems, ${edges.length} information flows`;
  const view = h(
    "div",
    {},
    pageHead(
      title,
      exportButtons(
        "information-flows",
        () => graphSvg(cy),
        () => graphPng(cy),
        () => graphDrawio(cy, "Information flows"),
      ),
    ),
    planControl(route, plan, scenarios),
    planNotice(plan, scenarios),
    h("p", { class: "muted", id: "graph-summary" }, summary),
    statusLegend(),
    markLegend(plan),
    h("div", { class: "panel flush" }, container),
    flowTable(systems, flows),
  );
  requestAnimationFrame(() => {
    cy.mount(container);
    runLayout(cy);
    cy.fit(undefined, 30);
    setCounts(container, cy);
  });
  return view;
}

// A plan's landscape read type by type, once each: every element of a type by id on each of the plan's
// days (one map twice for a single day, so that nothing is marked).
class PlannedLandscape {
  constructor(plan) {
    this.plan = plan;
    this.types = new Map();
  }

  days(type) {
    if (!this.types.has(type)) {
      const read = (day) => projectedElements(type, day, this.plan.scenarios);
      const byId = (items) => new Map(items.map((item) => [item.id[0], item]));
      const loading = Promise.all(planDays(this.plan).map(read)).then((lists) => {
        const maps = lists.map(byId);
        return maps.length === 1 ? [maps[0], maps[0]] : maps;
      });
      this.types.set(type, loading);
    }
    return this.types.get(type);
  }

  // The element on the earlier and on the later day (undefined where it is not there).
  async states(type, id) {
    const [before, after] = await this.days(type);
    return [before.get(Number(id)), after.get(Number(id))];
  }

  // An element's relations on each day, to neighbours that are there that day too, as one marked list.
  async links(type, id) {
    const states = await this.states(type, id);
    const lists = await Promise.all(
      states.map(async (item, day) => {
        if (item === undefined) return [];
        const found = neighbours(typeDef(type), type, item).filter((link) => can(link.type, "read"));
        const there = await Promise.all(
          found.map(async (link) => (await this.days(link.type))[day].has(link.ref.id)),
        );
        return found.filter((_, index) => there[index]);
      }),
    );
    return compareNeighbours(...lists);
  }
}

// The growing graph around one element: how many hops each node is from it, and which were expanded;
// with a plan, its relations on the plan's days, marked as they differ.
class Neighbourhood {
  constructor(type, start, landscape, startMark) {
    this.startId = `${type}/${start.id[0]}`;
    this.landscape = landscape;
    this.hops = new Map([[this.startId, 0]]);
    this.expanded = new Set();
    const node = {
      id: this.startId,
      label: start.name[0],
      color: typeColor(type),
      type,
      elementId: start.id[0],
      mark: startMark,
    };
    Object.assign(this, graphPanel("neighbourhood-graph", [node], []));
    this.cy.getElementById(this.startId).addClass("focus");
  }

  depth() {
    return Math.max(...this.hops.values());
  }

  frontier() {
    const depth = this.depth();
    return [...this.hops].filter(([id, hop]) => hop === depth && !this.expanded.has(id)).map(([id]) => id);
  }

  // Today's relations of a node (its element read unless given), unmarked; or the plan's.
  async links(nodeType, elementId, element) {
    if (this.landscape) return this.landscape.links(nodeType, elementId);
    const data = element || (await get(elementPath(nodeType, elementId))).data;
    const found = neighbours(typeDef(nodeType), nodeType, data).filter((link) => can(link.type, "read"));
    return found.map((link) => ({ ...link, mark: null }));
  }

  async markOfNode(type, elementId) {
    return this.landscape ? markOf(...(await this.landscape.states(type, elementId))) : null;
  }

  // Adds the neighbours of a node one hop further out, each relation once.
  async expand(nodeId, element) {
    const { cy, hops, expanded } = this;
    if (expanded.has(nodeId)) return;
    expanded.add(nodeId);
    const hop = hops.get(nodeId);
    const node = cy.getElementById(nodeId);
    const nodeType = node.data("type");
    for (const { type: otherType, ref, label, mark } of await this.links(
      nodeType,
      node.data("elementId"),
      element,
    )) {
      const otherId = `${otherType}/${ref.id}`;
      if (!hops.has(otherId)) {
        hops.set(otherId, hop + 1);
        const added = {
          id: otherId,
          label: ref.name ?? `#${ref.id}`,
          color: typeColor(otherType),
          type: otherType,
          elementId: ref.id,
          mark: await this.markOfNode(otherType, ref.id),
        };
        cy.add(graphElement(added));
      }
      const id = edgeId(nodeId, otherId, label);
      const joined = (edge, a, b) => edge.source().id() === a && edge.target().id() === b;
      const either = cy
        .edges()
        .filter((edge) => joined(edge, otherId, nodeId) || joined(edge, nodeId, otherId));
      if (!cy.getElementById(id).length && !either.length) {
        cy.add(graphElement({ id, source: nodeId, target: otherId, label, mark }));
      }
    }
  }
}

const neighbourhoodRoute = (type, id) => `/diagram/neighbourhood/${encodeURIComponent(type)}/${id}`;

function nodeItem(node, hops) {
  const mark = node.data("mark");
  return h(
    "li",
    { "data-mark": mark },
    h("span", { class: "swatch", style: `background:${node.data("color")}` }),
    h("a", { href: href(elementRoute(node.data("type"), node.data("elementId"))) }, node.data("label")),
    h("span", { class: "muted" }, ` ${typeLabel(node.data("type"))}, hop ${hops.get(node.id())}`),
    mark ? h("span", { class: `mark-text ${mark}` }, ` (${mark})`) : null,
  );
}

// The page's head; its export buttons only with a graph (`cy`).
function neighbourhoodHead(type, id, start, cy) {
  const name = start.name[0];
  return pageHead(
    h(
      "div",
      {},
      h("p", { class: "crumbs" }, h("a", { href: href(elementRoute(type, id)) }, name), " /"),
      h("h1", {}, `Neighbourhood of ${name}`),
      h(
        "p",
        { class: "muted" },
        "Related elements, one hop at a time (click a node to expand just that one).",
      ),
    ),
    cy
      ? exportButtons(
          `neighbourhood-${name}`,
          () => graphSvg(cy),
          () => graphPng(cy),
          () => graphDrawio(cy, `Neighbourhood of ${name}`),
        )
      : null,
  );
}

// The element the neighbourhood starts from, and with a plan (MASSDATA only) its landscape and the element
// on the plan's days; or the page that says why the plan was refused.
async function neighbourhoodStart(type, id, query) {
  const plan = hasFunction("MASSDATA") ? readPlan(query) : null;
  const landscape = plan ? new PlannedLandscape(plan) : null;
  const listing = hasFunction("MASSDATA") ? openScenarios() : Promise.resolve([]);
  const { data: start } = await get(elementPath(type, id));
  const read = await readOrRefused(
    plan,
    async () => (landscape ? landscape.states(type, id) : []),
    neighbourhoodHead(type, id, start, null),
    neighbourhoodRoute(type, id),
    listing,
  );
  return { ...read, plan, landscape, start, scenarios: await listing, states: read.data };
}

export async function renderNeighbourhood({ params, query }) {
  const [type, id] = params;
  const { refused, plan, landscape, start, scenarios, states } = await neighbourhoodStart(type, id, query);
  if (refused) return refused;
  const route = neighbourhoodRoute(type, id);
  const graph = new Neighbourhood(type, start, landscape, markOf(...states));
  const { cy, container, hops, expanded } = graph;
  const nodeList = h("ul", { class: "node-list", id: "node-list" });
  const hopStatus = h("p", { class: "muted", id: "graph-summary", "aria-live": "polite" });
  const expandButton = h(
    "button",
    { type: "button", class: "button primary", id: "expand-hop" },
    "Expand one more hop",
  );
  const relayout = () => {
    runLayout(cy);
    cy.fit(undefined, 30);
    nodeList.replaceChildren(...cy.nodes().map((node) => nodeItem(node, hops)));
    const depth = graph.depth();
    hopStatus.textContent = hopSummary(cy.nodes().length, depth, cy.edges().length);
    expandButton.disabled = depth >= 2 || !graph.frontier().length;
    setCounts(container, cy);
  };
  expandButton.addEventListener("click", async () => {
    expandButton.disabled = true;
    // Read together: the browser keeps a few requests in flight at once.
    await Promise.all(graph.frontier().map((nodeId) => graph.expand(nodeId)));
    relayout();
  });
  cy.on("tap", "node", async (event) => {
    const nodeId = event.target.id();
    if (hops.get(nodeId) < 2 && !expanded.has(nodeId)) {
      await graph.expand(nodeId);
      relayout();
    }
  });
  await graph.expand(graph.startId, start);
  const elements = h("section", { class: "panel" }, h("h2", {}, "Elements"), nodeList);
  const view = h(
    "div",
    {},
    neighbourhoodHead(type, id, start, cy),
    hasFunction("MASSDATA") ? planControl(route, plan, scenarios) : null,
    planNotice(plan, scenarios),
    plan && !states.some(Boolean)
      ? h("p", { class: "notice", id: "plan-absent" }, `${start.name[0]} is not in the planned landscape.`)
      : null,
    markLegend(plan),
    h("div", { class: "toolbar" }, expandButton, hopStatus),
    h("div", { class: "columns wide-left" }, h("div", { class: "panel flush" }, container), elements),
  );
  requestAnimationFrame(() => {
    cy.mount(container);
    relayout();
  });
  return view;
}

const ROADMAP_TYPES = ["InformationSystem", "Project"];
const roadmapFields = (type) => [
  "name",
  "runtimePeriod",
  ...(type === "InformationSystem" ? ["status"] : []),
];

// Today's bars, or the plan's on its day (the elements running then), or on two days as one, marked.
async function roadmapData(plan) {
  const wanted = ROADMAP_TYPES.filter((type) => can(type, "read"));
  const rowsOf = (lists) => wanted.flatMap((type, index) => roadmapRows(type, withPeriod(lists[index])));
  if (!plan) {
    const read = (type) => allElements(type, roadmapFields(type), "@runtimePeriod != null");
    return rowsOf(await Promise.all(wanted.map(read)));
  }
  const onDay = (day) =>
    Promise.all(wanted.map((type) => projectedElements(type, day, plan.scenarios, roadmapFields(type))));
  const days = (await Promise.all(planDays(plan).map(onDay))).map(rowsOf);
  return days.length === 1 ? days[0] : compareRows(...days);
}

export async function renderRoadmap({ query }) {
  const head = h(
    "div",
    {},
    h("h1", {}, "Roadmap"),
    h("p", { class: "muted" }, "Runtime periods of information systems and projects."),
  );
  if (needsMassdata()) return h("div", {}, pageHead(head), needsMassdata());
  const plan = readPlan(query);
  const listing = openScenarios();
  const route = "/diagram/roadmap";
  const read = await readOrRefused(plan, () => roadmapData(plan), pageHead(head), route, listing);
  if (read.refused) return read.refused;
  const [scenarios, rows] = [await listing, read.data];
  const svg = ganttSvg(rows, Date.now(), plan ? planDays(plan) : []);
  const width = Number(svg.getAttribute("width"));
  const height = Number(svg.getAttribute("height"));
  const project = h(
    "li",
    {},
    h("span", { class: "swatch", style: `background:${PROJECT_COLOR}` }),
    "Project",
  );
  return h(
    "div",
    {},
    pageHead(
      head,
      exportButtons(
        "roadmap",
        () => svg.cloneNode(true),
        () => svgToPng(svg, width, height),
        () => ganttDrawio(svg, "Roadmap"),
      ),
    ),
    planControl(route, plan, scenarios),
    planNotice(plan, scenarios),
    statusLegend(project),
    markLegend(plan),
    h("div", { class: "panel flush scroll-x" }, svg),
  );
}
