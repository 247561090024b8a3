// One element: every property the user may read, relations as links, hierarchy, revision and last change,
// "as of" any revision or time; and its history, field by field.

import { ApiError, elementPath, get } from "./api.js";
import { h, formatTime } from "./dom.js";
import { literalColor } from "./palette.js";
import { can, typeDef, typeLabel } from "./session.js";
import { normalizeAsOf } from "./list.js";
import { openDeleteDialog } from "./form.js";

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
    { href: `#/element/${encodeURIComponent(type)}/${reference.id}`, class: "ref" },
    reference.name ?? `#${reference.id}`,
  );
}

export function formatValue(property, value) {
  if (value === null || value === undefined) return "";
  if (property?.valueType === "dateInterval" && typeof value === "object")
    return `${value.start || "…"} – ${value.end || "…"}`;
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number")
    return `${value.toLocaleString()}${property?.unit ? ` ${property.unit}` : ""}`;
  if (typeof value === "object" && "id" in value) return value.name ?? `#${value.id}`;
  return String(value);
}

function valueNodes(property, values) {
  if (!values.length) return h("span", { class: "empty-value" }, "—");
  if (property?.valueType === "enum") {
    return values.map((value) => {
      const color = literalColor(property, value);
      return h("span", { class: "pill", style: color ? `--pill:${color}` : null }, value);
    });
  }
  return values.map((value) => h("span", { class: "value" }, formatValue(property, value)));
}

export async function renderElement({ params, query, navigate }) {
  const [type, id] = params;
  const asOf = query.get("asOf") || "";
  const def = typeDef(type);
  const { data: element } = await get(elementPath(type, id), { asOf });
  const properties = def?.properties || [];
  const ends = def?.relationEnds || [];
  const name = element.name?.[0] ?? `#${id}`;

  const groups = new Map();
  for (const property of properties) {
    if (SYSTEM_KEYS.has(property.name) || !(property.name in element)) continue;
    const group = property.builtin ? "Basic data" : property.group || "[Default Attribute Group]";
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(property);
  }
  const propertySections = [...groups].map(([group, members]) =>
    h(
      "section",
      { class: "panel", "data-group": group },
      h("h2", {}, group),
      h(
        "dl",
        { class: "props" },
        members.map((property) => [
          h(
            "dt",
            {},
            property.name,
            property.unit ? h("span", { class: "muted" }, ` (${property.unit})`) : null,
          ),
          h("dd", { "data-property": property.name }, valueNodes(property, element[property.name] || [])),
        ]),
      ),
    ),
  );

  const relationRows = ends
    .filter((end) => end.name in element)
    .map((end) =>
      h(
        "div",
        { class: "relation", "data-end": end.name },
        h(
          "h3",
          {},
          end.name,
          h("span", { class: "muted" }, ` → ${typeLabel(end.type)}`),
          h("span", { class: "badge" }, String(element[end.name].length)),
        ),
        element[end.name].length
          ? h(
              "ul",
              { class: "ref-list" },
              element[end.name].map((ref) => h("li", {}, elementLink(end.type, ref))),
            )
          : h("p", { class: "empty-value" }, "—"),
      ),
    );
  const relationSection = h(
    "section",
    { class: "panel" },
    h("h2", {}, "Relations"),
    h(
      "div",
      { class: "relations" },
      relationRows.filter((row) => !row.querySelector(".empty-value")),
      relationRows.some((row) => row.querySelector(".empty-value"))
        ? h(
            "details",
            {},
            h("summary", {}, "Empty relations"),
            relationRows.filter((row) => row.querySelector(".empty-value")),
          )
        : null,
    ),
  );

  const hierarchy = def?.hierarchical
    ? h(
        "section",
        { class: "panel", id: "hierarchy" },
        h("h2", {}, "Hierarchy"),
        h(
          "dl",
          { class: "props" },
          h("dt", {}, "Parent"),
          h(
            "dd",
            { "data-property": "parent" },
            element.parent?.length
              ? elementLink(type, element.parent[0])
              : h("span", { class: "empty-value" }, "—"),
          ),
          h("dt", {}, "Children"),
          h(
            "dd",
            { "data-property": "children" },
            element.children?.length
              ? h(
                  "ul",
                  { class: "ref-list" },
                  element.children.map((child) => h("li", {}, elementLink(type, child))),
                )
              : h("span", { class: "empty-value" }, "—"),
          ),
        ),
      )
    : null;

  const asOfInput = h("input", {
    id: "element-asof",
    value: asOf,
    placeholder: "revision or 2026-01-31T12:00",
  });
  const asOfForm = h(
    "form",
    {
      class: "inline-form",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(`/element/${encodeURIComponent(type)}/${id}`, { asOf: normalizeAsOf(asOfInput.value) });
      },
    },
    h("label", { for: "element-asof" }, "As of"),
    asOfInput,
    h("button", { type: "submit", class: "button" }, "Show"),
  );

  const editable = !asOf;
  const actions = h(
    "div",
    { class: "actions" },
    editable && can(type, "update")
      ? h(
          "a",
          {
            class: "button primary",
            id: "edit-element",
            href: `#/element/${encodeURIComponent(type)}/${id}/edit`,
          },
          "Edit",
        )
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
          {
            type: "button",
            class: "button danger",
            id: "delete-element",
            onclick: () =>
              openDeleteDialog(type, element, () => navigate(`/list/${encodeURIComponent(type)}`)),
          },
          "Delete",
        )
      : null,
  );

  return h(
    "article",
    { class: "element-page", "data-type": type, "data-id": id },
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h(
          "p",
          { class: "crumbs" },
          h("a", { href: "#/" }, "Landscape"),
          " / ",
          h("a", { href: `#/list/${encodeURIComponent(type)}` }, typeLabel(type)),
          " /",
        ),
        h("h1", {}, name),
        h(
          "p",
          { class: "meta" },
          h("span", { class: "badge type-badge" }, typeLabel(type)),
          h("span", { id: "element-revision" }, `Revision ${element.revision?.[0] ?? "?"}`),
          h(
            "span",
            { id: "element-last-change" },
            `changed ${formatTime(element.lastModificationTime?.[0])} by ${element.lastModificationUser?.[0] ?? "?"}`,
          ),
        ),
      ),
      actions,
    ),
    asOf
      ? h(
          "p",
          { class: "notice asof-banner", id: "asof-banner" },
          `As the repository stood at ${asOf}. `,
          h("a", { href: `#/element/${encodeURIComponent(type)}/${id}` }, "Back to today"),
        )
      : null,
    element.description?.[0]
      ? h("p", { class: "lead", "data-property": "description" }, element.description[0])
      : null,
    asOfForm,
    h(
      "div",
      { class: "columns" },
      h("div", { class: "column" }, propertySections, hierarchy),
      h("div", { class: "column" }, relationSection),
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
  const show = (values) => (values?.length ? values.map((v) => formatValue(property, v)).join(", ") : "—");
  return h(
    "span",
    {},
    h("span", { class: "old" }, show(change.old)),
    h("span", { class: "arrow", "aria-label": "changed to" }, " → "),
    h("span", { class: "new" }, show(change.new)),
  );
}

