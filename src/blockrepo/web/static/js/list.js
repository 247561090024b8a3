// A list of one type: case-insensitive search, attribute filters, sort and cursor paging on the server
// (massdata API), optionally as of an earlier revision or time.

import { ApiError, get } from "./api.js";
import { asOfBanner, pageHead, pill } from "./components.js";
import { h } from "./dom.js";
import { cellText, filterLabel, formatTime, normalizeAsOf, pageStatus } from "./format.js";
import { kindOf, listFilter, sortParam } from "./iteraql.js";
import { elementRoute, href, listRoute, massdataPath } from "./paths.js";
import { can, hasFunction, readableProperties, typeDef } from "./session.js";

const PAGE_SIZE = 50;
const FILTER_KINDS = new Set(["text", "richtext", "responsibility", "enum", "number", "date", "boolean"]);
const COLUMN_KINDS = ["enum", "text", "date", "number", "responsibility"];
const OPERATORS = {
  text: [
    ["contains", "contains"],
    ["=", "is"],
    ["!=", "is not"],
    ["empty", "is empty"],
  ],
  enum: [
    ["=", "is"],
    ["!=", "is not"],
    ["empty", "is empty"],
  ],
  number: [
    ["=", "="],
    [">", ">"],
    ["<", "<"],
    [">=", "≥"],
    ["<=", "≤"],
    ["empty", "is empty"],
  ],
  date: [
    ["=", "on"],
    [">", "after"],
    ["<", "before"],
    ["empty", "is empty"],
  ],
  boolean: [["=", "is"]],
};
const SORTS = [
  ["name", "Name A–Z"],
  ["-name", "Name Z–A"],
  ["-lastModificationTime", "Recently changed"],
  ["lastModificationTime", "Least recently changed"],
  ["id", "Oldest first"],
  ["-id", "Newest first"],
];

// Name contains, sort and as of; submitting (or changing the sort) navigates with them.
function listToolbar(def, { search, sort, asOf }, go) {
  const searchInput = h("input", {
    id: "list-search",
    type: "search",
    value: search,
    placeholder: `Search ${def.displayName} by name…`,
  });
  const sortSelect = h(
    "select",
    { id: "list-sort" },
    SORTS.map(([value, label]) => h("option", { value, selected: value === sort }, label)),
  );
  const asOfInput = h("input", { id: "list-asof", value: asOf, placeholder: "revision or 2026-01-31T12:00" });
  const onsubmit = (event) => {
    event.preventDefault();
    go({ q: searchInput.value.trim(), sort: sortSelect.value, asOf: normalizeAsOf(asOfInput.value) });
  };
  const toolbar = h(
    "form",
    { class: "toolbar", role: "search", onsubmit },
    h("div", { class: "field grow" }, h("label", { for: "list-search" }, "Name contains"), searchInput),
    h("div", { class: "field" }, h("label", { for: "list-sort" }, "Sort"), sortSelect),
    h("div", { class: "field" }, h("label", { for: "list-asof" }, "As of"), asOfInput),
    h("button", { type: "submit", class: "button primary" }, "Apply"),
  );
  sortSelect.addEventListener("change", () => toolbar.requestSubmit());
  return toolbar;
}

function cellValue(property, values) {
  if (values?.length && property.valueType === "enum") return values.map((value) => pill(property, value));
  return cellText(property, values);
}

function fillTable(table, type, items, columns) {
  const row = (item) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: href(elementRoute(type, item.id[0])) }, item.name?.[0] ?? `#${item.id[0]}`)),
      columns.map((column) => h("td", {}, cellValue(column, item[column.name]))),
      h("td", { class: "muted clip" }, (item.description?.[0] || "").slice(0, 140)),
      h("td", { class: "muted nowrap" }, formatTime(item.lastModificationTime?.[0])),
    );
  table.replaceChildren(
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Name"),
        columns.map((column) => h("th", { scope: "col" }, column.name)),
        h("th", { scope: "col" }, "Description"),
        h("th", { scope: "col" }, "Last change"),
      ),
    ),
    h("tbody", {}, items.map(row)),
  );
}

// The table with its pager: each page read from the server with the cursor the page before returned.
function listPager(type, columns, { filter, sort, asOf }, isCurrent) {
  const state = { cursors: [null], page: 0 };
  const table = h("table", { class: "data-table", id: "element-table" });
  const status = h("p", { class: "muted", id: "list-status", "aria-live": "polite" });
  const previous = h(
    "button",
    { type: "button", class: "button", id: "page-previous", disabled: true },
    "← Previous",
  );
  const next = h("button", { type: "button", class: "button", id: "page-next", disabled: true }, "Next →");
  async function load() {
    const started = performance.now();
    const { data } = await get(massdataPath(type), {
      filter,
      sort: sortParam(sort),
      limit: PAGE_SIZE,
      cursor: state.cursors[state.page],
      fields: ["name", "description", "lastModificationTime", ...columns.map((c) => c.name)].join(","),
      count: state.page === 0 && !state.total ? "true" : "",
      asOf,
    });
    if (!isCurrent()) return;
    if (data.total !== undefined) state.total = data.total;
    state.cursors[state.page + 1] = data.nextCursor;
    fillTable(table, type, data.items, columns);
    const page = { page: state.page, pageSize: PAGE_SIZE, count: data.items.length, total: state.total };
    status.textContent = pageStatus({ ...page, ms: performance.now() - started });
    previous.disabled = state.page === 0;
    next.disabled = !data.nextCursor;
  }
  previous.addEventListener("click", () => {
    state.page -= 1;
    load();
  });
  next.addEventListener("click", () => {
    state.page += 1;
    load();
  });
  const nodes = [
    h("div", { class: "panel flush" }, table),
    h("div", { class: "pager" }, status, h("div", { class: "pager-buttons" }, previous, next)),
  ];
  return { nodes, load };
}

