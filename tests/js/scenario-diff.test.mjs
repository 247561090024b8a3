import assert from "node:assert/strict";
import { test } from "node:test";

import {
  actionLabel,
  behindMainText,
  choiceLabel,
  conflictChoices,
  conflictField,
  conflictKindLabel,
  endChangeText,
  fieldRow,
  fieldStateLabel,
  mergeConflictText,
  mergeCountsText,
  openConflictCount,
  problemText,
  resolutionText,
  summaryLines,
  valueButtonLabel,
  valueLabel,
} from "../../src/blockrepo/web/static/js/scenario-diff.js";
import {
  currentScenario,
  enterScenario,
  leaveScenario,
  scenarioKey,
} from "../../src/blockrepo/web/static/js/workspace.js";

const COSTS = { name: "Annual costs", valueType: "number", unit: "EUR" };
const PERIOD = { name: "runtimePeriod", valueType: "dateInterval" };

test("fieldRow: a value field's three sides as text, with its state", () => {
  const row = fieldRow(
    { field: "Annual costs", base: [100], scenario: [80], main: [1200], state: "conflict" },
    COSTS,
  );
  assert.deepEqual(row, {
    field: "Annual costs",
    state: "conflict",
    stateLabel: "Conflict",
    resolution: null,
    relation: false,
    base: `${(100).toLocaleString()} EUR`,
    main: `${(1200).toLocaleString()} EUR`,
    scenario: `${(80).toLocaleString()} EUR`,
  });
});

test("fieldRow: empty sides are a dash, intervals and references readable, no main against the base", () => {
  const created = fieldRow({
    field: "name",
    base: [],
    scenario: ["CRM"],
    main: [],
    state: "unchanged-in-main",
  });
  assert.equal(created.base, "—");
  assert.equal(created.main, "—");
  assert.equal(created.scenario, "CRM");
  assert.equal(created.stateLabel, "Scenario only");
  const period = fieldRow(
    { field: "runtimePeriod", base: [{ start: "2020-01-01", end: null }], scenario: [], state: "changed" },
    PERIOD,
  );
  assert.equal(period.base, "2020-01-01 – …");
  assert.equal(period.scenario, "—");
  assert.equal(period.main, "");
  const parent = fieldRow({ field: "parent", base: [{ id: 4, name: "Sales" }], scenario: [{ id: 9 }] }, null);
  assert.equal(parent.base, "Sales");
  assert.equal(parent.scenario, "#9");
});

test("fieldRow: a relation end as its additions and removals, by name", () => {
  const row = fieldRow({
    field: "businessDomains",
    added: [{ id: 1, name: "Sales and service" }],
    removed: [{ id: 3, name: "Supply chain" }],
    state: "unchanged-in-main",
  });
  assert.equal(row.relation, true);
  assert.equal(row.scenario, "+ Sales and service, − Supply chain");
  assert.equal(row.main, "unchanged");
  assert.equal(row.base, "");
  const both = fieldRow({
    field: "businessDomains",
    added: [{ id: 1, name: "Sales" }],
    removed: [],
    mainAdded: [],
    mainRemoved: [{ id: 5 }],
    state: "changed",
  });
  assert.equal(both.main, "− #5");
  assert.equal(both.stateLabel, "Changed in both, merges");
  assert.equal(endChangeText([], []), "—");
  const gone = fieldRow({ field: "name", base: ["A"], scenario: ["B"], main: [], state: "changed" }, null, {
    wholeElement: true,
  });
  assert.equal(gone.stateLabel, "With the element");
});

test("a settled conflict reads as what was taken", () => {
  const settled = fieldRow(
    { field: "Criticality", base: ["high"], scenario: ["low"], main: ["medium"], state: "conflict" },
    null,
  );
  assert.equal(settled.stateLabel, "Conflict");
  assert.equal(fieldStateLabel("conflict", { take: "main" }), "Settled: main's value");
  assert.equal(fieldStateLabel("conflict", { take: "value", value: [90] }), "Settled: another value");
  assert.equal(resolutionText(null, "bothChanged"), "Open");
  assert.equal(resolutionText({ take: "scenario" }, "bothChanged"), "Settled: the scenario's value");
  assert.equal(resolutionText({ take: "value", value: [90] }, "bothChanged", COSTS), "Settled with 90 EUR");
  assert.equal(resolutionText({ take: "main" }, "deletedInMain"), "Settled: accept the deletion");
  assert.equal(resolutionText({ take: "scenario" }, "changedInMain"), "Settled: delete it anyway");
});

test("each conflict kind offers only the settlements the API accepts", () => {
  assert.deepEqual(conflictChoices("bothChanged"), ["scenario", "main", "value"]);
  assert.deepEqual(conflictChoices("changedInMain"), ["scenario", "main"]);
  assert.deepEqual(conflictChoices("deletedInMain"), ["main"]);
  assert.deepEqual(conflictChoices("relationToDeleted"), ["main"]);
  assert.deepEqual(conflictChoices("somethingNew"), ["main"]);
  assert.equal(choiceLabel("scenario", "bothChanged"), "Take the scenario's");
  assert.equal(choiceLabel("value", "bothChanged"), "Use another value");
  assert.equal(choiceLabel("main", "changedInMain"), "Keep main's element");
  assert.equal(choiceLabel("main", "relationToDeleted"), "Drop the relation");
  assert.equal(conflictKindLabel("deletedInMain"), "Deleted in main");
  assert.equal(conflictKindLabel("metamodel"), "metamodel");
});

