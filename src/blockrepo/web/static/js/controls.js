// The control of one form field, by value type, with a function reading the value list the API expects;
// and the relation picker, which finds candidates by name (and keeps their names for a form's draft).

import { get } from "./api.js";
import { h } from "./dom.js";
import { nameContains } from "./iteraql.js";
import { massdataPath } from "./paths.js";
import { typeLabel } from "./session.js";

function numberControl(property, values, id) {
  const input = h("input", {
    id,
    type: "number",
    step: "any",
    value: values?.[0] ?? "",
    min: property.min ?? undefined,
    max: property.max ?? undefined,
  });
  return { node: input, read: () => (input.value === "" ? [] : [Number(input.value)]) };
}

function dateControl(property, values, id) {
  const input = h("input", { id, type: "date", value: values?.[0] ?? "" });
  return { node: input, read: () => (input.value ? [input.value] : []) };
}

function intervalControl(property, values, id) {
  const current = values?.[0] || {};
  const start = h("input", {
    id,
    type: "date",
    value: current.start ?? "",
    "aria-label": `${property.name} start`,
  });
  const end = h("input", {
    id: `${id}-end`,
    type: "date",
    value: current.end ?? "",
    "aria-label": `${property.name} end`,
  });
  return {
    node: h("span", { class: "interval" }, start, h("span", { "aria-hidden": "true" }, " – "), end),
    read: () => (start.value || end.value ? [{ start: start.value || null, end: end.value || null }] : []),
  };
}

function booleanControl(property, values, id) {
  const input = h("input", { id, type: "checkbox", checked: values?.[0] === true });
  return { node: input, read: () => [input.checked] };
}

function enumControl(property, values, id) {
  if (property.multiple) {
    const boxes = property.literals.map((literal) =>
      h(
        "label",
        { class: "check" },
        h("input", { type: "checkbox", value: literal.name, checked: (values || []).includes(literal.name) }),
        ` ${literal.name}`,
      ),
    );
    return {
      node: h("div", { class: "checks", id, role: "group", "aria-label": property.name }, boxes),
      read: () =>
        boxes
          .map((label) => label.firstChild)
          .filter((box) => box.checked)
          .map((box) => box.value),
    };
  }
  const options = property.literals.map((literal) =>
    h("option", { value: literal.name, selected: values?.[0] === literal.name }, literal.name),
  );
  const select = h("select", { id }, h("option", { value: "" }, "—"), options);
  return { node: select, read: () => (select.value ? [select.value] : []) };
}

// Rich text and multiple values in a text area (one value a line), other text in a one-line input.
function textControl(property, values, id) {
  const multiline = property.valueType === "richtext" || property.multiple;
  const field = multiline
    ? h("textarea", { id, rows: property.multiple ? 3 : 4 }, (values || []).join("\n"))
    : h("input", { id, type: "text", value: values?.[0] ?? "", maxlength: 4000 });
  const read = () => {
    if (multiline && property.multiple) {
      return field.value
        .split("\n")
        .map((v) => v.trim())
        .filter(Boolean);
    }
    return field.value === "" ? [] : [field.value];
  };
  return { node: field, read };
}

const CONTROLS = {
  number: numberControl,
  date: dateControl,
  dateInterval: intervalControl,
  boolean: booleanControl,
  enum: enumControl,
};

// Each field: its control(s) and a function reading the value list the API expects.
export function buildControl(property, values, id) {
  return (CONTROLS[property.valueType] || textControl)(property, values, id);
}

// Up to ten elements of a type whose name contains what was typed, as options; `pick` gets the chosen one.
async function showCandidates(results, targetType, text, pick) {
  try {
    const { data } = await get(massdataPath(targetType), {
      filter: nameContains(text),
      fields: "name",
      limit: 10,
      sort: "name",
    });
    const option = (item) =>
      h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: "picker-option",
            role: "option",
            onclick: () => pick({ id: item.id[0], name: item.name[0] }),
          },
          item.name[0],
        ),
      );
    results.replaceChildren(...data.items.map(option));
    if (!data.items.length) results.replaceChildren(h("li", { class: "muted" }, "No match"));
  } catch (error) {
    const message = error.status === 403 ? "Searching needs the MASSDATA permission" : error.message;
    results.replaceChildren(h("li", { class: "muted" }, message));
  }
}

function chip(ref, remove) {
  return h(
    "li",
    { class: "chip" },
    ref.name,
    h(
      "button",
      { type: "button", class: "chip-remove", "aria-label": `Remove ${ref.name}`, onclick: remove },
      "×",
    ),
  );
}

// A relation picker: the chosen elements as removable chips, a search box that finds candidates by name.
export function relationPicker(targetType, multiple, values, id, label) {
  // Attributes of a kept relation travel back unchanged: a PUT replaces the whole end, so omitting them
  // erases them.
  let chosen = (values || []).map((ref) => ({ id: ref.id, name: ref.name, attributes: ref.attributes }));
  const chips = h("ul", { class: "chips", "aria-label": `Chosen ${label}` });
  const results = h("ul", {
    class: "picker-results",
    role: "listbox",
    "aria-label": `Matching ${typeLabel(targetType)}`,
  });
  const search = h("input", {
    id,
    type: "search",
    placeholder: `Find ${typeLabel(targetType)}…`,
    autocomplete: "off",
    "aria-controls": results.id,
  });
  const node = h("div", { class: "picker" }, chips, search, results);
  // A change of the chosen elements is a change of the form (its draft is kept from such events).
  const changed = () => node.dispatchEvent(new Event("change", { bubbles: true }));
  const draw = () => {
    const remove = (ref) => () => {
      chosen = chosen.filter((c) => c.id !== ref.id);
      draw();
      changed();
    };
    chips.replaceChildren(...chosen.map((ref) => chip(ref, remove(ref))));
  };
  const pick = (ref) => {
    chosen = multiple ? [...chosen.filter((c) => c.id !== ref.id), ref] : [ref];
    search.value = "";
    results.replaceChildren();
    draw();
    changed();
    search.focus();
  };
  let timer;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const text = search.value.trim();
      if (!text) results.replaceChildren();
      else showCandidates(results, targetType, text, pick);
    }, 200);
  });
  draw();
  const read = () =>
    chosen.map((ref) => (ref.attributes ? { id: ref.id, attributes: ref.attributes } : { id: ref.id }));
  // With the names, for a draft: restored, the chips show them without asking the server.
  const snapshot = () => chosen.map((ref) => ({ ...ref }));
  return { node, read, snapshot };
}
