// SVG drawn by hand: the graph export (cytoscape renders to canvas only), the roadmap's Gantt chart, and
// their export as SVG, PNG or draw.io files.

import { MARKS, barColor, yearScale } from "./diagram-data.js";
import { h } from "./dom.js";
import { drawioXml } from "./drawio.js";
import { isoDay, parseDay, truncate } from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const FONT = "Inter, Segoe UI, Arial, sans-serif";

function svgElement(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  if (text !== undefined) node.textContent = text;
  return node;
}

const serialize = (svg) => new XMLSerializer().serializeToString(svg);

function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export async function svgToPng(svg, width, height) {
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
  return new Promise((resolve) => {
    canvas.toBlob(resolve, "image/png");
  });
}

// `makeDrawio` returns the diagram as draw.io XML (drawio.js).
export function exportButtons(name, makeSvg, makePng, makeDrawio) {
  const svgFile = () => download(`${name}.svg`, new Blob([serialize(makeSvg())], { type: "image/svg+xml" }));
  const pngFile = async () => download(`${name}.png`, await makePng());
  const drawioFile = () => download(`${name}.drawio`, new Blob([makeDrawio()], { type: "application/xml" }));
  return h(
    "div",
    { class: "export", role: "group", "aria-label": "Export" },
    h("button", { type: "button", class: "button", id: "export-svg", onclick: svgFile }, "Export SVG"),
    h("button", { type: "button", class: "button", id: "export-png", onclick: pngFile }, "Export PNG"),
    h(
      "button",
      { type: "button", class: "button", id: "export-drawio", onclick: drawioFile },
      "Export draw.io",
    ),
  );
}

// The graph as draw.io XML: each node where the layout put it, in the colour it is drawn in, a comparison's
// mark as its outline; each edge between its nodes with its label.
export function graphDrawio(cy, name) {
  const vertices = cy.nodes().map((node) => {
    const p = node.position();
    const mark = MARKS[node.data("mark")];
    return {
      key: node.id(),
      label: node.data("label"),
      x: p.x - node.width() / 2,
      y: p.y - node.height() / 2,
      width: node.width(),
      height: node.height(),
      fill: node.style("background-color"),
      fontColor: node.style("color"),
      stroke: mark?.color,
      strokeWidth: 3,
      dashed: Boolean(mark?.dash),
      opacity: mark?.opacity,
    };
  });
  const edges = cy.edges().map((edge) => {
    const mark = MARKS[edge.data("mark")];
    return {
      source: edge.source().id(),
      target: edge.target().id(),
      label: edge.data("label"),
      directed: Boolean(edge.data("directed")),
      stroke: mark?.color,
      strokeWidth: mark ? 2.5 : null,
      dashed: Boolean(mark?.dash),
    };
  });
  return drawioXml({ name, vertices, edges });
}

// The roadmap as draw.io XML: its bars as drawn in `svg` (ganttSvg), each named left of it.
export function ganttDrawio(svg, name) {
  const attribute = (node, key) => Number(node.getAttribute(key));
  const vertices = [...svg.querySelectorAll("rect.bar")].map((bar, index) => {
    const mark = MARKS[bar.dataset.mark];
    return {
      key: `bar-${index}`,
      label: bar.dataset.name,
      x: attribute(bar, "x"),
      y: attribute(bar, "y"),
      width: attribute(bar, "width"),
      height: attribute(bar, "height"),
      fill: bar.getAttribute("fill"),
      labelLeft: true,
      labelWidth: GANTT.labelWidth,
      stroke: mark?.color,
      dashed: Boolean(mark?.dash),
      opacity: mark?.opacity,
    };
  });
  return drawioXml({ name, vertices });
}

function arrowDefs() {
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
  return defs;
}

// How a comparison's mark draws a shape's outline (nothing for none).
function markAttributes(mark) {
  const style = MARKS[mark];
  if (!style) return {};
  return {
    class: mark,
    "data-mark": mark,
    stroke: style.color,
    "stroke-dasharray": style.dash,
    opacity: style.opacity < 1 ? style.opacity : null,
  };
}

function edgeShapes(edge) {
  const s = edge.sourceEndpoint();
  const t = edge.targetEndpoint();
  const marked = markAttributes(edge.data("mark"));
  const line = svgElement("line", {
    x1: s.x,
    y1: s.y,
    x2: t.x,
    y2: t.y,
    stroke: "#9aa5b1",
    "stroke-width": marked.stroke ? 2.5 : 1.5,
    "marker-end": edge.data("directed") ? "url(#arrow)" : null,
    ...marked,
  });
  if (!edge.data("label")) return [line];
  const at = { x: (s.x + t.x) / 2, y: (s.y + t.y) / 2 - 3 };
  const style = { "text-anchor": "middle", fill: "#52606d", "font-size": 9 };
  return [line, svgElement("text", { ...at, ...style }, edge.data("label"))];
}

function nodeShapes(node) {
  const p = node.position();
  const w = node.width();
  const hgt = node.height();
  const box = svgElement("rect", {
    x: p.x - w / 2,
    y: p.y - hgt / 2,
    width: w,
    height: hgt,
    rx: 6,
    fill: node.style("background-color"),
    stroke: node.style("border-color"),
    "stroke-width": node.style("border-width").replace("px", ""),
    ...markAttributes(node.data("mark")),
  });
  const style = { "text-anchor": "middle", fill: node.style("color") };
  return [box, svgElement("text", { x: p.x, y: p.y + 4, ...style }, node.data("label"))];
}

