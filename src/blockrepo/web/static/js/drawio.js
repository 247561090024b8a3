// A diagram as a draw.io (diagrams.net) file: uncompressed mxGraph XML that draw.io opens for editing, with
// a vertex per node or bar and an edge per edge. Pure: the diagrams hand in what they drew (svg.js).

const ENTITIES = { "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;", "\n": "&#10;" };

// Text for an XML attribute value (labels are data users typed).
export function escapeXml(text) {
  return String(text ?? "").replace(/[<>&"'\n]/g, (character) => ENTITIES[character]);
}

const RGB = /^rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)/;
const HEX = /^#(?:[0-9a-fA-F]{3}){1,2}$/;

// A colour as draw.io's styles take it (#rrggbb), from a hex colour or the rgb() cytoscape reports; "none"
// for anything else, so that nothing a label or a colour holds can break the style string.
export function hexColor(value) {
  const text = String(value ?? "").trim();
  if (HEX.test(text)) return text.toLowerCase();
  const rgb = RGB.exec(text);
  if (!rgb) return "none";
  const hex = rgb.slice(1, 4).map((part) => Math.min(255, Number(part)).toString(16).padStart(2, "0"));
  return `#${hex.join("")}`;
}

const round = (value) => Math.round(Number(value) * 10) / 10;

function styleOf(entries) {
  return Object.entries(entries)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${value};`)
    .join("");
}

// A node: a rounded box with its label inside; a bar: a box with its label left of it (the roadmap's
// name column).
function vertexStyle(vertex) {
  const outside = vertex.labelLeft
    ? { labelPosition: "left", verticalLabelPosition: "middle", align: "right", spacingRight: 8 }
    : { align: "center" };
  return styleOf({
    rounded: 1,
    whiteSpace: vertex.labelLeft ? "nowrap" : "wrap",
    html: 0,
    fillColor: hexColor(vertex.fill),
    fontColor: hexColor(vertex.fontColor ?? "#102a43"),
    strokeColor: vertex.stroke ? hexColor(vertex.stroke) : "none",
    strokeWidth: vertex.stroke ? (vertex.strokeWidth ?? 2) : null,
    dashed: vertex.dashed ? 1 : null,
    opacity: vertex.opacity !== undefined && vertex.opacity < 1 ? Math.round(vertex.opacity * 100) : null,
    verticalAlign: "middle",
    ...outside,
  });
}

function edgeStyle(edge) {
  return styleOf({
    edgeStyle: "none",
    html: 0,
    rounded: 0,
    endArrow: edge.directed ? "classic" : "none",
    strokeColor: hexColor(edge.stroke ?? "#9aa5b1"),
    strokeWidth: edge.strokeWidth ?? null,
    dashed: edge.dashed ? 1 : null,
    fontColor: "#52606d",
    labelBackgroundColor: "#ffffff",
  });
}

// `vertices`: {key, label, x, y (top left), width, height, fill, fontColor?, stroke?, strokeWidth?,
// dashed?, opacity?, labelLeft?}; `edges`: {source, target (vertex keys), label?, directed?, stroke?,
// strokeWidth?, dashed?}. The drawing is moved so that its top left lies at a margin from the origin
// (the labels left of bars included); an edge whose end is not a vertex is left out.
export function drawioXml({ name, vertices, edges = [] }) {
  const margin = 20;
  const left = (vertex) => vertex.x - (vertex.labelLeft ? (vertex.labelWidth ?? 0) : 0);
  const minX = vertices.length ? Math.min(...vertices.map(left)) : 0;
  const minY = vertices.length ? Math.min(...vertices.map((vertex) => vertex.y)) : 0;
  const ids = new Map();
  const cells = ['<mxCell id="0"/>', '<mxCell id="1" parent="0"/>'];
  vertices.forEach((vertex, index) => {
    const id = `v${index + 1}`;
    if (!ids.has(vertex.key)) ids.set(vertex.key, id);
    const geometry =
      `<mxGeometry x="${round(vertex.x - minX + margin)}" y="${round(vertex.y - minY + margin)}" ` +
      `width="${round(vertex.width)}" height="${round(vertex.height)}" as="geometry"/>`;
    cells.push(
      `<mxCell id="${id}" value="${escapeXml(vertex.label)}" style="${vertexStyle(vertex)}" ` +
        `vertex="1" parent="1">${geometry}</mxCell>`,
    );
  });
  let edgeCount = 0;
  for (const edge of edges) {
    const source = ids.get(edge.source);
    const target = ids.get(edge.target);
    if (!source || !target) continue;
    edgeCount += 1;
    cells.push(
      `<mxCell id="e${edgeCount}" value="${escapeXml(edge.label)}" style="${edgeStyle(edge)}" ` +
        `edge="1" parent="1" source="${source}" target="${target}">` +
        '<mxGeometry relative="1" as="geometry"/></mxCell>',
    );
  }
  const title = escapeXml(name);
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<mxfile host="blockrepo" type="device"><diagram id="blockrepo-1" name="${title}">` +
    '<mxGraphModel grid="1" gridSize="10" guides="1" tooltips="1" connect="1" arrows="1" fold="1" ' +
    'page="0" pageScale="1" math="0" shadow="0">' +
    `<root>${cells.join("")}</root></mxGraphModel></diagram></mxfile>\n`
  );
}
