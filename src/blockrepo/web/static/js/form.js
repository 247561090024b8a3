// Edit and create forms built from the metamodel; every validation problem at its field, and a 412 conflict
// shown with the other change. What was typed survives an ended session (a login in place, then the same
// save) and a reload (a draft in sessionStorage). The controls of one field are in controls.js, deletion
// in dialog.js.

import { ApiError, api, get } from "./api.js";
import { crumbs, pageHead } from "./components.js";
import { buildControl, relationPicker } from "./controls.js";
import { offerDraft } from "./dialog.js";
import { h, toast, uniqueId } from "./dom.js";
import { dropDraft, loadDraft, storeDraft } from "./drafts.js";
import {
  changedProperties,
  comparable,
  fieldHelp,
  formatValues,
  groupTitle,
  pointerProperty,
} from "./format.js";
import { keepSessionAlive } from "./keepalive.js";
import { elementPath, elementRoute, href, listRoute } from "./paths.js";
import { can, groupReadable, groupWritable, session, typeDef, typeLabel } from "./session.js";
import { changedValues, draftKey } from "./unsaved.js";
import { scenarioKey } from "./workspace.js";

const NOT_EDITABLE = new Set([
  "id",
  "type",
  "revision",
  "children",
  "lastModificationTime",
  "lastModificationUser",
]);

// A field of the form: label, control, help and the place for its errors; recorded in `fields`.
function fieldWrapper(fields, key, label, control, { mandatory = false, writable = true, help = "" } = {}) {
  const errorId = `${control.id}-error`;
  const target = control.node.querySelector?.("input,select,textarea") || control.node;
  if (!writable) {
    control.node.querySelectorAll?.("input,select,textarea,button").forEach((el) => {
      el.disabled = true;
    });
  }
  if (!writable && "disabled" in control.node) control.node.disabled = true;
  target.setAttribute("aria-describedby", errorId);
  const error = h("p", { class: "field-error", id: errorId });
  const required = mandatory ? h("span", { class: "required", "aria-label": "required" }, " *") : null;
  const wrapper = h(
    "div",
    { class: "field", "data-field": key },
    h("label", { for: control.id }, label, required),
    control.node,
    help ? h("p", { class: "help" }, help) : null,
    error,
  );
  const kept = control.snapshot || control.read;
  fields.push({ key, read: control.read, snapshot: kept, wrapper, error, writable, target });
  return wrapper;
}

// The form's fieldsets: one per attribute group (properties the user may read and, when editing, the
// element has), then one for the relations to types the user may read. The controls show `values`: the
// element's, or a restored draft's over them.
function editorSections(def, { type, creating, original, fields }, values = original) {
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
        ? { ...relationPicker(type, false, values.parent, id, "parent"), id }
        : { ...buildControl(property, values[property.name], id), id };
    const options = {
      mandatory: property.mandatory,
      writable: groupWritable(property.group),
      help: fieldHelp(property),
    };
    section(groupTitle(property)).append(
      fieldWrapper(fields, property.name, property.name, control, options),
    );
  }
  for (const end of def.relationEnds) {
    if (!can(end.type, "read") || (!creating && !(end.name in original))) continue;
    const id = uniqueId(`field-${end.name}`);
    const control = { ...relationPicker(end.type, end.multiple, values[end.name], id, end.name), id };
    section("Relations").append(
      fieldWrapper(fields, end.name, `${end.name} (${typeLabel(end.type)})`, control),
    );
  }
  return [...sections.values()];
}

// The body to send: when creating every filled field, when editing every changed one.
function collect({ fields, creating, original }) {
  const body = {};
  for (const field of fields) {
    if (!field.writable) continue;
    const value = field.read();
    if (creating ? value.length : comparable(value) !== comparable(original[field.key]))
      body[field.key] = value;
  }
  return body;
}

// What the writable fields hold now, as the API takes it (relations with their names, for a draft).
function snapshot(fields) {
  return Object.fromEntries(fields.filter((f) => f.writable).map((f) => [f.key, f.snapshot()]));
}

