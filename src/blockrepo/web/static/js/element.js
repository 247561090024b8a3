// One element: every property the user may read, relations as links, hierarchy, revision and last change,
// "as of" any revision or time; and its history, field by field.

import { ApiError, get } from "./api.js";
import { asOfBanner, crumbs, emptyValue, pageHead, pill } from "./components.js";
import { openDeleteDialog } from "./dialog.js";
import { h } from "./dom.js";
import { formatTime, formatValue, formatValues, groupTitle, normalizeAsOf } from "./format.js";
import { elementPath, elementRoute, historyPath, href, listRoute, scenarioRoute } from "./paths.js";
import { can, typeDef, typeLabel } from "./session.js";
import { scenarioKey } from "./workspace.js";

const SYSTEM_KEYS = new Set([
  "id",
  "type",
  "revision",
  "lastModificationTime",
  "lastModificationUser",
  "name",
  "description",
  "parent",
  "children",
]);

export function elementLink(type, reference) {
  return h(
    "a",
    { href: href(elementRoute(type, reference.id)), class: "ref" },
    reference.name ?? `#${reference.id}`,
  );
}

function valueNodes(property, values) {
  if (!values.length) return emptyValue();
  if (property?.valueType === "enum") return values.map((value) => pill(property, value));
  return values.map((value) => h("span", { class: "value" }, formatValue(property, value)));
}

// The readable properties the element has, in panels by attribute group.
function propertySections(properties, element) {
  const groups = new Map();
  for (const property of properties) {
    if (SYSTEM_KEYS.has(property.name) || !(property.name in element)) continue;
    const group = groupTitle(property);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(property);
  }
  const term = (property) => [
    h("dt", {}, property.name, property.unit ? h("span", { class: "muted" }, ` (${property.unit})`) : null),
    h("dd", { "data-property": property.name }, valueNodes(property, element[property.name] || [])),
  ];
  return [...groups].map(([group, members]) =>
    h(
      "section",
      { class: "panel", "data-group": group },
      h("h2", {}, group),
      h("dl", { class: "props" }, members.map(term)),
    ),
  );
}

function relationRow(end, refs) {
  return h(
    "div",
    { class: "relation", "data-end": end.name },
    h(
      "h3",
      {},
      end.name,
      h("span", { class: "muted" }, ` → ${typeLabel(end.type)}`),
      h("span", { class: "badge" }, String(refs.length)),
    ),
    refs.length
      ? h(
          "ul",
          { class: "ref-list" },
          refs.map((ref) => h("li", {}, elementLink(end.type, ref))),
        )
      : emptyValue("p"),
  );
}

// Every relation end the element has; the empty ones folded away below the others.
function relationSection(ends, element) {
  const shown = ends.filter((end) => end.name in element);
  const filled = shown.filter((end) => element[end.name].length);
  const empty = shown.filter((end) => !element[end.name].length);
  const rows = (list) => list.map((end) => relationRow(end, element[end.name]));
  return h(
    "section",
    { class: "panel" },
    h("h2", {}, "Relations"),
    h(
      "div",
      { class: "relations" },
      rows(filled),
      empty.length ? h("details", {}, h("summary", {}, "Empty relations"), rows(empty)) : null,
    ),
  );
}

function hierarchySection(type, element) {
  const children = element.children?.length
    ? h(
        "ul",
        { class: "ref-list" },
        element.children.map((child) => h("li", {}, elementLink(type, child))),
      )
    : emptyValue();
  const parent = element.parent?.length ? elementLink(type, element.parent[0]) : emptyValue();
  return h(
    "section",
    { class: "panel", id: "hierarchy" },
    h("h2", {}, "Hierarchy"),
    h(
      "dl",
      { class: "props" },
      h("dt", {}, "Parent"),
      h("dd", { "data-property": "parent" }, parent),
      h("dt", {}, "Children"),
      h("dd", { "data-property": "children" }, children),
    ),
  );
}

