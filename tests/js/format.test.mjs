import assert from "node:assert/strict";
import { test } from "node:test";

import {
  cellText,
  changedProperties,
  comparable,
  fieldHelp,
  filterLabel,
  formatNumber,
  formatTime,
  formatValue,
  formatValues,
  groupTitle,
  hopSummary,
  isoDay,
  loginFailure,
  normalizeAsOf,
  pageStatus,
  parseDay,
  pointerProperty,
  truncate,
} from "../../src/blockrepo/web/static/js/format.js";

const UTC_GB = { locale: "en-GB", timeZone: "UTC" };

test("formatTime: empty for none, the text if it is no time, else medium date and short time", () => {
  assert.equal(formatTime(""), "");
  assert.equal(formatTime(null), "");
  assert.equal(formatTime(undefined), "");
  assert.equal(formatTime("yesterday", UTC_GB), "yesterday");
  assert.equal(formatTime("2026-01-31T12:05:00Z", UTC_GB), "31 Jan 2026, 12:05");
  assert.equal(
    formatTime("2026-01-31T23:30:00Z", { locale: "en-GB", timeZone: "Europe/Berlin" }),
    "1 Feb 2026, 00:30",
  );
  assert.equal(formatTime("2026-01-31T12:05:00+02:00", UTC_GB), "31 Jan 2026, 10:05");
  assert.equal(formatTime("1970-01-01T00:00:00Z", { locale: "de-DE", timeZone: "UTC" }), "01.01.1970, 00:00");
});

test("formatNumber and formatValue: numbers by locale, with the property's unit", () => {
  assert.equal(formatNumber(1234567.5, "en-US"), "1,234,567.5");
  assert.equal(formatNumber(1234567.5, "de-DE"), "1.234.567,5");
  assert.equal(formatValue({ unit: "EUR" }, 850000, "en-US"), "850,000 EUR");
  assert.equal(formatValue({}, 0, "en-US"), "0");
  assert.equal(formatValue(null, -1.5, "en-US"), "-1.5");
});

test("formatValue: nothing for no value, yes/no, intervals, references, text", () => {
  assert.equal(formatValue(null, null), "");
  assert.equal(formatValue(null, undefined), "");
  assert.equal(formatValue(null, ""), "");
  assert.equal(formatValue(null, true), "yes");
  assert.equal(formatValue(null, false), "no");
  const interval = { valueType: "dateInterval" };
  assert.equal(formatValue(interval, { start: "2024-01-01", end: "2025-12-31" }), "2024-01-01 – 2025-12-31");
  assert.equal(formatValue(interval, { start: "2024-01-01", end: null }), "2024-01-01 – …");
  assert.equal(formatValue(interval, {}), "… – …");
  assert.equal(formatValue(null, { id: 7, name: "ERP" }), "ERP");
  assert.equal(formatValue(null, { id: 7 }), "#7");
  assert.equal(formatValue(null, { id: 7, name: "" }), "");
  assert.equal(formatValue({ valueType: "text" }, "a <b>"), "a <b>");
});

test("formatValues: a dash for none, else joined", () => {
  assert.equal(formatValues(null, []), "—");
  assert.equal(formatValues(null, undefined), "—");
  assert.equal(formatValues(null, [true, { id: 1, name: "A" }, "x"]), "yes, A, x");
});

test("cellText: list cells", () => {
  assert.equal(cellText({ valueType: "text" }, undefined), "");
  assert.equal(cellText({ valueType: "text" }, []), "");
  assert.equal(cellText({ valueType: "text" }, ["a", "b"]), "a, b");
  assert.equal(cellText({ valueType: "number" }, [1000, 2.5], "en-US"), "1,000, 2.5");
});

test("normalizeAsOf: empty and revision numbers stay, times become ISO instants, the rest stays", () => {
  assert.equal(normalizeAsOf(""), "");
  assert.equal(normalizeAsOf("   "), "");
  assert.equal(normalizeAsOf(" 42 "), "42");
  assert.equal(normalizeAsOf("0"), "0");
  assert.equal(normalizeAsOf("2026-01-31T12:00:00Z"), "2026-01-31T12:00:00.000Z");
  assert.equal(normalizeAsOf("2026-01-31T12:00:00+01:00"), "2026-01-31T11:00:00.000Z");
  // A date alone is UTC midnight (ECMAScript's rule for date-only forms).
  assert.equal(normalizeAsOf("2026-01-31"), "2026-01-31T00:00:00.000Z");
  // A local time is read in the browser's time zone: whatever it is, the instant is that wall-clock time.
  assert.equal(normalizeAsOf("2026-01-31T12:00"), new Date(2026, 0, 31, 12, 0).toISOString());
  assert.equal(normalizeAsOf("last tuesday"), "last tuesday");
  assert.equal(normalizeAsOf("-5"), new Date("-5").toISOString());
  assert.equal(normalizeAsOf("2026-02-30T25:00"), "2026-02-30T25:00");
});

