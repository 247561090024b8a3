// Diagrams: the information-flow graph, the neighbourhood of an element (expanded hop by hop) and the
// roadmap of runtime periods as a Gantt chart; each exported as SVG or PNG.

import cytoscape from "../vendor/cytoscape/cytoscape.esm.min.js";
import { allElements, elementPath, get } from "./api.js";
import { h } from "./dom.js";
import { STATUS_COLORS } from "./palette.js";
import { can, hasFunction, typeDef, typeLabel } from "./session.js";

const SVG_NS = "http://www.w3.org/2000/svg";
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

function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function svgElement(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs))
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const serialize = (svg) => new XMLSerializer().serializeToString(svg);

async function svgToPng(svg, width, height) {
  const image = new Image();
  const url = URL.createObjectURL(new Blob([serialize(svg)], { type: "image/svg+xml" }));
  await new Promise((resolve, reject) => {
    image.onload = resolve;
    image.onerror = reject;
    image.src = url;
  });
  const canvas = document.createElement("canvas");
  canvas.width = width * 2;
  canvas.height = height * 2;
  const context = canvas.getContext("2d");
  context.scale(2, 2);
  context.fillStyle = "#fff";
  context.fillRect(0, 0, width, height);
  context.drawImage(image, 0, 0, width, height);
  URL.revokeObjectURL(url);
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}

// The graph as a standalone SVG drawn from the laid-out positions (cytoscape renders to canvas only).
function graphSvg(cy) {
  const box = cy.elements().boundingBox({ includeLabels: true });
  const pad = 20;
  const width = Math.ceil(box.w + 2 * pad);
  const height = Math.ceil(box.h + 2 * pad);
  const svg = svgElement("svg", {
    xmlns: SVG_NS,
    width,
    height,
    viewBox: `${box.x1 - pad} ${box.y1 - pad} ${width} ${height}`,
    "font-family": "Inter, Segoe UI, Arial, sans-serif",
    "font-size": 11,
  });
  const defs = svgElement("defs");
  const marker = svgElement("marker", {
    id: "arrow",
    viewBox: "0 0 10 10",
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: "auto-start-reverse",
  });
  marker.append(svgElement("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#7b8794" }));
  defs.append(marker);
  svg.append(defs, svgElement("rect", { x: box.x1 - pad, y: box.y1 - pad, width, height, fill: "#fff" }));
  cy.edges().forEach((edge) => {
    const s = edge.sourceEndpoint();
    const t = edge.targetEndpoint();
    svg.append(
      svgElement("line", {
        x1: s.x,
        y1: s.y,
        x2: t.x,
        y2: t.y,
        stroke: "#9aa5b1",
        "stroke-width": 1.5,
        "marker-end": edge.data("directed") ? "url(#arrow)" : null,
      }),
    );
    if (edge.data("label"))
      svg.append(
        svgElement(
          "text",
          {
            x: (s.x + t.x) / 2,
            y: (s.y + t.y) / 2 - 3,
            "text-anchor": "middle",
            fill: "#52606d",
            "font-size": 9,
          },
          edge.data("label"),
        ),
      );
  });
  cy.nodes().forEach((node) => {
    const p = node.position();
    const w = node.width();
    const hgt = node.height();
    svg.append(
      svgElement("rect", {
        x: p.x - w / 2,
        y: p.y - hgt / 2,
        width: w,
        height: hgt,
        rx: 6,
        fill: node.style("background-color"),
        stroke: node.style("border-color"),
        "stroke-width": node.style("border-width").replace("px", ""),
      }),
    );
    svg.append(
      svgElement(
        "text",
        { x: p.x, y: p.y + 4, "text-anchor": "middle", fill: node.style("color") },
        node.data("label"),
      ),
    );
  });
  return svg;
}

