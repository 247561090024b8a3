// The modules import each other without a cycle, and import only names their siblings export.

import assert from "node:assert/strict";
import { test } from "node:test";

import { findCycles, readModules } from "./modules.mjs";

const modules = readModules();

test("the modules are found", () => {
  assert.ok("app.js" in modules && "format.js" in modules, Object.keys(modules).join(", "));
  assert.ok(modules["app.js"].imports.some(({ from }) => from === "api.js"));
});

test("no import cycle among the modules", () => {
  const cycles = findCycles(modules);
  assert.deepEqual(
    cycles.map((cycle) => cycle.join(" → ")),
    [],
  );
});

test("the cycle check finds a cycle", () => {
  const fake = {
    "a.js": { imports: [{ from: "b.js", names: [] }], exports: new Set() },
    "b.js": { imports: [{ from: "c.js", names: [] }], exports: new Set() },
    "c.js": { imports: [{ from: "a.js", names: [] }], exports: new Set() },
    "d.js": { imports: [{ from: "a.js", names: [] }], exports: new Set() },
  };
  assert.deepEqual(findCycles(fake), [["a.js", "b.js", "c.js", "a.js"]]);
  assert.deepEqual(findCycles({ "a.js": { imports: [{ from: "a.js", names: [] }], exports: new Set() } }), [
    ["a.js", "a.js"],
  ]);
});

test("every imported name is exported by its module", () => {
  const missing = [];
  for (const [file, { imports }] of Object.entries(modules)) {
    for (const { from, names } of imports) {
      if (!(from in modules)) continue;
      for (const name of names)
        if (!modules[from].exports.has(name)) missing.push(`${file}: ${name} from ${from}`);
    }
  }
  assert.deepEqual(missing, []);
});

test("pure modules import no module that touches the DOM or the network", () => {
  const pure = new Set([
    "format.js",
    "iteraql.js",
    "paths.js",
    "diagram-data.js",
    "palette.js",
    "unsaved.js",
  ]);
  for (const file of pure) {
    for (const { from } of modules[file].imports) assert.ok(pure.has(from), `${file} imports ${from}`);
  }
});
