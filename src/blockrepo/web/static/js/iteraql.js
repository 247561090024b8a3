// iteraQL text built from what users choose (the massdata API's `filter`): literals quoted, properties
// referenced, list filters joined. No DOM, no network (tests/js/iteraql.test.mjs).

// A string literal for an iteraQL predicate.
export function quoted(text) {
  return `"${String(text).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

export function propertyRef(name) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `@${name}` : `@${quoted(name)}`;
}

export function nameContains(text) {
  return `@name.containsIgnoreCase(${quoted(text)})`;
}

// The global search: name or description.
export function searchFilter(text) {
  return `${nameContains(text)} | @description.containsIgnoreCase(${quoted(text)})`;
}

// The filter kind of a property: rich text and responsibilities filter like text.
export function kindOf(property) {
  if (["richtext", "responsibility"].includes(property.valueType)) return "text";
  return property.valueType;
}

// One filter row {p: property, o: operator, v: value, k: kind} as an iteraQL predicate.
export function predicateOf(filter) {
  const ref = propertyRef(filter.p);
  if (filter.o === "empty") return `${ref} = null`;
  if (filter.o === "contains") return `${ref}.containsIgnoreCase(${quoted(filter.v)})`;
  const bare = filter.k === "number" || filter.k === "boolean" || filter.k === "date";
  return `${ref} ${filter.o} ${bare ? filter.v : quoted(filter.v)}`;
}

export function listFilter(search, filters) {
  const parts = filters.map(predicateOf);
  if (search) parts.unshift(nameContains(search));
  return parts.map((part) => (parts.length > 1 ? `(${part})` : part)).join(" & ");
}

// A list's sort with id as the tie-breaker the cursor needs (unless it sorts by id already).
export function sortParam(sort) {
  return sort.replace("-", "") === "id" ? sort : `${sort},id`;
}
