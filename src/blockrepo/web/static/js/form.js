// Edit and create forms built from the metamodel; every validation problem at its field, a 412 conflict
// shown with the other change, and deletion with confirmation.

import { ApiError, api, elementPath, get, quoted } from "./api.js";
import { h, toast, uniqueId } from "./dom.js";
import { can, groupReadable, groupWritable, typeDef, typeLabel } from "./session.js";
import { formatValue } from "./element.js";

const NOT_EDITABLE = new Set([
  "id",
  "type",
  "revision",
  "children",
  "lastModificationTime",
  "lastModificationUser",
]);

// A JSON pointer's first segment: the property a problem belongs to.
export function pointerProperty(pointer) {
  const first = String(pointer || "").split("/")[1];
  return first === undefined ? null : first.replace(/~1/g, "/").replace(/~0/g, "~");
}

function comparable(values) {
  return JSON.stringify(
    (values || []).map((value) => (value && typeof value === "object" && "id" in value ? value.id : value)),
  );
}

function textField(property, values, id) {
  if (property.valueType === "richtext" || property.multiple) {
    return h("textarea", { id, rows: property.multiple ? 3 : 4 }, (values || []).join("\n"));
  }
  return h("input", { id, type: "text", value: values?.[0] ?? "", maxlength: 4000 });
}

// Each field: its control(s) and a function reading the value list the API expects.
function buildControl(property, values, id) {
  const type = property.valueType;
  if (type === "number") {
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
  if (type === "date") {
    const input = h("input", { id, type: "date", value: values?.[0] ?? "" });
    return { node: input, read: () => (input.value ? [input.value] : []) };
  }
  if (type === "dateInterval") {
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
  if (type === "boolean") {
    const input = h("input", { id, type: "checkbox", checked: values?.[0] === true });
    return { node: input, read: () => [input.checked] };
  }
  if (type === "enum" && property.multiple) {
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
  if (type === "enum") {
    const select = h(
      "select",
      { id },
      h("option", { value: "" }, "—"),
      property.literals.map((literal) =>
        h("option", { value: literal.name, selected: values?.[0] === literal.name }, literal.name),
      ),
    );
    return { node: select, read: () => (select.value ? [select.value] : []) };
  }
  const field = textField(property, values, id);
  return {
    node: field,
    read: () => {
      if (field.tagName === "TEXTAREA" && property.multiple)
        return field.value
          .split("\n")
          .map((v) => v.trim())
          .filter(Boolean);
      return field.value === "" ? [] : [field.value];
    },
  };
}

// A relation picker: the chosen elements as removable chips, a search box that finds candidates by name.
function relationPicker(targetType, multiple, values, id, label) {
  // Attributes of a kept relation travel back unchanged: a PUT replaces the whole end, so omitting them erases them.
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
  const draw = () => {
    chips.replaceChildren(
      ...chosen.map((ref) =>
        h(
          "li",
          { class: "chip" },
          ref.name,
          h(
            "button",
            {
              type: "button",
              class: "chip-remove",
              "aria-label": `Remove ${ref.name}`,
              onclick: () => {
                chosen = chosen.filter((c) => c.id !== ref.id);
                draw();
              },
            },
            "×",
          ),
        ),
      ),
    );
  };
  let timer;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const text = search.value.trim();
      if (!text) {
        results.replaceChildren();
        return;
      }
      try {
        const { data } = await get(`/api/massdata/${encodeURIComponent(targetType)}`, {
          filter: `@name.containsIgnoreCase(${quoted(text)})`,
          fields: "name",
          limit: 10,
          sort: "name",
        });
        results.replaceChildren(
          ...data.items.map((item) =>
            h(
              "li",
              {},
              h(
                "button",
                {
                  type: "button",
                  class: "picker-option",
                  role: "option",
                  onclick: () => {
                    const ref = { id: item.id[0], name: item.name[0] };
                    chosen = multiple ? [...chosen.filter((c) => c.id !== ref.id), ref] : [ref];
                    search.value = "";
                    results.replaceChildren();
                    draw();
                    search.focus();
                  },
                },
                item.name[0],
              ),
            ),
          ),
        );
        if (!data.items.length) results.replaceChildren(h("li", { class: "muted" }, "No match"));
      } catch (error) {
        results.replaceChildren(
          h(
            "li",
            { class: "muted" },
            error.status === 403 ? "Searching needs the MASSDATA permission" : error.message,
          ),
        );
      }
    }, 200);
  });
  draw();
  return {
    node: h("div", { class: "picker" }, chips, search, results),
    read: () =>
      chosen.map((ref) => (ref.attributes ? { id: ref.id, attributes: ref.attributes } : { id: ref.id })),
  };
}

