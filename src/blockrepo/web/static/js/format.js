// Text shown for repository values, and the reading of what users type: no DOM, no network, so
// tests/js/format.test.mjs runs it under Node. `locale` and `timeZone` default to the browser's own.

export const DEFAULT_GROUP = "[Default Attribute Group]";
export const EMPTY = "—";

export function formatTime(iso, { locale, timeZone } = {}) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(locale, { dateStyle: "medium", timeStyle: "short", timeZone });
}

export function formatNumber(value, locale) {
  return value.toLocaleString(locale);
}

// One value of a property as text: intervals, yes/no, numbers with their unit, references by name.
export function formatValue(property, value, locale) {
  if (value === null || value === undefined) return "";
  if (property?.valueType === "dateInterval" && typeof value === "object") {
    return `${value.start || "…"} – ${value.end || "…"}`;
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number")
    return `${formatNumber(value, locale)}${property?.unit ? ` ${property.unit}` : ""}`;
  if (typeof value === "object" && "id" in value) return value.name ?? `#${value.id}`;
  return String(value);
}

// A value list on one line (history, conflicts); a dash when there is none.
export function formatValues(property, values, locale) {
  return values?.length ? values.map((value) => formatValue(property, value, locale)).join(", ") : EMPTY;
}

// A list cell: numbers formatted, other values as they are, nothing for no value.
export function cellText(property, values, locale) {
  if (!values || !values.length) return "";
  if (property.valueType === "number") return values.map((value) => formatNumber(value, locale)).join(", ");
  return values.join(", ");
}

// "As of" as typed: empty or a revision number stays, a date or time becomes an ISO instant, anything else
// goes to the server unchanged (which explains what it cannot read).
export function normalizeAsOf(text) {
  const value = text.trim();
  if (!value || /^\d+$/.test(value)) return value;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

// A date (YYYY-MM-DD) as the UTC midnight it starts with, in ms; null for none.
export function parseDay(text) {
  return text ? new Date(`${text}T00:00:00Z`).getTime() : null;
}

export function isoDay(time) {
  return new Date(time).toISOString().slice(0, 10);
}

export function truncate(text, length) {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

// Values compared as the API returns them: references by id only.
export function comparable(values) {
  const plain = (values || []).map((value) =>
    value && typeof value === "object" && "id" in value ? value.id : value,
  );
  return JSON.stringify(plain);
}

// A JSON pointer's first segment: the property a problem belongs to.
export function pointerProperty(pointer) {
  const first = String(pointer || "").split("/")[1];
  return first === undefined ? null : first.replace(/~1/g, "/").replace(/~0/g, "~");
}

// The section a property is shown and edited in.
export function groupTitle(property) {
  return property.builtin ? "Basic data" : property.group || DEFAULT_GROUP;
}

// The hint under a form field: description, bounds and unit.
export function fieldHelp(property) {
  const bound = (name, value) => (value !== null && value !== undefined ? `${name} ${value}` : "");
  return [property.description, bound("min", property.min), bound("max", property.max), property.unit || ""]
    .filter(Boolean)
    .join(" · ");
}

// The list's pager line, e.g. "51–100 of 1,234 · 12 ms".
export function pageStatus({ page, pageSize, count, total, ms }, locale) {
  if (!count) return "No elements match.";
  const first = page * pageSize + 1;
  const range = `${formatNumber(first, locale)}–${formatNumber(first + count - 1, locale)}`;
  return `${range} of ${formatNumber(total ?? 0, locale)} · ${Math.round(ms)} ms`;
}

// A list filter {p, o, v} as its chip reads.
export function filterLabel(filter) {
  return `${filter.p} ${filter.o === "empty" ? "is empty" : `${filter.o} ${filter.v}`}`;
}

export function hopSummary(nodeCount, depth, edgeCount) {
  return `${nodeCount} elements within ${depth} hop${depth === 1 ? "" : "s"}, ${edgeCount} relations`;
}

export function loginFailure(status, message) {
  if (status === 401) return "Wrong user name or password.";
  if (status === 429) return "Too many failed attempts; try again later.";
  return message;
}

const BOOKKEEPING = new Set(["revision", "lastModificationTime", "lastModificationUser"]);

// The properties another save changed, against what the user opened (revision and last change aside).
export function changedProperties(theirs, original) {
  return Object.keys(theirs).filter(
    (key) => !BOOKKEEPING.has(key) && comparable(theirs[key]) !== comparable(original[key]),
  );
}