// The graph as a standalone SVG drawn from the laid-out positions.
export function graphSvg(cy) {
  const box = cy.elements().boundingBox({ includeLabels: true });
  const pad = 20;
  const width = Math.ceil(box.w + 2 * pad);
  const height = Math.ceil(box.h + 2 * pad);
  const svg = svgElement("svg", {
    xmlns: SVG_NS,
    width,
    height,
    viewBox: `${box.x1 - pad} ${box.y1 - pad} ${width} ${height}`,
    "font-family": FONT,
    "font-size": 11,
  });
  svg.append(
    arrowDefs(),
    svgElement("rect", { x: box.x1 - pad, y: box.y1 - pad, width, height, fill: "#fff" }),
  );
  cy.edges().forEach((edge) => svg.append(...edgeShapes(edge)));
  cy.nodes().forEach((node) => svg.append(...nodeShapes(node)));
  return svg;
}

const GANTT = { labelWidth: 220, chartWidth: 860, rowHeight: 24, top: 34 };

// A line and a label for every year (or every 2nd or 5th of a long span).
function yearLines(svg, scale, x, height) {
  const { top } = GANTT;
  for (let year = scale.minYear; year <= scale.maxYear + 1; year += scale.step) {
    const position = x(Date.UTC(year, 0, 1));
    svg.append(
      svgElement("line", {
        x1: position,
        y1: top - 6,
        x2: position,
        y2: height - 24,
        stroke: "#e4e7eb",
        class: "grid",
      }),
    );
    if (year <= scale.maxYear) {
      const label = { x: position + 4, y: top - 12, fill: "#52606d", class: "axis" };
      svg.append(svgElement("text", label, String(year)));
    }
  }
}

// One row: its name as a link, its bar from start to end (open ends to the chart's edges, an open end
// marked with an arrow head) and the period as the bar's tooltip.
function ganttRow(svg, row, index, { x, width, scale }) {
  const { rowHeight, top } = GANTT;
  const y = top + index * rowHeight;
  if (index % 2 === 0) {
    svg.append(svgElement("rect", { x: 0, y, width, height: rowHeight, fill: "#f7f9fb", class: "stripe" }));
  }
  const link = svgElement("a", { href: `#/element/${row.type}/${row.id}` });
  const name = { x: 8, y: y + 16, fill: "#102a43", class: "row-name" };
  link.append(svgElement("text", name, truncate(row.name, 30)));
  svg.append(link);
  const start = x(row.start ?? scale.from);
  const end = x(row.end ?? scale.to);
  const color = barColor(row);
  const marked = markAttributes(row.mark);
  const bar = svgElement("rect", {
    x: start,
    y: y + 5,
    width: Math.max(end - start, 3),
    height: rowHeight - 10,
    rx: 4,
    fill: color,
    "data-name": row.name,
    ...marked,
    "stroke-width": marked.stroke ? 2.5 : null,
    class: marked.class ? `bar ${marked.class}` : "bar",
  });
  const said = row.mark ? ` (${row.mark})` : "";
  const period = `${row.start ? isoDay(row.start) : "…"} – ${row.end ? isoDay(row.end) : "open"}${said}`;
  bar.append(svgElement("title", {}, `${row.name}: ${period}`));
  svg.append(bar);
  if (row.end === null) {
    const half = (rowHeight - 10) / 2;
    svg.append(svgElement("path", { d: `M ${end - 2} ${y + 5} l 8 ${half} l -8 ${half} z`, fill: color }));
  }
}

// A dashed line across the chart at a time, labelled at its foot (right of the line, or left of it with
// `before`, so that the labels of two close days do not overlap); `kind` the class that colours it on screen.
function dayLine(svg, position, bottom, { color, kind }, label, before = false) {
  svg.append(
    svgElement("line", {
      x1: position,
      y1: GANTT.top - 6,
      x2: position,
      y2: bottom - 24,
      stroke: color,
      "stroke-dasharray": "4 3",
      class: kind,
    }),
  );
  const anchor = before ? { x: position - 4, "text-anchor": "end" } : { x: position + 4 };
  svg.append(svgElement("text", { ...anchor, y: bottom - 10, fill: color, class: kind }, label));
}

// `days` (YYYY-MM-DD): a plan's days, each drawn as a line like today's.
export function ganttSvg(rows, today, days = []) {
  const { labelWidth, chartWidth, rowHeight, top } = GANTT;
  const width = labelWidth + chartWidth + 20;
  const height = top + rows.length * rowHeight + 30;
  const scale = yearScale(rows, today, days.map(parseDay));
  const x = (time) => labelWidth + ((time - scale.from) / (scale.to - scale.from)) * chartWidth;
  const svg = svgElement("svg", {
    xmlns: SVG_NS,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    style: "max-width:100%;height:auto",
    id: "roadmap",
    role: "img",
    "aria-label": `Roadmap with ${rows.length} bars`,
    "font-family": FONT,
    "font-size": 12,
  });
  svg.dataset.barCount = String(rows.length);
  // Light in the attributes (what the exports keep), the page's colours on screen (app.css).
  svg.append(svgElement("rect", { x: 0, y: 0, width, height, fill: "#fff", class: "canvas" }));
  yearLines(svg, scale, x, height);
  rows.forEach((row, index) => ganttRow(svg, row, index, { x, width, scale }));
  dayLine(svg, x(today), height, { color: "#c53030", kind: "today" }, "today");
  days.forEach((day, index) => {
    const line = { color: "#2b6cb0", kind: "plan-day" };
    dayLine(svg, x(parseDay(day)), height, line, day, index === 0 && days.length > 1);
  });
  return svg;
}