export async function renderEditor({ params, navigate }) {
  const [type, id] = params;
  const creating = id === undefined;
  const def = typeDef(type);
  if (!def) throw new ApiError(404, { title: "Not Found", detail: `no type ${type}` });
  let original = {};
  let etag = null;
  if (!creating) {
    const response = await get(elementPath(type, id));
    original = response.data;
    etag = response.etag;
  }
  const fields = [];
  const addField = (key, label, control, { mandatory = false, writable = true, help = "" } = {}) => {
    const errorId = `${control.id}-error`;
    const target = control.node.querySelector?.("input,select,textarea") || control.node;
    if (!writable)
      control.node.querySelectorAll?.("input,select,textarea,button").forEach((el) => {
        el.disabled = true;
      });
    if (!writable && "disabled" in control.node) control.node.disabled = true;
    target.setAttribute("aria-describedby", errorId);
    const error = h("p", { class: "field-error", id: errorId });
    const wrapper = h(
      "div",
      { class: "field", "data-field": key },
      h(
        "label",
        { for: control.id },
        label,
        mandatory ? h("span", { class: "required", "aria-label": "required" }, " *") : null,
      ),
      control.node,
      help ? h("p", { class: "help" }, help) : null,
      error,
    );
    fields.push({ key, read: control.read, wrapper, error, writable, target });
    return wrapper;
  };

  const sections = new Map();
  const section = (title) => {
    if (!sections.has(title)) sections.set(title, h("fieldset", { class: "panel" }, h("legend", {}, title)));
    return sections.get(title);
  };
  for (const property of def.properties) {
    if (NOT_EDITABLE.has(property.name) || property.readOnly || !groupReadable(property.group)) continue;
    if (!creating && !(property.name in original)) continue;
    const id = uniqueId(`field-${property.name.replace(/\W/g, "_")}`);
    const control =
      property.name === "parent"
        ? { ...relationPicker(type, false, original.parent, id, "parent"), id }
        : { ...buildControl(property, original[property.name], id), id };
    const help = [
      property.description,
      property.min !== null && property.min !== undefined ? `min ${property.min}` : "",
      property.max !== null && property.max !== undefined ? `max ${property.max}` : "",
      property.unit || "",
    ]
      .filter(Boolean)
      .join(" · ");
    section(property.builtin ? "Basic data" : property.group || "[Default Attribute Group]").append(
      addField(property.name, property.name, control, {
        mandatory: property.mandatory,
        writable: groupWritable(property.group),
        help,
      }),
    );
  }
  for (const end of def.relationEnds) {
    if (!can(end.type, "read") || (!creating && !(end.name in original))) continue;
    const id = uniqueId(`field-${end.name}`);
    const control = { ...relationPicker(end.type, end.multiple, original[end.name], id, end.name), id };
    section("Relations").append(addField(end.name, `${end.name} (${typeLabel(end.type)})`, control));
  }

  const formError = h("div", { class: "form-error", role: "alert", id: "form-error" });
  const conflict = h("div", { id: "conflict", role: "alert" });
  const submit = h(
    "button",
    { type: "submit", class: "button primary", id: "save-element" },
    creating ? "Create" : "Save",
  );
  const elementUrl = (elementId) => `/element/${encodeURIComponent(type)}/${elementId}`;

  const collect = () => {
    const body = {};
    for (const field of fields) {
      if (!field.writable) continue;
      const value = field.read();
      if (creating ? value.length : comparable(value) !== comparable(original[field.key]))
        body[field.key] = value;
    }
    return body;
  };

  const showProblems = (error) => {
    for (const field of fields) {
      field.error.textContent = "";
      field.wrapper.classList.remove("invalid");
      field.target.removeAttribute("aria-invalid");
    }
    const problems = error.problem.errors || [];
    const unplaced = [];
    for (const problem of problems) {
      const field = fields.find((f) => f.key === pointerProperty(problem.pointer));
      if (field) {
        field.error.textContent = [field.error.textContent, problem.message].filter(Boolean).join(" ");
        field.wrapper.classList.add("invalid");
        field.target.setAttribute("aria-invalid", "true");
      } else unplaced.push(problem.message);
    }
    if (error.problem.code === "name_conflict") {
      const field = fields.find((f) => f.key === "name");
      if (field) {
        field.error.textContent = error.message;
        field.wrapper.classList.add("invalid");
      }
    }
    formError.textContent = `${error.message}${unplaced.length ? `: ${unplaced.join("; ")}` : ""}`;
    fields.find((f) => f.wrapper.classList.contains("invalid"))?.target.focus();
  };

  // `changes` is given when a conflict is resolved: the user's own changes, as against what they opened.
  const save = async (ifMatch, changes) => {
    const body = changes || collect();
    if (!creating && !Object.keys(body).length) {
      navigate(elementUrl(id));
      return;
    }
    submit.disabled = true;
    formError.textContent = "";
    try {
      if (creating) {
        const { data } = await api("POST", `/api/element/${encodeURIComponent(type)}`, { body });
        toast(`Created ${data.name[0]}`);
        navigate(elementUrl(data.id[0]));
      } else {
        await api("PUT", elementPath(type, id), { body, headers: ifMatch ? { "If-Match": ifMatch } : {} });
        toast("Saved");
        navigate(elementUrl(id));
      }
    } catch (error) {
      if (!(error instanceof ApiError) || error.status === 401) throw error;
      if (error.status === 412) await showConflict(body);
      else showProblems(error);
    } finally {
      submit.disabled = false;
    }
  };

  const showConflict = async (mine) => {
    const { data: theirs, etag: theirEtag } = await get(elementPath(type, id));
    const changed = Object.keys(theirs).filter(
      (key) =>
        !["revision", "lastModificationTime", "lastModificationUser"].includes(key) &&
        comparable(theirs[key]) !== comparable(original[key]),
    );
    const show = (values) => (values?.length ? values.map((v) => formatValue(null, v)).join(", ") : "—");
    conflict.replaceChildren(
      h(
        "section",
        { class: "panel conflict" },
        h("h2", {}, "Someone else changed this element"),
        h(
          "p",
          {},
          `${theirs.lastModificationUser?.[0]} saved revision ${theirs.revision?.[0]} while you were editing. Nothing of yours was saved.`,
        ),
        h(
          "table",
          { class: "changes" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Property"),
              h("th", { scope: "col" }, "When you opened it"),
              h("th", { scope: "col" }, "Their change"),
              h("th", { scope: "col" }, "Yours"),
            ),
          ),
          h(
            "tbody",
            {},
            changed.map((key) =>
              h(
                "tr",
                { "data-property": key },
                h("th", { scope: "row" }, key),
                h("td", {}, show(original[key])),
                h("td", { class: "new" }, show(theirs[key])),
                h("td", {}, key in mine ? show(mine[key]) : "(unchanged)"),
              ),
            ),
          ),
        ),
        h(
          "div",
          { class: "actions" },
          h(
            "button",
            {
              type: "button",
              class: "button",
              id: "conflict-reload",
              onclick: () => {
                location.reload();
              },
            },
            "Discard mine and load theirs",
          ),
          h(
            "button",
            {
              type: "button",
              class: "button danger",
              id: "conflict-overwrite",
              onclick: () => {
                etag = theirEtag;
                conflict.replaceChildren();
                save(etag, mine);
              },
            },
            "Save mine over theirs",
          ),
        ),
      ),
    );
    conflict.scrollIntoView({ block: "start" });
  };

  const form = h(
    "form",
    {
      class: "element-form",
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        save(etag);
      },
    },
    conflict,
    [...sections.values()],
    formError,
    h(
      "div",
      { class: "form-actions" },
      submit,
      h(
        "a",
        {
          class: "button subtle",
          href: creating ? `#/list/${encodeURIComponent(type)}` : `#${elementUrl(id)}`,
        },
        "Cancel",
      ),
    ),
  );
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
          h("a", { href: `#/list/${encodeURIComponent(type)}` }, def.displayName),
          " /",
        ),
        h("h1", {}, creating ? `New ${def.displayName}` : `Edit ${original.name?.[0] ?? ""}`),
        creating ? null : h("p", { class: "meta" }, `Revision ${original.revision?.[0]}`),
      ),
    ),
    form,
  );
}

