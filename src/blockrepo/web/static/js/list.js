// A list of one type: case-insensitive search, attribute filters, sort and cursor paging on the server
// (massdata API), optionally as of an earlier revision or time.

import { ApiError, get, propertyRef, quoted } from "./api.js";
import { h, formatTime } from "./dom.js";
import { literalColor } from "./palette.js";
import { can, hasFunction, readableProperties, typeDef } from "./session.js";

const PAGE_SIZE = 50;
const FILTER_KINDS = new Set(["text", "richtext", "responsibility", "enum", "number", "date", "boolean"]);
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

function kindOf(property) {
  if (["richtext", "responsibility"].includes(property.valueType)) return "text";
  return property.valueType;
}

// One filter row {p: property, o: operator, v: value} as an iteraQL predicate.
export function predicateOf(filter) {
  const ref = propertyRef(filter.p);
  if (filter.o === "empty") return `${ref} = null`;
  if (filter.o === "contains") return `${ref}.containsIgnoreCase(${quoted(filter.v)})`;
  const value =
    filter.k === "number" || filter.k === "boolean" || filter.k === "date" ? filter.v : quoted(filter.v);
  return `${ref} ${filter.o} ${value}`;
}

export function listFilter(search, filters) {
  const parts = filters.map(predicateOf);
  if (search) parts.unshift(`@name.containsIgnoreCase(${quoted(search)})`);
  return parts.map((part) => (parts.length > 1 ? `(${part})` : part)).join(" & ");
}

