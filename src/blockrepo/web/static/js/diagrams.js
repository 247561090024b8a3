// Diagrams: the information-flow graph, the neighbourhood of an element (expanded hop by hop) and the
// roadmap of runtime periods as a Gantt chart; each exported as SVG or PNG. What they draw is computed in
// diagram-data.js, the SVG export in svg.js.

import cytoscape from "../vendor/cytoscape/cytoscape.esm.min.js";
import { allElements, get } from "./api.js";
import { pageHead } from "./components.js";
import { PROJECT_COLOR, edgeId, flowGraph, neighbours, roadmapRows } from "./diagram-data.js";
import { h } from "./dom.js";
import { hopSummary } from "./format.js";
import { STATUS_COLORS } from "./palette.js";
import { elementPath, elementRoute, href } from "./paths.js";
import { can, hasFunction, typeDef, typeLabel } from "./session.js";
import { exportButtons, ganttSvg, graphSvg, svgToPng } from "./svg.js";

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

const GRAPH_STYLE = [
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
  { selector: "node:selected", style: { "border-width": 3, "border-color": "#102a43" } },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "line-color": "#9aa5b1",
      "target-arrow-color": "#7b8794",
      "curve-style": "bezier",
      label: "data(label)",
      "font-size": 9,
      color: "#52606d",
      "text-rotation": "autorotate",
      "text-background-color": "#fff",
      "text-background-opacity": 0.8,
    },
  },
  { selector: "edge[?directed]", style: { "target-arrow-shape": "triangle" } },
];

function graphPanel(id, nodes, edges) {
  const container = h("div", {
    class: "graph",
    id,
    role: "img",
    "aria-label": `Graph with ${nodes.length} nodes and ${edges.length} edges`,
  });
  // Created headless and mounted once the container is in the page (its size is unknown before).
  const cy = cytoscape({
    elements: [...nodes.map((data) => ({ data })), ...edges.map((data) => ({ data }))],
    style: GRAPH_STYLE,
    styleEnabled: true,
    minZoom: 0.2,
    maxZoom: 3,
  });
  return { container, cy };
}

function setCounts(container, cy) {
  container.dataset.nodeCount = String(cy.nodes().length);
  container.dataset.edgeCount = String(cy.edges().length);
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

const graphPng = (cy) => cy.png({ full: true, scale: 2, bg: "#fff", output: "blob" });

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
// system.
function flowTable(systems, flows) {
  const link = (type, ref) => h("a", { href: href(elementRoute(type, ref.id)) }, ref.name);
  const end = (refs) => (refs?.length ? link("InformationSystem", refs[0]) : "—");
  const row = (flow) =>
    h(
      "tr",
      { "data-flow": flow.id[0] },
      h("td", {}, end(flow.sourceSystem)),
      h("th", { scope: "row" }, link("InformationFlow", { id: flow.id[0], name: flow.name[0] })),
      h("td", {}, end(flow.targetSystem)),
    );
  const column = (text) => h("th", { scope: "col" }, text);
  const system = (item) => h("li", {}, link("InformationSystem", { id: item.id[0], name: item.name[0] }));
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

export async function renderFlows() {
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
  const [systems, flows] = await Promise.all([
    allElements("InformationSystem", ["name", "status"]),
    allElements("InformationFlow", ["name", "sourceSystem", "targetSystem"]),
  ]);
  const { nodes, edges } = flowGraph(systems, flows);
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
      ),
    ),
    h("p", { class: "muted", id: "graph-summary" }, summary),
    statusLegend(),
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

// The growing graph around one element: how many hops each node is from it, and which were expanded.
class Neighbourhood {
  constructor(type, start) {
    this.startId = `${type}/${start.id[0]}`;
    this.hops = new Map([[this.startId, 0]]);
    this.expanded = new Set();
    const node = {
      id: this.startId,
      label: start.name[0],
      color: typeColor(type),
      type,
      elementId: start.id[0],
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

  // Adds the neighbours of a node (read unless given) one hop further out, each relation once.
  async expand(nodeId, element) {
    const { cy, hops, expanded } = this;
    if (expanded.has(nodeId)) return;
    expanded.add(nodeId);
    const hop = hops.get(nodeId);
    const node = cy.getElementById(nodeId);
    const nodeType = node.data("type");
    const data = element || (await get(elementPath(nodeType, node.data("elementId")))).data;
    for (const { type: otherType, ref, label } of neighbours(typeDef(nodeType), nodeType, data)) {
      if (!can(otherType, "read")) continue;
      const otherId = `${otherType}/${ref.id}`;
      if (!hops.has(otherId)) {
        hops.set(otherId, hop + 1);
        const color = typeColor(otherType);
        const added = {
          id: otherId,
          label: ref.name ?? `#${ref.id}`,
          color,
          type: otherType,
          elementId: ref.id,
        };
        cy.add({ data: added });
      }
      const id = edgeId(nodeId, otherId, label);
      const joined = (edge, a, b) => edge.source().id() === a && edge.target().id() === b;
      const either = cy
        .edges()
        .filter((edge) => joined(edge, otherId, nodeId) || joined(edge, nodeId, otherId));
      if (!cy.getElementById(id).length && !either.length) {
        cy.add({ data: { id, source: nodeId, target: otherId, label } });
      }
    }
  }
}

function nodeItem(node, hops) {
  return h(
    "li",
    {},
    h("span", { class: "swatch", style: `background:${node.data("color")}` }),
    h("a", { href: href(elementRoute(node.data("type"), node.data("elementId"))) }, node.data("label")),
    h("span", { class: "muted" }, ` ${typeLabel(node.data("type"))}, hop ${hops.get(node.id())}`),
  );
}

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
    exportButtons(
      `neighbourhood-${name}`,
      () => graphSvg(cy),
      () => graphPng(cy),
    ),
  );
}

export async function renderNeighbourhood({ params }) {
  const [type, id] = params;
  const { data: start } = await get(elementPath(type, id));
  const graph = new Neighbourhood(type, start);
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
    h("div", { class: "toolbar" }, expandButton, hopStatus),
    h("div", { class: "columns wide-left" }, h("div", { class: "panel flush" }, container), elements),
  );
  requestAnimationFrame(() => {
    cy.mount(container);
    relayout();
  });
  return view;
}

export async function renderRoadmap() {
  const head = h(
    "div",
    {},
    h("h1", {}, "Roadmap"),
    h("p", { class: "muted" }, "Runtime periods of information systems and projects."),
  );
  if (needsMassdata()) return h("div", {}, pageHead(head), needsMassdata());
  const wanted = ["InformationSystem", "Project"].filter((type) => can(type, "read"));
  const fields = (type) => ["name", "runtimePeriod", ...(type === "InformationSystem" ? ["status"] : [])];
  const lists = await Promise.all(
    wanted.map((type) => allElements(type, fields(type), "@runtimePeriod != null")),
  );
  const rows = wanted.flatMap((type, index) => roadmapRows(type, lists[index]));
  const svg = ganttSvg(rows, Date.now());
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
      ),
    ),
    statusLegend(project),
    h("div", { class: "panel flush scroll-x" }, svg),
  );
}