function listHead(type, def) {
  const create = can(type, "create")
    ? h(
        "a",
        { class: "button primary", href: `#/new/${encodeURIComponent(type)}`, id: "create-element" },
        `New ${def.displayName}`,
      )
    : null;
  // A workbook of this type to edit in Excel and import again (POST /api/massdata/import).
  const workbook = hasFunction("EXPORT")
    ? h(
        "a",
        {
          class: "button",
          href: `/api/massdata/export?format=xlsx&types=${encodeURIComponent(type)}`,
          download: `${type}.xlsx`,
          id: "export-workbook",
        },
        "Export to Excel",
      )
    : null;
  return pageHead(
    h(
      "div",
      {},
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Landscape"), " / "),
      h("h1", {}, def.displayName),
      def.description ? h("p", { class: "muted" }, def.description) : null,
    ),
    h("div", { class: "actions" }, workbook, create),
  );
}

function readFilters(text) {
  try {
    return JSON.parse(text || "[]");
  } catch {
    return [];
  }
}

export async function renderList({ params, query, navigate, isCurrent }) {
  const [type] = params;
  const def = typeDef(type);
  if (!def) throw new ApiError(404, { title: "Not Found", detail: `no type ${type}` });
  const shown = {
    search: query.get("q") || "",
    sort: query.get("sort") || "name",
    asOf: query.get("asOf") || "",
  };
  const filters = readFilters(query.get("f"));
  const properties = readableProperties(type).filter(
    (p) => FILTER_KINDS.has(p.valueType) && !["id", "revision", "type"].includes(p.name),
  );
  const columns = properties
    .filter(
      (p) =>
        !p.multiple &&
        COLUMN_KINDS.includes(p.valueType) &&
        !["name", "lastModificationUser"].includes(p.name),
    )
    .slice(0, 4);
  const { search, sort, asOf } = shown;
  const go = (changes, chosen = filters) =>
    navigate(listRoute(type), {
      q: search,
      sort,
      asOf,
      f: chosen.length ? JSON.stringify(chosen) : "",
      ...changes,
    });
  const filter = listFilter(search, filters);
  const canList = hasFunction("MASSDATA");
  const pager = listPager(type, columns, { filter, sort, asOf }, isCurrent);
  if (canList) await pager.load();
  return h(
    "div",
    {},
    listHead(type, def),
    asOf ? asOfBanner(asOf, listRoute(type)) : null,
    canList
      ? [
          listToolbar(def, shown, go),
          buildFilterBar(properties, filters, (chosen) => go({}, chosen)),
          pager.nodes,
          h(
            "p",
            { class: "muted small" },
            "Filter sent to the server (iteraQL): ",
            h("code", { id: "list-filter" }, filter || "(none)"),
          ),
        ]
      : h("p", { class: "notice" }, "Listing elements needs the MASSDATA permission."),
  );
}

// The control for a filter's value: the literals of an enum, yes/no, or an input of the property's kind.
function valueControlFor(property, kind, id) {
  if (kind === "enum")
    return h(
      "select",
      { id },
      property.literals.map((l) => h("option", { value: l.name }, l.name)),
    );
  if (kind === "boolean")
    return h("select", { id }, h("option", { value: "true" }, "yes"), h("option", { value: "false" }, "no"));
  return h("input", { id, type: kind === "number" ? "number" : kind === "date" ? "date" : "text" });
}

function filterChips(filters, apply) {
  return filters.map((filter, index) =>
    h(
      "span",
      { class: "chip" },
      filterLabel(filter),
      h(
        "button",
        {
          type: "button",
          class: "chip-remove",
          "aria-label": `Remove filter on ${filter.p}`,
          onclick: () => apply(filters.filter((_, i) => i !== index)),
        },
        "×",
      ),
    ),
  );
}

// Attribute, condition and value of a new filter, and the filters applied as removable chips.
function buildFilterBar(properties, filters, apply) {
  const property = h(
    "select",
    { id: "filter-property" },
    properties.map((p) => h("option", { value: p.name }, p.name)),
  );
  const operator = h("select", { id: "filter-operator" });
  const valueSlot = h("span", { class: "filter-value" });
  let valueControl;
  const refresh = () => {
    const chosen = properties.find((p) => p.name === property.value);
    if (!chosen) return;
    const kind = kindOf(chosen);
    operator.replaceChildren(
      ...(OPERATORS[kind] || OPERATORS.text).map(([value, label]) => h("option", { value }, label)),
    );
    valueControl = valueControlFor(chosen, kind, "filter-value");
    valueSlot.replaceChildren(
      h("label", { for: "filter-value", class: "visually-hidden" }, "Value"),
      valueControl,
    );
  };
  property.addEventListener("change", refresh);
  refresh();
  const onsubmit = (event) => {
    event.preventDefault();
    const chosen = properties.find((p) => p.name === property.value);
    if (!chosen) return;
    if (operator.value !== "empty" && valueControl.value === "") {
      valueControl.focus();
      return;
    }
    apply([...filters, { p: chosen.name, o: operator.value, v: valueControl.value, k: kindOf(chosen) }]);
  };
  return h(
    "form",
    { class: "filterbar", "aria-label": "Filter by attribute", onsubmit },
    h("span", { class: "filterbar-label" }, "Filter"),
    h("label", { for: "filter-property", class: "visually-hidden" }, "Attribute"),
    property,
    h("label", { for: "filter-operator", class: "visually-hidden" }, "Condition"),
    operator,
    valueSlot,
    h("button", { type: "submit", class: "button", id: "filter-add" }, "Add filter"),
    filterChips(filters, apply),
  );
}
