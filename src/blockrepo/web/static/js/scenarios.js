// The list of planning scenarios: the user's open ones and those they review, or with ended ones too (merged,
// closed); a supervisor can list everyone's. Each links to its review page.

import { get } from "./api.js";
import { pageHead } from "./components.js";
import { h } from "./dom.js";
import { formatTime } from "./format.js";
import { href, scenarioRoute, scenariosRoute } from "./paths.js";
import { behindMainText } from "./scenario-diff.js";
import { openNewScenarioDialog } from "./scenario-bar.js";
import { approvalText } from "./scenario-rules.js";
import { session } from "./session.js";
import { scenarioKey } from "./workspace.js";

export function stateBadge(state) {
  return h("span", { class: `state state-${state}` }, state);
}

function scenarioRow(scenario, showOwner) {
  const current = scenario.key === scenarioKey();
  return h(
    "tr",
    { "data-scenario": scenario.key },
    h(
      "td",
      {},
      h("a", { href: href(scenarioRoute(scenario.key)) }, scenario.name),
      current ? h("span", { class: "badge" }, "this tab works in it") : null,
      scenario.description ? h("div", { class: "muted small" }, scenario.description.slice(0, 140)) : null,
    ),
    h("td", {}, stateBadge(scenario.state)),
    showOwner ? h("td", {}, scenario.owner) : null,
    h("td", { class: "nowrap" }, scenario.effectiveDate || ""),
    h(
      "td",
      { class: "nowrap" },
      `revision ${scenario.baseRevision}`,
      scenario.state === "open"
        ? h("div", { class: "muted small" }, behindMainText(scenario.behindMain))
        : null,
    ),
    h("td", { class: "nowrap" }, String(scenario.changedElements)),
    h(
      "td",
      { class: "nowrap", "data-review": scenario.review ? "proposed" : "none" },
      approvalText(scenario.review) || "",
    ),
    h("td", { class: "muted nowrap" }, formatTime(scenario.createdAt)),
  );
}

function scenarioTable(scenarios, showOwner) {
  const column = (text) => h("th", { scope: "col" }, text);
  return h(
    "div",
    { class: "panel flush scroll-x" },
    h(
      "table",
      { class: "data-table", id: "scenario-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          column("Name"),
          column("State"),
          showOwner ? column("Owner") : null,
          column("Effective"),
          column("Based on"),
          column("Elements changed"),
          column("Review"),
          column("Created"),
        ),
      ),
      h(
        "tbody",
        {},
        scenarios.map((scenario) => scenarioRow(scenario, showOwner)),
      ),
    ),
  );
}

// Checkboxes for ended scenarios and (supervisors) everyone's; ticking one reads the list again.
function listOptions(ended, everyone, navigate) {
  const go = () =>
    navigate(scenariosRoute, {
      ended: endedBox.checked ? "true" : "",
      everyone: everyoneBox?.checked ? "true" : "",
    });
  const endedBox = h("input", { type: "checkbox", id: "scenarios-ended", checked: ended, onchange: go });
  const everyoneBox = session.user?.supervisor
    ? h("input", { type: "checkbox", id: "scenarios-everyone", checked: everyone, onchange: go })
    : null;
  return h(
    "div",
    { class: "filterbar" },
    h("label", { class: "check", for: "scenarios-ended" }, endedBox, " Merged and closed ones too"),
    everyoneBox
      ? h("label", { class: "check", for: "scenarios-everyone" }, everyoneBox, " Everyone's")
      : null,
  );
}

export async function renderScenarioList({ query, navigate }) {
  const ended = query.get("ended") === "true";
  const everyone = query.get("everyone") === "true" && Boolean(session.user?.supervisor);
  const { data: scenarios } = await get("/api/scenarios", {
    ended: ended ? "true" : "",
    everyone: everyone ? "true" : "",
  });
  const create = h(
    "button",
    { type: "button", class: "button primary", id: "new-scenario" },
    "New scenario…",
  );
  create.addEventListener("click", () => openNewScenarioDialog(create));
  return h(
    "div",
    {},
    pageHead(
      h(
        "div",
        {},
        h("h1", {}, "Scenarios"),
        h("p", { class: "muted" }, "Planned changes, kept apart from main until they are merged."),
      ),
      h("div", { class: "actions" }, create),
    ),
    listOptions(ended, everyone, navigate),
    scenarios.length
      ? scenarioTable(
          scenarios,
          everyone || scenarios.some((scenario) => scenario.owner !== session.user?.login),
        )
      : h("p", { class: "empty" }, "No scenarios yet. Create one to plan changes without touching main."),
  );
}