// The draft holds what differs from the form as it was opened; nothing once that is undone.
function rememberDraft(editor) {
  storeDraft(editor.draftKey, editor.user, changedValues(snapshot(editor.fields), editor.initial));
}

function markInvalid(field, message) {
  field.error.textContent = [field.error.textContent, message].filter(Boolean).join(" ");
  field.wrapper.classList.add("invalid");
  field.target.setAttribute("aria-invalid", "true");
}

// Each problem of a 422 at its field, the rest in the form's error line; focus on the first invalid field.
function showProblems({ fields, formError }, error) {
  for (const field of fields) {
    field.error.textContent = "";
    field.wrapper.classList.remove("invalid");
    field.target.removeAttribute("aria-invalid");
  }
  const unplaced = [];
  for (const problem of error.problem.errors || []) {
    const field = fields.find((f) => f.key === pointerProperty(problem.pointer));
    if (field) markInvalid(field, problem.message);
    else unplaced.push(problem.message);
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
}

// `changes` is given when a conflict is resolved: the user's own changes, as against what they opened.
async function save(editor, ifMatch, changes) {
  const { type, id, creating, navigate, submit, formError } = editor;
  const body = changes || collect(editor);
  if (!creating && !Object.keys(body).length) {
    dropDraft(editor.draftKey);
    navigate(elementRoute(type, id));
    return;
  }
  submit.disabled = true;
  formError.textContent = "";
  try {
    if (creating) {
      // An ended session logs in in place and sends the same body again (api.js).
      const path = `/api/element/${encodeURIComponent(type)}`;
      const { data } = await api("POST", path, { body, auth: "relogin" });
      dropDraft(editor.draftKey);
      toast(`Created ${data.name[0]}`);
      navigate(elementRoute(type, data.id[0]));
    } else {
      const headers = ifMatch ? { "If-Match": ifMatch } : {};
      await api("PUT", elementPath(type, id), { body, headers, auth: "relogin" });
      dropDraft(editor.draftKey);
      toast("Saved");
      navigate(elementRoute(type, id));
    }
  } catch (error) {
    if (error.loginCancelled) formError.textContent = error.message;
    else if (!(error instanceof ApiError) || error.status === 401) throw error;
    else if (error.status === 412) await showConflict(editor, body);
    else showProblems(editor, error);
  } finally {
    submit.disabled = false;
  }
}

function conflictTable(original, theirs, mine) {
  const column = (text) => h("th", { scope: "col" }, text);
  const row = (key) =>
    h(
      "tr",
      { "data-property": key },
      h("th", { scope: "row" }, key),
      h("td", {}, formatValues(null, original[key])),
      h("td", { class: "new" }, formatValues(null, theirs[key])),
      h("td", {}, key in mine ? formatValues(null, mine[key]) : "(unchanged)"),
    );
  return h(
    "table",
    { class: "changes" },
    h(
      "thead",
      {},
      h("tr", {}, column("Property"), column("When you opened it"), column("Their change"), column("Yours")),
    ),
    h("tbody", {}, changedProperties(theirs, original).map(row)),
  );
}

// Someone saved in between: what they changed beside what the user changed, and the two ways on.
async function showConflict(editor, mine) {
  const { data: theirs, etag: theirEtag } = await get(elementPath(editor.type, editor.id));
  const reload = () => {
    dropDraft(editor.draftKey);
    location.reload();
  };
  const overwrite = () => {
    editor.etag = theirEtag;
    editor.conflict.replaceChildren();
    save(editor, editor.etag, mine);
  };
  const user = theirs.lastModificationUser?.[0];
  const who = `${user} saved revision ${theirs.revision?.[0]} while you were editing.`;
  editor.conflict.replaceChildren(
    h(
      "section",
      { class: "panel conflict" },
      h("h2", {}, "Someone else changed this element"),
      h("p", {}, `${who} Nothing of yours was saved.`),
      conflictTable(editor.original, theirs, mine),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", class: "button", id: "conflict-reload", onclick: reload },
          "Discard mine and load theirs",
        ),
        h(
          "button",
          { type: "button", class: "button danger", id: "conflict-overwrite", onclick: overwrite },
          "Save mine over theirs",
        ),
      ),
    ),
  );
  editor.conflict.scrollIntoView({ block: "start" });
}