test("a name taken in main, a cycle and what the metamodel lost: their labels and takes", () => {
  assert.equal(conflictKindLabel("nameTaken"), "Name taken in main");
  assert.equal(conflictKindLabel("cycle"), "Parent makes a cycle");
  assert.equal(conflictKindLabel("metamodelChanged"), "No longer in the metamodel");
  assert.deepEqual(conflictChoices("nameTaken", "updated"), ["main", "value"]);
  // An element created in the scenario has no name of main's to go back to.
  assert.deepEqual(conflictChoices("nameTaken", "created"), ["value"]);
  assert.deepEqual(conflictChoices("cycle", "updated"), ["main", "value"]);
  assert.deepEqual(conflictChoices("metamodelChanged", "updated"), ["main"]);
  assert.deepEqual(conflictChoices("bothChanged", "created"), ["scenario", "main", "value"]);
  assert.equal(choiceLabel("main", "nameTaken"), "Keep main's name");
  assert.equal(choiceLabel("main", "cycle"), "Keep main's parent");
  assert.equal(choiceLabel("main", "metamodelChanged"), "Drop what the metamodel no longer has");
  assert.equal(valueLabel("nameTaken"), "New name");
  assert.equal(valueLabel("cycle"), "Parent");
  assert.equal(valueLabel("bothChanged"), "Value");
  assert.equal(valueButtonLabel("nameTaken"), "Use this name");
  assert.equal(valueButtonLabel("cycle"), "Use this parent");
  assert.equal(valueButtonLabel("bothChanged"), "Use this value");
  assert.equal(resolutionText({ take: "main" }, "cycle"), "Settled: keep main's parent");
});

test("conflictField: a relation to a deleted element belongs to its end; others to their field", () => {
  assert.equal(conflictField({ kind: "relationToDeleted", field: "businessDomains/12" }), "businessDomains");
  assert.equal(conflictField({ kind: "bothChanged", field: "Annual costs" }), "Annual costs");
  assert.equal(conflictField({ kind: "deletedInMain", field: "*" }), "*");
  const item = {
    conflicts: [{ kind: "bothChanged" }, { kind: "deletedInMain", resolution: { take: "main" } }],
  };
  assert.equal(openConflictCount(item), 1);
  assert.equal(openConflictCount({}), 0);
});

test("summary, distance to main and merge counts as text", () => {
  assert.deepEqual(
    summaryLines({
      InformationSystem: { updated: 2, created: 1 },
      BusinessDomain: { deleted: 1 },
    }),
    [
      ["BusinessDomain", "1 deleted"],
      ["InformationSystem", "1 created, 2 changed"],
    ],
  );
  assert.deepEqual(summaryLines(undefined), []);
  assert.equal(actionLabel("updated"), "Changed");
  assert.equal(behindMainText(0), "up to date with main");
  assert.equal(behindMainText(1), "behind main by 1 revision");
  assert.equal(behindMainText(12), "behind main by 12 revisions");
  assert.equal(mergeCountsText({ create: 1, update: 2, delete: 0 }), "1 to create, 2 to update");
  assert.equal(mergeCountsText({ create: 0, update: 3, delete: 1 }, true), "3 updated, 1 deleted");
  assert.equal(mergeCountsText({ create: 0, update: 0, delete: 0 }), "nothing to write");
  assert.equal(
    mergeConflictText({
      element: { id: 128, type: "InformationSystem", name: "ERP" },
      kind: "bothChanged",
      field: "Criticality",
      message: "Criticality was changed in main and in the scenario",
    }),
    "ERP: Criticality was changed in main and in the scenario",
  );
  assert.equal(mergeConflictText({ kind: "deletedInMain" }), "Deleted in main");
});

test("workspace: the tab's scenario without sessionStorage lasts as long as the page", () => {
  assert.equal(currentScenario(), null);
  assert.equal(scenarioKey(), null);
  enterScenario({ key: "erp-1", name: "ERP", baseRevision: 3, behindMain: 0, state: "open", changes: 5 });
  assert.deepEqual(currentScenario(), {
    key: "erp-1",
    name: "ERP",
    baseRevision: 3,
    behindMain: 0,
    state: "open",
  });
  assert.equal(scenarioKey(), "erp-1");
  leaveScenario();
  assert.equal(scenarioKey(), null);
});

test("problemText: the detail, then problems that add to it, each once", () => {
  assert.equal(problemText("Bad request", undefined), "Bad request");
  assert.equal(
    problemText("revision 9 is after the newest revision 4", {
      errors: [{ message: "the newest revision is 4" }, { message: "the newest revision is 4" }],
    }),
    "revision 9 is after the newest revision 4: the newest revision is 4",
  );
  assert.equal(
    problemText("name must not be empty", { errors: [{ message: "must not be empty" }] }),
    "name must not be empty",
  );
});
