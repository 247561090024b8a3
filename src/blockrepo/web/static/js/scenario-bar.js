// The scenario the tab works in, in the top bar: a menu to switch between main and the user's open
// scenarios or create one, and the banner shown while in a scenario (what it is, how far main has moved on,
// its review page and the way back to main).

import { ApiError, api, get } from "./api.js";
import { h, toast } from "./dom.js";
import { behindMainText, problemText } from "./scenario-diff.js";
import { href, scenarioPath, scenarioRoute, scenariosRoute } from "./paths.js";
import { currentScenario, enterScenario, leaveScenario } from "./workspace.js";

let onSwitch = () => {};

// `handler` runs after the tab entered or left a scenario (the shell draws the page again).
export function onScenarioSwitch(handler) {
  onSwitch = handler;
}

// Draws the page and the top bar again (after a merge, a close or a reopen).
export function refreshShell() {
  onSwitch();
}

export function switchTo(scenario) {
  if (scenario) enterScenario(scenario);
  else leaveScenario();
  onSwitch();
}

function closeMenu(menu, focusSummary = true) {
  menu.open = false;
  if (focusSummary) menu.querySelector("summary").focus();
}

function menuItem(label, current, onclick, attrs = {}) {
  return h(
    "li",
    {},
    h(
      "button",
      { type: "button", class: "menu-item", "aria-current": current ? "true" : null, onclick, ...attrs },
      label,
    ),
  );
}

// The menu's entries: main, each open scenario, and "New scenario…".
function menuItems(menu, scenarios) {
  const current = currentScenario()?.key || null;
  const pick = (scenario) => () => {
    closeMenu(menu);
    if ((scenario?.key || null) !== current) switchTo(scenario);
  };
  return [
    menuItem("Main", current === null, pick(null), { "data-scenario": "" }),
    scenarios.map((scenario) =>
      menuItem(scenario.name, scenario.key === current, pick(scenario), { "data-scenario": scenario.key }),
    ),
    h("li", { class: "menu-rule", role: "separator" }),
    menuItem("New scenario…", false, () => {
      closeMenu(menu, false);
      openNewScenarioDialog(menu.querySelector("summary"));
    }),
    h("li", {}, h("a", { class: "menu-item", href: href(scenariosRoute) }, "All scenarios")),
  ];
}

// The tab's scenario, checked against the server: one that is gone, merged or closed is left for main.
async function checkedCurrent(scenarios) {
  const current = currentScenario();
  if (!current) return null;
  const listed = scenarios.find((scenario) => scenario.key === current.key);
  if (listed) return listed;
  try {
    const { data } = await get(scenarioPath(current.key));
    if (data.state === "open") return data;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 401) throw error;
  }
  leaveScenario();
  toast(`Scenario “${current.name}” is no longer open; you are back in main.`);
  return null;
}

// Fills the menu in the top bar and the banner; returns the scenario the tab is in (or null).
export async function drawScenarioBar() {
  const menu = document.getElementById("scenario-menu");
  const { data: scenarios } = await get("/api/scenarios");
  const current = await checkedCurrent(scenarios);
  if (current) enterScenario(current);
  const listed =
    current && !scenarios.some((s) => s.key === current.key) ? [current, ...scenarios] : scenarios;
  menu.querySelector("summary .scenario-current").textContent = current ? current.name : "Main";
  menu.classList.toggle("in-scenario", Boolean(current));
  menu.querySelector("ul").replaceChildren(...menuItems(menu, listed).flat());
  drawBanner(current);
  return current;
}

function drawBanner(scenario) {
  const banner = document.getElementById("scenario-banner");
  banner.hidden = !scenario;
  document.documentElement.dataset.scenario = scenario?.key || "";
  if (!scenario) {
    banner.replaceChildren();
    return;
  }
  banner.replaceChildren(
    h(
      "p",
      { class: "scenario-line" },
      h("span", { class: "scenario-tag" }, "Scenario"),
      h("strong", { id: "scenario-banner-name" }, scenario.name),
      h("span", {}, `based on revision ${scenario.baseRevision}`),
      h("span", { id: "scenario-banner-behind" }, behindMainText(scenario.behindMain)),
      h("a", { href: href(scenarioRoute(scenario.key)), id: "scenario-review-link" }, "Review changes"),
      h(
        "button",
        { type: "button", class: "button subtle", id: "scenario-leave", onclick: () => switchTo(null) },
        "Back to main",
      ),
    ),
    h(
      "p",
      { class: "scenario-note" },
      "Element pages, edits, lists and the neighbourhood show the scenario; search, history, flows and the " +
        "roadmap still show main.",
    ),
  );
}

// Escape closes the menu and returns to its button; a click elsewhere closes it.
export function setUpScenarioMenu() {
  const menu = document.getElementById("scenario-menu");
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && menu.open) closeMenu(menu);
  });
  document.addEventListener("click", (event) => {
    if (menu.open && !menu.contains(event.target)) closeMenu(menu, false);
  });
}

function dialogField(id, label, control, help) {
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    help ? h("p", { class: "help", id: `${id}-help` }, help) : null,
  );
}

function newScenarioForm() {
  const name = h("input", { id: "scenario-name", required: true, maxlength: 255, autocomplete: "off" });
  const description = h("textarea", { id: "scenario-description", rows: 3, maxlength: 10000 });
  const effective = h("input", { id: "scenario-effective", type: "date" });
  const base = h("input", {
    id: "scenario-base",
    placeholder: "main now",
    "aria-describedby": "scenario-base-help",
  });
  const fields = [
    dialogField("scenario-name", "Name", name),
    dialogField("scenario-description", "Description", description),
    dialogField("scenario-effective", "Effective date", effective),
    dialogField(
      "scenario-base",
      "Start from",
      base,
      "A revision number or a time; empty: main as it is now.",
    ),
  ];
  const read = () => ({
    name: name.value.trim(),
    description: description.value.trim(),
    effectiveDate: effective.value || undefined,
    base: /^\d+$/.test(base.value.trim()) ? Number(base.value.trim()) : base.value.trim() || undefined,
  });
  return { fields, read, name };
}

// "New scenario…": name, description, effective date and base; creating it switches the tab into it.
export function openNewScenarioDialog(returnFocus) {
  const form = newScenarioForm();
  const error = h("p", { class: "form-error", role: "alert" });
  const onsubmit = async (event) => {
    if (event.submitter?.value !== "create") return;
    event.preventDefault();
    error.textContent = "";
    try {
      const { data } = await api("POST", "/api/scenarios", { body: form.read() });
      dialog.close();
      toast(`Created scenario ${data.name}; you are working in it.`);
      switchTo(data);
    } catch (failure) {
      if (failure.status === 401) throw failure;
      error.textContent = problemText(failure.message, failure.problem);
    }
  };
  const body = h(
    "form",
    { method: "dialog", onsubmit },
    h("h2", { id: "new-scenario-title" }, "New scenario"),
    h("p", { class: "muted" }, "Plan changes without touching main; merge them when they are ready."),
    form.fields,
    error,
    h(
      "div",
      { class: "form-actions" },
      h(
        "button",
        { type: "submit", value: "create", class: "button primary", id: "create-scenario" },
        "Create",
      ),
      h(
        "button",
        { type: "submit", value: "cancel", class: "button subtle", formnovalidate: true },
        "Cancel",
      ),
    ),
  );
  const dialog = h("dialog", { class: "dialog", "aria-labelledby": "new-scenario-title" }, body);
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (returnFocus?.isConnected && !document.activeElement?.closest("main")) returnFocus.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  form.name.focus();
}