function editorHead(def, { type, creating, original }) {
  return pageHead(
    h(
      "div",
      {},
      crumbs(type, def.displayName),
      h("h1", {}, creating ? `New ${def.displayName}` : `Edit ${original.name?.[0] ?? ""}`),
      creating ? null : h("p", { class: "meta" }, `Revision ${original.revision?.[0]}`),
    ),
  );
}

// A draft of this very form (the same route, scenario and revision, typed by the same user) is offered
// back once the form is on the page.
function offerStoredDraft(def, editor, form) {
  const draft = loadDraft(editor.draftKey, editor.user);
  if (!draft) return;
  setTimeout(async () => {
    if (!form.isConnected) return;
    if (await offerDraft(draft.savedAt)) restoreDraft(def, editor, draft.values);
    else dropDraft(editor.draftKey);
  }, 0);
}

// The form drawn again with the draft's values over the element's; only fields the user may still write.
function restoreDraft(def, editor, values) {
  const writable = new Set(editor.fields.filter((f) => f.writable).map((f) => f.key));
  const kept = Object.fromEntries(Object.entries(values).filter(([key]) => writable.has(key)));
  editor.fields = [];
  editor.fieldArea.replaceChildren(...editorSections(def, editor, { ...editor.original, ...kept }));
  rememberDraft(editor);
  editor.fields.find((f) => f.key in kept)?.target.focus();
}

function formParts(editor) {
  editor.formError = h("div", { class: "form-error", role: "alert", id: "form-error" });
  editor.conflict = h("div", { id: "conflict", role: "alert" });
  editor.sessionNote = h(
    "p",
    { class: "notice", id: "session-ended", role: "status", hidden: true },
    "Your session has ended. What you typed is kept: you log in again when you save.",
  );
  editor.submit = h(
    "button",
    { type: "submit", class: "button primary", id: "save-element" },
    editor.creating ? "Create" : "Save",
  );
}

export async function renderEditor({ params, navigate }) {
  const [type, id] = params;
  const creating = id === undefined;
  const def = typeDef(type);
  if (!def) throw new ApiError(404, { title: "Not Found", detail: `no type ${type}` });
  const loaded = creating ? { data: {}, etag: null } : await get(elementPath(type, id));
  const editor = { type, id, creating, navigate, original: loaded.data, etag: loaded.etag, fields: [] };
  editor.user = session.user?.login ?? null;
  editor.draftKey = draftKey({
    route: creating ? `/new/${encodeURIComponent(type)}` : `${elementRoute(type, id)}/edit`,
    scenario: scenarioKey(),
    revision: creating ? null : (loaded.data.revision?.[0] ?? null),
  });
  editor.fieldArea = h("div", { class: "form-fields" }, editorSections(def, editor));
  editor.initial = snapshot(editor.fields);
  formParts(editor);
  const onsubmit = (event) => {
    event.preventDefault();
    save(editor, editor.etag);
  };
  const remember = () => rememberDraft(editor);
  const cancel = creating ? href(listRoute(type)) : href(elementRoute(type, id));
  const form = h(
    "form",
    { class: "element-form", novalidate: true, onsubmit, oninput: remember, onchange: remember },
    editor.conflict,
    editor.sessionNote,
    editor.fieldArea,
    editor.formError,
    h(
      "div",
      { class: "form-actions" },
      editor.submit,
      h("a", { class: "button subtle", href: cancel, onclick: () => dropDraft(editor.draftKey) }, "Cancel"),
    ),
  );
  const showEnded = (ended) => {
    editor.sessionNote.hidden = !ended;
  };
  keepSessionAlive(form, session.user?.sessionIdleTimeout ?? null, {
    onEnded: () => showEnded(true),
    onRenewed: () => showEnded(false),
  });
  offerStoredDraft(def, editor, form);
  return h("div", {}, editorHead(def, editor), form);
}
