// A scenario's Sharing panel on its review page: the roles it is shared with, and for its owner (or a
// supervisor) the form that changes them. The form sends the whole list (PUT …/shares replaces it), so a
// removed row is an unshared role; roles are picked from the list where the user may read it, else typed.

import { api, get } from "./api.js";
import { h, toast, uniqueId } from "./dom.js";
import { scenarioPath } from "./paths.js";
import { problemText } from "./scenario-diff.js";
import {
  accessLabel,
  mayListRoles,
  mayManage,
  refusedShareRows,
  roleChoices,
  sharesRequest,
  sharesText,
} from "./scenario-rules.js";
import { session } from "./session.js";

function shareList(shares) {
  if (!shares.length) return h("p", { id: "sharing-state", class: "muted" }, sharesText(shares));
  return h(
    "div",
    { id: "sharing-state" },
    "Shared with: ",
    h(
      "ul",
      { class: "share-list", id: "share-list" },
      shares.map((share) =>
        h(
          "li",
          { "data-role": share.role, "data-access": share.access },
          h("strong", {}, share.role),
          ` (${accessLabel(share.access)})`,
        ),
      ),
    ),
  );
}

// The roles to choose from, or null where the user may not list them (the form asks for typed names then).
async function loadRoles() {
  if (!mayListRoles(session.user)) return null;
  try {
    const { data } = await get("/api/administration/roles");
    return data;
  } catch (failure) {
    if (failure.status === 401) throw failure;
    return null; // refused after all: typed names still work
  }
}

function roleControl(names, value, id) {
  if (!names) return h("input", { type: "text", id, name: "role", value, autocomplete: "off" });
  return h(
    "select",
    { id, name: "role" },
    h("option", { value: "" }, "Choose a role…"),
    names.map((name) => h("option", { value: name, selected: name === value }, name)),
  );
}

// One row of the form: a role, its access and a Remove button (named after the role for screen readers).
function shareRow(names, share, onRemove) {
  const roleId = uniqueId("share-role");
  const accessId = uniqueId("share-access");
  const role = roleControl(names, share.role, roleId);
  const access = h(
    "select",
    { id: accessId, name: "access" },
    ["read", "write"].map((value) =>
      h("option", { value, selected: value === share.access }, accessLabel(value)),
    ),
  );
  const remove = h("button", { type: "button", class: "button", "data-remove": "" }, "Remove");
  const name = () => remove.setAttribute("aria-label", `Remove ${role.value.trim() || "this role"}`);
  role.addEventListener("input", name);
  role.addEventListener("change", name);
  name();
  const row = h(
    "li",
    { class: "share-row inline-form" },
    h("label", { for: roleId }, "Role"),
    role,
    h("label", { for: accessId }, "Access"),
    access,
    remove,
  );
  remove.addEventListener("click", () => onRemove(row));
  row.read = () => ({ role: role.value, access: access.value });
  row.markRefused = (refused) => {
    row.classList.toggle("invalid", refused);
    if (refused) role.setAttribute("aria-invalid", "true");
    else role.removeAttribute("aria-invalid");
  };
  row.focusRole = () => role.focus();
  return row;
}

async function save(panel, scenario, rows, { error, submit }) {
  error.textContent = "";
  const { body, sent } = sharesRequest(rows.map((row) => row.read()));
  rows.forEach((row) => row.markRefused(false));
  submit.disabled = true;
  try {
    const { data } = await api("PUT", scenarioPath(scenario.key, "shares"), { body, auth: "relogin" });
    toast(sharesText(data.shares));
    panel.update(data.shares);
  } catch (failure) {
    if (failure.status === 401 && !failure.loginCancelled) throw failure;
    error.textContent = problemText(failure.message, failure.problem);
    const refused = refusedShareRows(failure.problem, sent).map((index) => rows[index]);
    refused.forEach((row) => row.markRefused(true));
    refused[0]?.focusRole();
    submit.disabled = false;
  }
}

function sharingForm(panel, scenario, shares, names) {
  const list = h("ul", { class: "share-rows", id: "share-rows", "aria-label": "Roles to share with" });
  const error = h("p", { class: "form-error", role: "alert", id: "sharing-error" });
  const addButton = h("button", { type: "button", class: "button", id: "add-share" }, "Add role");
  const submit = h("button", { type: "submit", class: "button primary", id: "save-sharing" }, "Save sharing");
  const rows = () => [...list.children];
  // A removed row hands the focus on: to the next row, else to the Add role button.
  const onRemove = (row) => {
    const next = row.nextElementSibling;
    row.remove();
    if (next) next.focusRole();
    else addButton.focus();
  };
  const add = (share) => list.append(shareRow(names, share, onRemove));
  shares.forEach(add);
  addButton.addEventListener("click", () => {
    add({ role: "", access: "read" });
    list.lastElementChild.focusRole();
  });
  const hintId = uniqueId("sharing-hint");
  const onsubmit = (event) => {
    event.preventDefault();
    save(panel, scenario, rows(), { error, submit });
  };
  return h(
    "form",
    { class: "sharing-form", id: "sharing-form", "aria-describedby": hintId, onsubmit },
    h(
      "p",
      { class: "muted small", id: hintId },
      names ? null : "Type each role's name. ",
      "Members of a role that can view see the scenario; those that can edit also write in it, " +
        "within their own rights. Saving replaces the list.",
    ),
    list,
    h("div", { class: "actions" }, addButton, submit),
    error,
  );
}

// The Sharing panel; its form (for the owner or a supervisor) redraws it with what the server saved.
export async function sharingPanel(scenario) {
  const panel = h("section", {
    class: "panel sharing-panel",
    id: "scenario-sharing",
    "aria-labelledby": "sharing-title",
  });
  const manages = mayManage(scenario, session.user);
  const [{ data }, roles] = await Promise.all([
    get(scenarioPath(scenario.key, "shares")),
    manages ? loadRoles() : null,
  ]);
  const draw = (shares) => {
    const names = roles ? roleChoices(roles, shares) : null;
    panel.replaceChildren(
      h("h2", { id: "sharing-title", tabindex: "-1" }, "Sharing"),
      shareList(shares),
      ...(manages ? [sharingForm(panel, scenario, shares, names)] : []),
    );
  };
  panel.update = (shares) => {
    draw(shares);
    panel.querySelector("h2").focus();
  };
  draw(data.shares);
  return panel;
}
