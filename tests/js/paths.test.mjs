import assert from "node:assert/strict";
import { test } from "node:test";

import {
  elementPath,
  elementRoute,
  historyPath,
  href,
  listRoute,
  massdataPath,
  matchRoute,
  navActive,
  parseHash,
  safeNext,
  scenarioPath,
  scenarioRoute,
  scenarioScoped,
  withQuery,
} from "../../src/blockrepo/web/static/js/paths.js";

test("withQuery: empty values left out, the rest encoded", () => {
  assert.equal(withQuery("/api/x"), "/api/x");
  assert.equal(withQuery("/api/x", {}), "/api/x");
  assert.equal(withQuery("/api/x", { a: "", b: null, c: undefined }), "/api/x");
  assert.equal(withQuery("/api/x", { limit: 0, flag: false }), "/api/x?limit=0&flag=false");
  assert.equal(withQuery("/api/x", { q: "a b&c=d", n: 5 }), "/api/x?q=a+b%26c%3Dd&n=5");
  assert.equal(withQuery("/api/x", { filter: '@name = "Ä"' }), "/api/x?filter=%40name+%3D+%22%C3%84%22");
});

test("API paths encode the type and id", () => {
  assert.equal(elementPath("InformationSystem", 7), "/api/element/InformationSystem/7");
  assert.equal(elementPath("My Type/x", "1?"), "/api/element/My%20Type%2Fx/1%3F");
  assert.equal(massdataPath("A B"), "/api/massdata/A%20B");
  assert.equal(historyPath("A/B", 3), "/api/history/A%2FB/3");
});

test("routes and links", () => {
  assert.equal(elementRoute("A B", 4), "/element/A%20B/4");
  assert.equal(listRoute("Project"), "/list/Project");
  assert.equal(href("/"), "#/");
  assert.equal(href(elementRoute("Project", 4), { asOf: 12 }), "#/element/Project/4?asOf=12");
  assert.equal(href(listRoute("Project"), { q: "", f: "" }), "#/list/Project");
});

test("parseHash: route, query and the hash without '#'", () => {
  const empty = parseHash("");
  assert.equal(empty.path, "/");
  assert.equal(empty.hash, "/");
  assert.equal([...empty.query].length, 0);
  assert.equal(parseHash("#").path, "/");
  const list = parseHash("#/list/Project?q=a+b&sort=-name");
  assert.equal(list.path, "/list/Project");
  assert.equal(list.query.get("q"), "a b");
  assert.equal(list.query.get("sort"), "-name");
  assert.equal(list.hash, "/list/Project?q=a+b&sort=-name");
  assert.equal(parseHash("#/login?next=%23%2Fsearch%3Fq%3Dx").query.get("next"), "#/search?q=x");
});

test("matchRoute: the first match, parts decoded; null for none", () => {
  const routes = [
    [/^\/$/, "home"],
    [/^\/element\/([^/]+)\/(\d+)$/, "element"],
    [/^\/element\/([^/]+)\/(\d+)\/edit$/, "editor"],
  ];
  assert.deepEqual(matchRoute(routes, "/"), { params: [], target: "home" });
  assert.deepEqual(matchRoute(routes, "/element/A%20B/12"), { params: ["A B", "12"], target: "element" });
  assert.deepEqual(matchRoute(routes, "/element/X/12/edit"), { params: ["X", "12"], target: "editor" });
  assert.equal(matchRoute(routes, "/element/X/abc"), null);
  assert.equal(matchRoute(routes, "/nowhere"), null);
});

test("safeNext: only a route of this page, never the login page", () => {
  assert.equal(safeNext("#/list/Project?q=x"), "#/list/Project?q=x");
  assert.equal(safeNext("#/"), "#/");
  assert.equal(safeNext(""), "#/");
  assert.equal(safeNext(null), "#/");
  assert.equal(safeNext("#/login?next=#/x"), "#/");
  assert.equal(safeNext("https://evil.example/#/x"), "#/");
  assert.equal(safeNext("//evil.example"), "#/");
  assert.equal(safeNext("javascript:alert(1)"), "#/");
});

test("navActive: the landscape link for home and lists, the others for their route", () => {
  assert.ok(navActive("home", "/"));
  assert.ok(navActive("home", "/list/Project"));
  assert.ok(!navActive("home", "/diagram/flows"));
  assert.ok(navActive("flows", "/diagram/flows"));
  assert.ok(!navActive("roadmap", "/diagram/flows"));
  assert.ok(navActive("scenarios", "/scenarios"));
  assert.ok(navActive("scenarios", "/scenarios/erp-migration-3f9a1c"));
  assert.ok(!navActive("scenarios", "/element/Scenario/3"));
  assert.ok(!navActive("flows", "/scenarios/flows-1"));
});

test("scenario paths and routes encode the key", () => {
  assert.equal(scenarioPath("erp-1"), "/api/scenarios/erp-1");
  assert.equal(scenarioPath("erp-1", "diff"), "/api/scenarios/erp-1/diff");
  assert.equal(scenarioPath("a/b"), "/api/scenarios/a%2Fb");
  assert.equal(scenarioRoute("erp-1"), "/scenarios/erp-1");
});

test("scenarioScoped: elements, lists, queries and history work in the scenario, nothing else", () => {
  assert.ok(scenarioScoped("/api/element/InformationSystem/7"));
  assert.ok(scenarioScoped("/api/element/InformationSystem"));
  assert.ok(scenarioScoped("/api/massdata/InformationSystem"));
  assert.ok(scenarioScoped("/api/massdata/query"));
  assert.ok(scenarioScoped("/api/history/InformationSystem/7"));
  assert.ok(scenarioScoped("/api/history/InformationSystem"));
  for (const path of [
    "/api/massdata/export",
    "/api/massdata/import",
    "/api/history",
    "/api/history/diff",
    "/api/history/stream",
    "/api/scenarios",
    "/api/scenarios/erp-1/diff",
    "/api/elementary",
    "/api/metamodel",
  ]) {
    assert.ok(!scenarioScoped(path), path);
  }
});