const HISTORY_PAGE = 200;

export async function renderHistory({ params }) {
  const [type, id] = params;
  const def = typeDef(type);
  const byName = new Map([...(def?.properties || []), ...(def?.relationEnds || [])].map((p) => [p.name, p]));
  const [{ data: history }, current] = await Promise.all([
    get(`/api/history/${encodeURIComponent(type)}/${id}`, { limit: HISTORY_PAGE }),
    get(elementPath(type, id)).catch((error) =>
      error instanceof ApiError && error.status === 404 ? null : Promise.reject(error),
    ),
  ]);
  const name = current?.data.name?.[0] ?? history.items[0]?.name ?? `#${id}`;
  const row = (changeset) =>
    h(
      "li",
      { class: "changeset", "data-revision": changeset.revision },
      h(
        "div",
        { class: "changeset-head" },
        h("span", { class: `op op-${changeset.operation}` }, changeset.operation),
        h("strong", {}, `Revision ${changeset.revision}`),
        h("span", { class: "muted" }, `${formatTime(changeset.timestamp)} by ${changeset.user}`),
        changeset.operation !== "deleted"
          ? h(
              "a",
              {
                href: `#/element/${encodeURIComponent(type)}/${id}?asOf=${changeset.revision}`,
                class: "asof-link",
              },
              "View as of this revision",
            )
          : null,
      ),
      h(
        "table",
        { class: "changes" },
        h(
          "thead",
          {},
          h("tr", {}, h("th", { scope: "col" }, "Property"), h("th", { scope: "col" }, "Old → new")),
        ),
        h(
          "tbody",
          {},
          (changeset.changes || []).map((change) =>
            h(
              "tr",
              { "data-property": change.property },
              h("th", { scope: "row" }, change.property),
              h("td", {}, changeCell(change, byName.get(change.property))),
            ),
          ),
        ),
      ),
    );
  const rows = history.items.map(row);
  const list = h("ol", { class: "history", id: "history-list" }, rows);
  // One page holds HISTORY_PAGE changesets; older ones come page by page through the API's cursor.
  let cursor = history.nextCursor;
  const older = h("button", { type: "button", class: "button", id: "history-older" }, "Older changes");
  older.addEventListener("click", async () => {
    older.disabled = true;
    try {
      const { data } = await get(`/api/history/${encodeURIComponent(type)}/${id}`, {
        limit: HISTORY_PAGE,
        cursor,
      });
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
  return h(
    "div",
    {},
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h(
          "p",
          { class: "crumbs" },
          h("a", { href: "#/" }, "Landscape"),
          " / ",
          h("a", { href: `#/list/${encodeURIComponent(type)}` }, typeLabel(type)),
          " / ",
          h("a", { href: `#/element/${encodeURIComponent(type)}/${id}` }, name),
          " /",
        ),
        h("h1", {}, `History of ${name}`),
      ),
    ),
    rows.length
      ? h("div", {}, list, cursor ? older : null)
      : h("p", { class: "empty" }, "No recorded changes."),
  );
}