function asOfForm(type, id, asOf, navigate) {
  const input = h("input", { id: "element-asof", value: asOf, placeholder: "revision or 2026-01-31T12:00" });
  const onsubmit = (event) => {
    event.preventDefault();
    navigate(elementRoute(type, id), { asOf: normalizeAsOf(input.value) });
  };
  return h(
    "form",
    { class: "inline-form", onsubmit },
    h("label", { for: "element-asof" }, "As of"),
    input,
    h("button", { type: "submit", class: "button" }, "Show"),
  );
}

// Edit and delete only for today's state, and only with the right; history and neighbourhood always.
function elementActions(type, id, element, editable, navigate) {
  const route = elementRoute(type, id);
  // Deleted in a scenario, it is still in main's list: the scenario's review shows the deletion.
  const after = () => navigate(scenarioKey() ? scenarioRoute(scenarioKey()) : listRoute(type));
  const remove = () => openDeleteDialog(type, element, after);
  return h(
    "div",
    { class: "actions" },
    editable && can(type, "update")
      ? h("a", { class: "button primary", id: "edit-element", href: href(`${route}/edit`) }, "Edit")
      : null,
    h(
      "a",
      { class: "button", href: `#/history/${encodeURIComponent(type)}/${id}`, id: "show-history" },
      "History",
    ),
    h(
      "a",
      {
        class: "button",
        href: `#/diagram/neighbourhood/${encodeURIComponent(type)}/${id}`,
        id: "show-neighbourhood",
      },
      "Neighbourhood",
    ),
    editable && can(type, "delete")
      ? h(
          "button",
          { type: "button", class: "button danger", id: "delete-element", onclick: remove },
          "Delete",
        )
      : null,
  );
}

function elementTitle(type, element, name) {
  const user = element.lastModificationUser?.[0] ?? "?";
  const changed = `changed ${formatTime(element.lastModificationTime?.[0])} by ${user}`;
  return h(
    "div",
    {},
    crumbs(type, typeLabel(type)),
    h("h1", {}, name),
    h(
      "p",
      { class: "meta" },
      h("span", { class: "badge type-badge" }, typeLabel(type)),
      h("span", { id: "element-revision" }, `Revision ${element.revision?.[0] ?? "?"}`),
      h("span", { id: "element-last-change" }, changed),
    ),
  );
}

export async function renderElement({ params, query, navigate }) {
  const [type, id] = params;
  const asOf = query.get("asOf") || "";
  const def = typeDef(type);
  const { data: element } = await get(elementPath(type, id), { asOf });
  const name = element.name?.[0] ?? `#${id}`;
  const description = element.description?.[0];
  return h(
    "article",
    {
      class: "element-page",
      "data-type": type,
      "data-id": id,
      "data-revision": element.revision?.[0] ?? 0,
      "data-as-of": asOf,
    },
    pageHead(elementTitle(type, element, name), elementActions(type, id, element, !asOf, navigate)),
    asOf ? asOfBanner(asOf, elementRoute(type, id), { id: "asof-banner" }) : null,
    description ? h("p", { class: "lead", "data-property": "description" }, description) : null,
    // A scenario has no past of its own to read "as of" (the API refuses asOf there).
    scenarioKey() ? null : asOfForm(type, id, asOf, navigate),
    h(
      "div",
      { class: "columns" },
      h(
        "div",
        { class: "column" },
        propertySections(def?.properties || [], element),
        def?.hierarchical ? hierarchySection(type, element) : null,
      ),
      h("div", { class: "column" }, relationSection(def?.relationEnds || [], element)),
    ),
  );
}

function changeCell(change, property) {
  if (change.added || change.removed) {
    return h(
      "span",
      {},
      (change.removed || []).map((ref) => h("del", { class: "removed" }, formatValue(property, ref))),
      (change.added || []).map((ref) => h("ins", { class: "added" }, formatValue(property, ref))),
    );
  }
  return h(
    "span",
    {},
    h("span", { class: "old" }, formatValues(property, change.old)),
    h("span", { class: "arrow", "aria-label": "changed to" }, " → "),
    h("span", { class: "new" }, formatValues(property, change.new)),
  );
}

const HISTORY_PAGE = 200;