export function openDeleteDialog(type, element, done) {
  const children = element.children || [];
  const recursive = h("input", { type: "checkbox", id: "delete-recursive" });
  const error = h("p", { class: "form-error", role: "alert" });
  const dialog = h(
    "dialog",
    { class: "dialog", "aria-labelledby": "delete-title" },
    h(
      "form",
      {
        method: "dialog",
        onsubmit: async (event) => {
          if (event.submitter?.value !== "delete") return;
          event.preventDefault();
          if (children.length && !recursive.checked) {
            error.textContent = "Tick the box to delete its children too.";
            recursive.focus();
            return;
          }
          try {
            await api("DELETE", elementPath(type, element.id[0]), {
              query: { recursive: children.length ? "true" : "" },
              headers: { "If-Match": `W/"${element.revision[0]}"` },
            });
            dialog.close();
            dialog.remove();
            toast(`Deleted ${element.name[0]}`);
            done();
          } catch (failure) {
            error.textContent =
              failure.status === 412
                ? "Someone changed it meanwhile; reload and check before deleting."
                : failure.message;
          }
        },
      },
      h("h2", { id: "delete-title" }, `Delete ${element.name[0]}?`),
      h("p", {}, "Its relations are removed with it. The history keeps what it was."),
      children.length
        ? h(
            "p",
            { class: "check" },
            recursive,
            h("label", { for: "delete-recursive" }, ` Also delete its ${children.length} child element(s)`),
          )
        : null,
      error,
      h(
        "div",
        { class: "form-actions" },
        h(
          "button",
          { type: "submit", value: "delete", class: "button danger", id: "confirm-delete" },
          "Delete",
        ),
        h(
          "button",
          { type: "submit", value: "cancel", class: "button subtle", formnovalidate: true },
          "Cancel",
        ),
      ),
    ),
  );
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}
