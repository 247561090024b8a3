import assert from "node:assert/strict";
import { test } from "node:test";

import { drawioXml, escapeXml, hexColor } from "../../src/blockrepo/web/static/js/drawio.js";

const box = (key, label, x = 0, y = 0) => ({ key, label, x, y, width: 80, height: 28, fill: "#1f4e79" });

// The attributes of every mxCell, in order (the XML is flat enough to read with a pattern).
function cells(xml) {
  return [...xml.matchAll(/<mxCell ([^>]*?)\/?>/g)].map(([, text]) =>
    Object.fromEntries([...text.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value])),
  );
}

test("escapeXml: markup characters, quotes and newlines", () => {
  assert.equal(escapeXml(`<b>&"'`), "&lt;b&gt;&amp;&quot;&apos;");
  assert.equal(escapeXml("two\nlines"), "two&#10;lines");
  assert.equal(escapeXml(undefined), "");
  assert.equal(escapeXml(42), "42");
});

test("hexColor: hex kept, rgb() converted, anything else none", () => {
  assert.equal(hexColor("#1F4E79"), "#1f4e79");
  assert.equal(hexColor("#fff"), "#fff");
  assert.equal(hexColor("rgb(31,78,121)"), "#1f4e79");
  assert.equal(hexColor("rgba(255, 255, 255, 0.5)"), "#ffffff");
  assert.equal(hexColor("red;shape=ellipse"), "none");
  assert.equal(hexColor(null), "none");
});

test("the file is the uncompressed mxfile frame with the two root cells", () => {
  const xml = drawioXml({ name: "Flows", vertices: [], edges: [] });
  assert.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<mxfile /);
  assert.match(xml, /<diagram id="[^"]+" name="Flows"><mxGraphModel [^>]*><root>/);
  assert.ok(xml.includes('<mxCell id="0"/><mxCell id="1" parent="0"/>'));
  assert.ok(xml.trimEnd().endsWith("</root></mxGraphModel></diagram></mxfile>"));
});

test("labels are escaped in vertices, edges and the diagram name", () => {
  const label = `R&D <"core"> 'x'`;
  const xml = drawioXml({
    name: label,
    vertices: [box("a", label), box("b", "B")],
    edges: [{ source: "a", target: "b", label, directed: true }],
  });
  assert.ok(!xml.includes(label));
  const escaped = "R&amp;D &lt;&quot;core&quot;&gt; &apos;x&apos;";
  assert.equal(xml.split(escaped).length - 1, 3);
});

test("vertices and edges: ids unique, every edge between two vertices, unknown ends left out", () => {
  const xml = drawioXml({
    name: "g",
    vertices: [box("IS/1", "A", 10, 10), box("IS/2", "B", 200, 50), box("IS/3", "C", -40, 300)],
    edges: [
      { source: "IS/1", target: "IS/2", label: "orders", directed: true },
      { source: "IS/2", target: "IS/3", label: "", directed: false },
      { source: "IS/1", target: "IS/9", label: "dangling" },
    ],
  });
  const all = cells(xml);
  const ids = all.map((cell) => cell.id);
  assert.equal(new Set(ids).size, ids.length);
  const vertices = all.filter((cell) => cell.vertex === "1");
  const edges = all.filter((cell) => cell.edge === "1");
  assert.equal(vertices.length, 3);
  assert.equal(edges.length, 2);
  const vertexIds = new Set(vertices.map((cell) => cell.id));
  for (const edge of edges) {
    assert.ok(vertexIds.has(edge.source) && vertexIds.has(edge.target), JSON.stringify(edge));
    assert.equal(edge.parent, "1");
  }
  assert.equal(edges[0].value, "orders");
  assert.match(edges[0].style, /endArrow=classic;/);
  assert.match(edges[1].style, /endArrow=none;/);
  assert.ok(!xml.includes("dangling"));
  assert.deepEqual(
    vertices.map((cell) => cell.value),
    ["A", "B", "C"],
  );
  assert.match(vertices[0].style, /fillColor=#1f4e79;/);
});

test("positions keep the layout, moved to a margin from the origin", () => {
  const xml = drawioXml({ name: "g", vertices: [box("a", "A", -50, 100), box("b", "B", 150, 130.25)] });
  const geometries = [
    ...xml.matchAll(/<mxGeometry x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)"/g),
  ];
  assert.deepEqual(
    geometries.map((g) => g.slice(1).map(Number)),
    [
      [20, 20, 80, 28],
      [220, 50.3, 80, 28],
    ],
  );
});

test("a bar's label is left of it, inside the margin", () => {
  const bar = {
    ...box("bar-0", "ERP", 220, 34),
    labelLeft: true,
    labelWidth: 200,
    stroke: "#c53030",
    dashed: true,
    opacity: 0.45,
  };
  const [vertex] = cells(drawioXml({ name: "Roadmap", vertices: [bar] })).filter((cell) => cell.vertex);
  assert.match(vertex.style, /labelPosition=left;/);
  assert.match(vertex.style, /strokeColor=#c53030;/);
  assert.match(vertex.style, /dashed=1;/);
  assert.match(vertex.style, /opacity=45;/);
  assert.match(drawioXml({ name: "Roadmap", vertices: [bar] }), /<mxGeometry x="220" y="20"/);
});