function exportButtons(name, makeSvg, makePng) {
  return h(
    "div",
    { class: "export", role: "group", "aria-label": "Export" },
    h(
      "button",
      {
        type: "button",
        class: "button",
        id: "export-svg",
        onclick: () => download(`${name}.svg`, new Blob([serialize(makeSvg())], { type: "image/svg+xml" })),
      },
      "Export SVG",
    ),
    h(
      "button",
      {
        type: "button",
        class: "button",
        id: "export-png",
        onclick: async () => download(`${name}.png`, await makePng()),
      },
      "Export PNG",
    ),
  );
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

function needsMassdata() {
  return hasFunction("MASSDATA")
    ? null
    : h("p", { class: "notice" }, "This diagram needs the MASSDATA permission.");
}

// The graph's content as links a keyboard or screen-reader user can reach by Tab: every flow and every system.
function flowTable(systems, flows) {
  const link = (type, ref) => h("a", { href: `#/element/${type}/${ref.id}` }, ref.name);
  return h(
    "section",
    { class: "panel", id: "flow-table", "aria-labelledby": "flow-table-title" },
    h("h2", { id: "flow-table-title" }, "Flows as a table"),
    h(
      "table",
      { class: "changes" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "From"),
          h("th", { scope: "col" }, "Information flow"),
          h("th", { scope: "col" }, "To"),
        ),
      ),
      h(
        "tbody",
        {},
        flows.map((flow) =>
          h(
            "tr",
            { "data-flow": flow.id[0] },
            h("td", {}, flow.sourceSystem?.length ? link("InformationSystem", flow.sourceSystem[0]) : "—"),
            h("th", { scope: "row" }, link("InformationFlow", { id: flow.id[0], name: flow.name[0] })),
            h("td", {}, flow.targetSystem?.length ? link("InformationSystem", flow.targetSystem[0]) : "—"),
          ),
        ),
      ),
    ),
    h("h3", {}, "Information systems"),
    h(
      "ul",
      { class: "node-list", id: "flow-systems" },
      systems.map((system) =>
        h("li", {}, link("InformationSystem", { id: system.id[0], name: system.name[0] })),
      ),
    ),
  );
}

