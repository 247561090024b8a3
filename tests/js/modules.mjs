// The import graph of the web interface's modules (src/blockrepo/web/static/js/*.js), read from their
// import statements: what each imports from which sibling, and what each exports.

import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const JS_DIR = fileURLToPath(new URL("../../src/blockrepo/web/static/js/", import.meta.url));

const IMPORT = /^import\s+(?:([\s\S]*?)\s+from\s+)?"([^"]+)";/gm;
const EXPORT = /^export\s+(?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)/gm;

// { "app.js": { imports: [{ from: "api.js", names: ["get", …] }], exports: Set } } for the sibling modules.
export function readModules(dir = JS_DIR) {
  const modules = {};
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".js"))) {
    const text = readFileSync(join(dir, file), "utf8");
    const imports = [...text.matchAll(IMPORT)].map(([, clause = "", from]) => ({
      from: from.startsWith("./") ? from.slice(2) : from,
      names: [...clause.matchAll(/\{([^}]*)\}/g)].flatMap(([, list]) =>
        list
          .split(",")
          .map((part) => part.trim().split(/\s+as\s+/)[0])
          .filter(Boolean),
      ),
    }));
    modules[file] = { imports, exports: new Set([...text.matchAll(EXPORT)].map(([, name]) => name)) };
  }
  return modules;
}

// Every import cycle among the modules, each as the list of files around it (first file repeated last).
export function findCycles(modules) {
  const cycles = [];
  const state = new Map(); // file -> "open" while on the path, "done" after
  const path = [];
  const visit = (file) => {
    state.set(file, "open");
    path.push(file);
    for (const { from } of modules[file].imports) {
      if (!(from in modules)) continue;
      if (state.get(from) === "open") cycles.push([...path.slice(path.indexOf(from)), from]);
      else if (!state.has(from)) visit(from);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of Object.keys(modules).sort()) if (!state.has(file)) visit(file);
  return cycles;
}