test("parseDay and isoDay: a date as UTC midnight and back", () => {
  assert.equal(parseDay(""), null);
  assert.equal(parseDay(null), null);
  assert.equal(parseDay(undefined), null);
  assert.equal(parseDay("1970-01-02"), 86400000);
  assert.equal(parseDay("2024-02-29"), Date.UTC(2024, 1, 29));
  assert.ok(Number.isNaN(parseDay("2024-13-01")));
  assert.equal(isoDay(parseDay("2024-02-29")), "2024-02-29");
  assert.equal(isoDay(0), "1970-01-01");
});

test("truncate: at most the length, with an ellipsis", () => {
  assert.equal(truncate("", 30), "");
  assert.equal(truncate("x".repeat(30), 30), "x".repeat(30));
  assert.equal(truncate("x".repeat(31), 30), `${"x".repeat(29)}…`);
});

test("comparable: references by id, order kept, nothing equals empty", () => {
  assert.equal(comparable(undefined), comparable([]));
  assert.equal(comparable(null), "[]");
  assert.equal(comparable([{ id: 1, name: "A" }]), comparable([{ id: 1, name: "renamed", attributes: {} }]));
  assert.notEqual(comparable([1, 2]), comparable([2, 1]));
  assert.notEqual(comparable(["1"]), comparable([1]));
  assert.equal(comparable([{ start: "2024-01-01", end: null }]), '[{"start":"2024-01-01","end":null}]');
  assert.equal(comparable([null, 0, false]), "[null,0,false]");
});

test("changedProperties: what they changed, bookkeeping aside", () => {
  const original = { name: ["A"], revision: [1], owner: [{ id: 3, name: "X" }], tags: ["a"] };
  const theirs = {
    name: ["A"],
    revision: [2],
    lastModificationUser: ["bob"],
    owner: [{ id: 4 }],
    tags: [],
    new: [1],
  };
  assert.deepEqual(changedProperties(theirs, original), ["owner", "tags", "new"]);
  assert.deepEqual(changedProperties({ revision: [9] }, {}), []);
});

test("pointerProperty: the first segment of a JSON pointer, unescaped", () => {
  assert.equal(pointerProperty("/name/0"), "name");
  assert.equal(pointerProperty("/Annual costs"), "Annual costs");
  assert.equal(pointerProperty("/a~1b~0c/1"), "a/b~c");
  assert.equal(pointerProperty("/"), "");
  assert.equal(pointerProperty(""), null);
  assert.equal(pointerProperty(null), null);
  assert.equal(pointerProperty(undefined), null);
});

test("groupTitle and fieldHelp", () => {
  assert.equal(groupTitle({ builtin: true, group: "Costs" }), "Basic data");
  assert.equal(groupTitle({ group: "Costs" }), "Costs");
  assert.equal(groupTitle({ group: null }), "[Default Attribute Group]");
  assert.equal(groupTitle({ group: "" }), "[Default Attribute Group]");
  assert.equal(fieldHelp({}), "");
  assert.equal(fieldHelp({ min: null, max: undefined, unit: "" }), "");
  assert.equal(
    fieldHelp({ description: "Yearly", min: 0, max: 10, unit: "EUR" }),
    "Yearly · min 0 · max 10 · EUR",
  );
  assert.equal(fieldHelp({ max: -1 }), "max -1");
});

test("pageStatus: the pager line", () => {
  assert.equal(pageStatus({ page: 0, pageSize: 50, count: 0, total: 0, ms: 3 }), "No elements match.");
  assert.equal(
    pageStatus({ page: 0, pageSize: 50, count: 50, total: 1234, ms: 12.4 }, "en-US"),
    "1–50 of 1,234 · 12 ms",
  );
  assert.equal(
    pageStatus({ page: 2, pageSize: 50, count: 3, total: 103, ms: 0.5 }, "en-US"),
    "101–103 of 103 · 1 ms",
  );
  assert.equal(
    pageStatus({ page: 0, pageSize: 50, count: 1, total: undefined, ms: 1 }, "en-US"),
    "1–1 of 0 · 1 ms",
  );
});

test("filterLabel, hopSummary, loginFailure", () => {
  assert.equal(filterLabel({ p: "status", o: "=", v: "CURRENT" }), "status = CURRENT");
  assert.equal(filterLabel({ p: "Annual costs", o: "empty", v: "" }), "Annual costs is empty");
  assert.equal(hopSummary(1, 0, 0), "1 elements within 0 hops, 0 relations");
  assert.equal(hopSummary(5, 1, 4), "5 elements within 1 hop, 4 relations");
  assert.equal(loginFailure(401, "x"), "Wrong user name or password.");
  assert.equal(loginFailure(429, "x"), "Too many failed attempts; try again later.");
  assert.equal(loginFailure(500, "Internal error"), "Internal error");
});