export async function renderFlows() {
  const head = h(
    "div",
    { class: "page-head" },
    h(
      "div",
      {},
      h("h1", {}, "Information flows"),
      h(
        "p",
        { class: "muted" },
        "Information systems and the information flows between them. Drag to arrange; click a system to open it.",
      ),
    ),
  );
  if (needsMassdata()) return h("div", {}, head, needsMassdata());
  const [systems, flows] = await Promise.all([
    allElements("InformationSystem", ["name", "status"]),
    allElements("InformationFlow", ["name", "sourceSystem", "targetSystem"]),
  ]);
  const nodes = systems.map((system) => ({
    id: `IS/${system.id[0]}`,
    label: system.name[0],
    color: STATUS_COLORS[system.status?.[0]] || "#1f4e79",
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
  const { container, cy } = graphPanel("flow-graph", nodes, edges);
  cy.on("tap", "node", (event) => {
    location.hash = `#/element/InformationSystem/${event.target.data("elementId")}`;
  });
  const legend = h(
    "ul",
    { class: "legend" },
    Object.entries(STATUS_COLORS).map(([status, color]) =>
      h("li", {}, h("span", { class: "swatch", style: `background:${color}` }), status),
    ),
  );
  const view = h(
    "div",
    {},
    h(
      "div",
      { class: "page-head" },
      head.firstChild,
      exportButtons(
        "information-flows",
        () => graphSvg(cy),
        () => cy.png({ full: true, scale: 2, bg: "#fff", output: "blob" }),
      ),
    ),
    h(
      "p",
      { class: "muted", id: "graph-summary" },
      `${nodes.length} information systems, ${edges.length} information flows`,
    ),
    legend,
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

function neighbours(type, element) {
  const def = typeDef(type);
  const found = [];
  for (const end of def?.relationEnds || []) {
    for (const ref of element[end.name] || []) found.push({ type: end.type, ref, label: end.name });
  }
  for (const ref of element.parent || []) found.push({ type, ref, label: "parent" });
  for (const ref of element.children || []) found.push({ type, ref, label: "child" });
  return found;
}

export async function renderNeighbourhood({ params }) {
  const [type, id] = params;
  const { data: start } = await get(elementPath(type, id));
  const key = (t, i) => `${t}/${i}`;
  const hops = new Map([[key(type, start.id[0]), 0]]);
  const expanded = new Set();
  const { container, cy } = graphPanel(
    "neighbourhood-graph",
    [
      {
        id: key(type, start.id[0]),
        label: start.name[0],
        color: typeColor(type),
        type,
        elementId: start.id[0],
      },
    ],
    [],
  );
  cy.getElementById(key(type, start.id[0])).addClass("focus");
  const nodeList = h("ul", { class: "node-list", id: "node-list" });
  const hopStatus = h("p", { class: "muted", id: "graph-summary", "aria-live": "polite" });
  const expandButton = h(
    "button",
    { type: "button", class: "button primary", id: "expand-hop" },
    "Expand one more hop",
  );

  const drawList = () => {
    nodeList.replaceChildren(
      ...cy
        .nodes()
        .map((node) =>
          h(
            "li",
            {},
            h("span", { class: "swatch", style: `background:${node.data("color")}` }),
            h(
              "a",
              { href: `#/element/${encodeURIComponent(node.data("type"))}/${node.data("elementId")}` },
              node.data("label"),
            ),
            h("span", { class: "muted" }, ` ${typeLabel(node.data("type"))}, hop ${hops.get(node.id())}`),
          ),
        ),
    );
    const depth = Math.max(...hops.values());
    hopStatus.textContent = `${cy.nodes().length} elements within ${depth} hop${depth === 1 ? "" : "s"}, ${cy.edges().length} relations`;
    expandButton.disabled =
      depth >= 2 || ![...hops].some(([nodeId, hop]) => hop === depth && !expanded.has(nodeId));
    setCounts(container, cy);
  };

  const expand = async (nodeId, element) => {
    if (expanded.has(nodeId)) return;
    expanded.add(nodeId);
    const hop = hops.get(nodeId);
    const node = cy.getElementById(nodeId);
    const nodeType = node.data("type");
    const data = element || (await get(elementPath(nodeType, node.data("elementId")))).data;
    for (const { type: otherType, ref, label } of neighbours(nodeType, data)) {
      if (!can(otherType, "read")) continue;
      const otherId = key(otherType, ref.id);
      if (!hops.has(otherId)) {
        hops.set(otherId, hop + 1);
        cy.add({
          data: {
            id: otherId,
            label: ref.name ?? `#${ref.id}`,
            color: typeColor(otherType),
            type: otherType,
            elementId: ref.id,
          },
        });
      }
      const [a, b] = [nodeId, otherId].sort();
      const edgeId = `${a}|${b}|${label}`;
      const reverse = cy
        .edges()
        .filter(
          (edge) =>
            (edge.source().id() === b && edge.target().id() === a) ||
            (edge.source().id() === a && edge.target().id() === b),
        );
      if (!cy.getElementById(edgeId).length && !reverse.length)
        cy.add({ data: { id: edgeId, source: nodeId, target: otherId, label } });
    }
  };

  const relayout = () => {
    runLayout(cy);
    cy.fit(undefined, 30);
    drawList();
  };
  expandButton.addEventListener("click", async () => {
    expandButton.disabled = true;
    const depth = Math.max(...hops.values());
    const frontier = [...hops]
      .filter(([nodeId, hop]) => hop === depth && !expanded.has(nodeId))
      .map(([nodeId]) => nodeId);
    // Read together: the browser keeps a few requests in flight at once.
    await Promise.all(frontier.map((nodeId) => expand(nodeId)));
    relayout();
  });
  cy.on("tap", "node", async (event) => {
    const nodeId = event.target.id();
    if (hops.get(nodeId) < 2 && !expanded.has(nodeId)) {
      await expand(nodeId);
      relayout();
    }
  });
  await expand(key(type, start.id[0]), start);

  const view = h(
    "div",
    {},
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h(
          "p",
          { class: "crumbs" },
          h("a", { href: `#/element/${encodeURIComponent(type)}/${id}` }, start.name[0]),
          " /",
        ),
        h("h1", {}, `Neighbourhood of ${start.name[0]}`),
        h(
          "p",
          { class: "muted" },
          "Related elements, one hop at a time (click a node to expand just that one).",
        ),
      ),
      exportButtons(
        `neighbourhood-${start.name[0]}`,
        () => graphSvg(cy),
        () => cy.png({ full: true, scale: 2, bg: "#fff", output: "blob" }),
      ),
    ),
    h("div", { class: "toolbar" }, expandButton, hopStatus),
    h(
      "div",
      { class: "columns wide-left" },
      h("div", { class: "panel flush" }, container),
      h("section", { class: "panel" }, h("h2", {}, "Elements"), nodeList),
    ),
  );
  requestAnimationFrame(() => {
    cy.mount(container);
    relayout();
  });
  return view;
}

function parseDay(text) {
  return text ? new Date(`${text}T00:00:00Z`).getTime() : null;
}

export async function renderRoadmap() {
  const head = h(
    "div",
    {},
    h("h1", {}, "Roadmap"),
    h("p", { class: "muted" }, "Runtime periods of information systems and projects."),
  );
  if (needsMassdata()) return h("div", {}, h("div", { class: "page-head" }, head), needsMassdata());
  const wanted = ["InformationSystem", "Project"].filter((type) => can(type, "read"));
  const lists = await Promise.all(
    wanted.map((type) =>
      allElements(
        type,
        ["name", "runtimePeriod", ...(type === "InformationSystem" ? ["status"] : [])],
        "@runtimePeriod != null",
      ),
    ),
  );
  const rows = [];
  wanted.forEach((type, index) => {
    for (const item of lists[index].sort((a, b) =>
      (a.runtimePeriod[0].start || "").localeCompare(b.runtimePeriod[0].start || ""),
    )) {
      rows.push({
        type,
        id: item.id[0],
        name: item.name[0],
        status: item.status?.[0],
        start: parseDay(item.runtimePeriod[0].start),
        end: parseDay(item.runtimePeriod[0].end),
      });
    }
  });
  const svg = ganttSvg(rows);
  const width = Number(svg.getAttribute("width"));
  const height = Number(svg.getAttribute("height"));
  return h(
    "div",
    {},
    h(
      "div",
      { class: "page-head" },
      head,
      exportButtons(
        "roadmap",
        () => svg.cloneNode(true),
        () => svgToPng(svg, width, height),
      ),
    ),
    h(
      "ul",
      { class: "legend" },
      Object.entries(STATUS_COLORS).map(([status, color]) =>
        h("li", {}, h("span", { class: "swatch", style: `background:${color}` }), status),
      ),
      h("li", {}, h("span", { class: "swatch", style: "background:#b7791f" }), "Project"),
    ),
    h("div", { class: "panel flush scroll-x" }, svg),
  );
}

function ganttSvg(rows) {
  const labelWidth = 220;
  const chartWidth = 860;
  const rowHeight = 24;
  const top = 34;
  const width = labelWidth + chartWidth + 20;
  const height = top + rows.length * rowHeight + 30;
  const known = rows.flatMap((row) => [row.start, row.end]).filter((v) => v !== null);
  const today = Date.now();
  const minYear = new Date(Math.min(...known, today)).getUTCFullYear();
  const maxYear = new Date(Math.max(...known, today)).getUTCFullYear() + 1;
  const from = Date.UTC(minYear, 0, 1);
  const to = Date.UTC(maxYear + 1, 0, 1);
  const x = (time) => labelWidth + ((time - from) / (to - from)) * chartWidth;
  const svg = svgElement("svg", {
    xmlns: SVG_NS,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    style: "max-width:100%;height:auto",
    id: "roadmap",
    role: "img",
    "aria-label": `Roadmap with ${rows.length} bars`,
    "font-family": "Inter, Segoe UI, Arial, sans-serif",
    "font-size": 12,
  });
  svg.dataset.barCount = String(rows.length);
  svg.append(svgElement("rect", { x: 0, y: 0, width, height, fill: "#fff" }));
  const step = maxYear - minYear > 24 ? 5 : maxYear - minYear > 12 ? 2 : 1;
  for (let year = minYear; year <= maxYear + 1; year += step) {
    const position = x(Date.UTC(year, 0, 1));
    svg.append(
      svgElement("line", { x1: position, y1: top - 6, x2: position, y2: height - 24, stroke: "#e4e7eb" }),
    );
    if (year <= maxYear)
      svg.append(svgElement("text", { x: position + 4, y: top - 12, fill: "#52606d" }, String(year)));
  }
  rows.forEach((row, index) => {
    const y = top + index * rowHeight;
    if (index % 2 === 0)
      svg.append(svgElement("rect", { x: 0, y, width, height: rowHeight, fill: "#f7f9fb" }));
    const link = svgElement("a", { href: `#/element/${row.type}/${row.id}` });
    link.append(
      svgElement(
        "text",
        { x: 8, y: y + 16, fill: "#102a43" },
        row.name.length > 30 ? `${row.name.slice(0, 29)}…` : row.name,
      ),
    );
    svg.append(link);
    const start = x(row.start ?? from);
    const end = x(row.end ?? to);
    const color = row.type === "Project" ? "#b7791f" : STATUS_COLORS[row.status] || "#1f4e79";
    const bar = svgElement("rect", {
      class: "bar",
      x: start,
      y: y + 5,
      width: Math.max(end - start, 3),
      height: rowHeight - 10,
      rx: 4,
      fill: color,
      "data-name": row.name,
    });
    bar.append(
      svgElement(
        "title",
        {},
        `${row.name}: ${row.start ? new Date(row.start).toISOString().slice(0, 10) : "…"} – ${row.end ? new Date(row.end).toISOString().slice(0, 10) : "open"}`,
      ),
    );
    svg.append(bar);
    if (row.end === null)
      svg.append(
        svgElement("path", {
          d: `M ${end - 2} ${y + 5} l 8 ${(rowHeight - 10) / 2} l -8 ${(rowHeight - 10) / 2} z`,
          fill: color,
        }),
      );
  });
  const now = x(today);
  svg.append(
    svgElement("line", {
      x1: now,
      y1: top - 6,
      x2: now,
      y2: height - 24,
      stroke: "#c53030",
      "stroke-dasharray": "4 3",
    }),
  );
  svg.append(svgElement("text", { x: now + 4, y: height - 10, fill: "#c53030" }, "today"));
  return svg;
}