export async function renderList({ params, query, navigate, isCurrent }) {
  const [type] = params;
  const def = typeDef(type);
  if (!def) throw new ApiError(404, { title: "Not Found", detail: `no type ${type}` });
  const search = query.get("q") || "";
  const sort = query.get("sort") || "name";
  const asOf = query.get("asOf") || "";
  let filters = [];
  try {
    filters = JSON.parse(query.get("f") || "[]");
  } catch {
    filters = [];
  }
  const state = { cursors: [null], page: 0 };
  const properties = readableProperties(type).filter(
    (p) => FILTER_KINDS.has(p.valueType) && !["id", "revision", "type"].includes(p.name),
  );
  const columns = properties
    .filter(
      (p) =>
        !p.multiple &&
        ["enum", "text", "date", "number", "responsibility"].includes(p.valueType) &&
        !["name", "lastModificationUser"].includes(p.name),
    )
    .slice(0, 4);

  const go = (changes) =>
    navigate(`/list/${encodeURIComponent(type)}`, {
      q: search,
      sort,
      asOf,
      f: filters.length ? JSON.stringify(filters) : "",
      ...changes,
    });

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
  const toolbar = h(
    "form",
    {
      class: "toolbar",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        go({ q: searchInput.value.trim(), sort: sortSelect.value, asOf: normalizeAsOf(asOfInput.value) });
      },
    },
    h("div", { class: "field grow" }, h("label", { for: "list-search" }, "Name contains"), searchInput),
    h("div", { class: "field" }, h("label", { for: "list-sort" }, "Sort"), sortSelect),
    h("div", { class: "field" }, h("label", { for: "list-asof" }, "As of"), asOfInput),
    h("button", { type: "submit", class: "button primary" }, "Apply"),
  );
  sortSelect.addEventListener("change", () => toolbar.requestSubmit());

  const filterBar = buildFilterBar(properties, filters, (next) => {
    filters = next;
    go({});
  });

  const table = h("table", { class: "data-table", id: "element-table" });
  const status = h("p", { class: "muted", id: "list-status", "aria-live": "polite" });
  const previous = h(
    "button",
    { type: "button", class: "button", id: "page-previous", disabled: true },
    "← Previous",
  );
  const next = h("button", { type: "button", class: "button", id: "page-next", disabled: true }, "Next →");
  const filter = listFilter(search, filters);

  async function load() {
    const started = performance.now();
    const { data } = await get(`/api/massdata/${encodeURIComponent(type)}`, {
      filter,
      sort: sort.replace("-", "") === "id" ? sort : `${sort},id`,
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
    const first = state.page * PAGE_SIZE + 1;
    status.textContent = data.items.length
      ? `${first.toLocaleString()}–${(first + data.items.length - 1).toLocaleString()} of ${(state.total ?? 0).toLocaleString()} · ${Math.round(performance.now() - started)} ms`
      : "No elements match.";
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

  const canList = hasFunction("MASSDATA");
  if (canList) await load();
  return h(
    "div",
    {},
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Landscape"), " / "),
        h("h1", {}, def.displayName),
        def.description ? h("p", { class: "muted" }, def.description) : null,
      ),
      h(
        "div",
        { class: "actions" },
        can(type, "create")
          ? h(
              "a",
              { class: "button primary", href: `#/new/${encodeURIComponent(type)}`, id: "create-element" },
              `New ${def.displayName}`,
            )
          : null,
      ),
    ),
    asOf
      ? h(
          "p",
          { class: "notice asof-banner" },
          `As the repository stood at ${asOf}. `,
          h("a", { href: `#/list/${encodeURIComponent(type)}` }, "Back to today"),
        )
      : null,
    canList
      ? [
          toolbar,
          filterBar,
          h("div", { class: "panel flush" }, table),
          h("div", { class: "pager" }, status, h("div", { class: "pager-buttons" }, previous, next)),
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

export function normalizeAsOf(text) {
  const value = text.trim();
  if (!value || /^\d+$/.test(value)) return value;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

function fillTable(table, type, items, columns) {
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
    h(
      "tbody",
      {},
      items.map((item) =>
        h(
          "tr",
          {},
          h(
            "td",
            {},
            h(
              "a",
              { href: `#/element/${encodeURIComponent(type)}/${item.id[0]}` },
              item.name?.[0] ?? `#${item.id[0]}`,
            ),
          ),
          columns.map((column) => h("td", {}, cellValue(column, item[column.name]))),
          h("td", { class: "muted clip" }, (item.description?.[0] || "").slice(0, 140)),
          h("td", { class: "muted nowrap" }, formatTime(item.lastModificationTime?.[0])),
        ),
      ),
    ),
  );
}

function cellValue(property, values) {
  if (!values || !values.length) return "";
  if (property.valueType === "enum") {
    return values.map((value) => {
      const color = literalColor(property, value);
      return h("span", { class: "pill", style: color ? `--pill:${color}` : null }, value);
    });
  }
  if (property.valueType === "number") return values.map((value) => value.toLocaleString()).join(", ");
  return values.join(", ");
}

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
    const id = "filter-value";
    if (kind === "enum")
      valueControl = h(
        "select",
        { id },
        chosen.literals.map((l) => h("option", { value: l.name }, l.name)),
      );
    else if (kind === "boolean")
      valueControl = h(
        "select",
        { id },
        h("option", { value: "true" }, "yes"),
        h("option", { value: "false" }, "no"),
      );
    else
      valueControl = h("input", {
        id,
        type: kind === "number" ? "number" : kind === "date" ? "date" : "text",
      });
    valueSlot.replaceChildren(h("label", { for: id, class: "visually-hidden" }, "Value"), valueControl);
  };
  property.addEventListener("change", refresh);
  refresh();
  const chips = filters.map((filter, index) =>
    h(
      "span",
      { class: "chip" },
      `${filter.p} ${filter.o === "empty" ? "is empty" : `${filter.o} ${filter.v}`}`,
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
  return h(
    "form",
    {
      class: "filterbar",
      "aria-label": "Filter by attribute",
      onsubmit: (event) => {
        event.preventDefault();
        const chosen = properties.find((p) => p.name === property.value);
        if (!chosen) return;
        if (operator.value !== "empty" && valueControl.value === "") {
          valueControl.focus();
          return;
        }
        apply([...filters, { p: chosen.name, o: operator.value, v: valueControl.value, k: kindOf(chosen) }]);
      },
    },
    h("span", { class: "filterbar-label" }, "Filter"),
    h("label", { for: "filter-property", class: "visually-hidden" }, "Attribute"),
    property,
    h("label", { for: "filter-operator", class: "visually-hidden" }, "Condition"),
    operator,
    valueSlot,
    h("button", { type: "submit", class: "button", id: "filter-add" }, "Add filter"),
    chips,
  );
}