// One changeset of the history: operation, revision, who and when, and each property's change.
function changesetItem(type, id, changeset, byName) {
  const planned = changeset.scenarioChange !== undefined && changeset.scenarioChange !== null;
  // In a scenario the element is read there, where "as of" has no meaning (the API refuses it).
  const asOfLink =
    changeset.operation !== "deleted" && !scenarioKey()
      ? h(
          "a",
          { href: href(elementRoute(type, id), { asOf: changeset.revision }), class: "asof-link" },
          "View as of this revision",
        )
      : null;
  const changeRow = (change) =>
    h(
      "tr",
      { "data-property": change.property },
      h("th", { scope: "row" }, change.property),
      h("td", {}, changeCell(change, byName.get(change.property))),
    );
  return h(
    "li",
    {
      class: planned ? "changeset planned" : "changeset",
      "data-revision": changeset.revision,
      "data-scenario-change": planned ? changeset.scenarioChange : null,
    },
    h(
      "div",
      { class: "changeset-head" },
      h("span", { class: `op op-${changeset.operation}` }, changeset.operation),
      // A change made in the scenario the tab works in is no revision of main (yet): it is numbered
      // in the scenario, and `revision` is main's when it was made.
      planned
        ? h("strong", {}, `Planned change ${changeset.scenarioChange}`)
        : h("strong", {}, `Revision ${changeset.revision}`),
      h("span", { class: "muted" }, `${formatTime(changeset.timestamp)} by ${changeset.user}`),
      changeset.viaScenario
        ? h(
            "a",
            { href: href(scenarioRoute(changeset.viaScenario)), class: "via-scenario" },
            planned
              ? `in scenario ${changeset.viaScenario}`
              : `merged from scenario ${changeset.viaScenario}`,
          )
        : null,
      asOfLink,
    ),
    h(
      "table",
      { class: "changes" },
      h(
        "thead",
        {},
        h("tr", {}, h("th", { scope: "col" }, "Property"), h("th", { scope: "col" }, "Old → new")),
      ),
      h("tbody", {}, (changeset.changes || []).map(changeRow)),
    ),
  );
}

// One page holds HISTORY_PAGE changesets; older ones come page by page through the API's cursor.
function olderButton(path, firstCursor, list, row) {
  let cursor = firstCursor;
  const older = h("button", { type: "button", class: "button", id: "history-older" }, "Older changes");
  older.addEventListener("click", async () => {
    older.disabled = true;
    try {
      const { data } = await get(path, { limit: HISTORY_PAGE, cursor });
      const added = data.items.map(row);
      list.append(...added);
      cursor = data.nextCursor;
      // The button's class sets its display, which would override the hidden attribute.
      if (!cursor) older.remove();
      added[0]?.querySelector("strong")?.setAttribute("tabindex", "-1");
      added[0]?.querySelector("strong")?.focus();
    } finally {
      older.disabled = false;
    }
  });
  return older;
}

export async function renderHistory({ params }) {
  const [type, id] = params;
  const def = typeDef(type);
  const byName = new Map([...(def?.properties || []), ...(def?.relationEnds || [])].map((p) => [p.name, p]));
  const path = historyPath(type, id);
  const [{ data: history }, current] = await Promise.all([
    get(path, { limit: HISTORY_PAGE }),
    get(elementPath(type, id)).catch((error) =>
      error instanceof ApiError && error.status === 404 ? null : Promise.reject(error),
    ),
  ]);
  const name = current?.data.name?.[0] ?? history.items[0]?.name ?? `#${id}`;
  const row = (changeset) => changesetItem(type, id, changeset, byName);
  const rows = history.items.map(row);
  const list = h("ol", { class: "history", id: "history-list" }, rows);
  const more = history.nextCursor ? olderButton(path, history.nextCursor, list, row) : null;
  return h(
    "div",
    {},
    pageHead(
      h(
        "div",
        {},
        crumbs(type, typeLabel(type), [name, elementRoute(type, id)]),
        h("h1", {}, `History of ${name}`),
      ),
    ),
    scenarioKey()
      ? h("p", { class: "notice", id: "history-is-main" }, "This is main's history: scenarios keep none yet.")
      : null,
    rows.length ? h("div", {}, list, more) : h("p", { class: "empty" }, "No recorded changes."),
  );
}
