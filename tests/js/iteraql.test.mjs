import assert from "node:assert/strict";
import { test } from "node:test";

import {
  kindOf,
  listFilter,
  nameContains,
  predicateOf,
  propertyRef,
  quoted,
  searchFilter,
  sortParam,
} from "../../src/blockrepo/web/static/js/iteraql.js";

test("quoted: backslashes and quotes escaped, anything made text", () => {
  assert.equal(quoted("ERP"), '"ERP"');
  assert.equal(quoted(""), '""');
  assert.equal(quoted('say "hi"'), '"say \\"hi\\""');
  assert.equal(quoted("a\\b"), '"a\\\\b"');
  assert.equal(quoted('\\"'), '"\\\\\\""');
  assert.equal(quoted(42), '"42"');
  assert.equal(quoted(null), '"null"');
});

test("propertyRef: bare when it is an identifier, quoted otherwise", () => {
  assert.equal(propertyRef("name"), "@name");
  assert.equal(propertyRef("_x1"), "@_x1");
  assert.equal(propertyRef("Annual costs"), '@"Annual costs"');
  assert.equal(propertyRef("1st"), '@"1st"');
  assert.equal(propertyRef("Größe"), '@"Größe"');
});

test("predicateOf: empty, contains, bare numbers, dates and booleans, quoted text", () => {
  assert.equal(predicateOf({ p: "status", o: "empty", v: "" }), "@status = null");
  assert.equal(predicateOf({ p: "name", o: "contains", v: 'E"R' }), '@name.containsIgnoreCase("E\\"R")');
  assert.equal(
    predicateOf({ p: "Annual costs", o: ">=", v: "1000", k: "number" }),
    '@"Annual costs" >= 1000',
  );
  assert.equal(predicateOf({ p: "start", o: "<", v: "2026-01-01", k: "date" }), "@start < 2026-01-01");
  assert.equal(predicateOf({ p: "active", o: "=", v: "true", k: "boolean" }), "@active = true");
  assert.equal(predicateOf({ p: "status", o: "!=", v: "CURRENT", k: "enum" }), '@status != "CURRENT"');
  assert.equal(predicateOf({ p: "status", o: "=", v: "CURRENT" }), '@status = "CURRENT"');
});

test("listFilter: nothing, one part bare, several parenthesised with the name search first", () => {
  assert.equal(listFilter("", []), "");
  assert.equal(listFilter("erp", []), '@name.containsIgnoreCase("erp")');
  assert.equal(listFilter("", [{ p: "status", o: "empty" }]), "@status = null");
  assert.equal(
    listFilter("erp", [
      { p: "status", o: "=", v: "CURRENT", k: "enum" },
      { p: "x", o: ">", v: "2", k: "number" },
    ]),
    '(@name.containsIgnoreCase("erp")) & (@status = "CURRENT") & (@x > 2)',
  );
});

test("nameContains and searchFilter", () => {
  assert.equal(nameContains("a b"), '@name.containsIgnoreCase("a b")');
  assert.equal(
    searchFilter('x"'),
    '@name.containsIgnoreCase("x\\"") | @description.containsIgnoreCase("x\\"")',
  );
});

test("kindOf: rich text and responsibilities filter as text", () => {
  assert.equal(kindOf({ valueType: "richtext" }), "text");
  assert.equal(kindOf({ valueType: "responsibility" }), "text");
  assert.equal(kindOf({ valueType: "number" }), "number");
  assert.equal(kindOf({ valueType: "enum" }), "enum");
});

test("sortParam: id breaks ties unless the sort is by id", () => {
  assert.equal(sortParam("name"), "name,id");
  assert.equal(sortParam("-lastModificationTime"), "-lastModificationTime,id");
  assert.equal(sortParam("id"), "id");
  assert.equal(sortParam("-id"), "-id");
});
