// The diagrams' "Plan" control: the day they show ("as on"), a day to compare it with and the open
// scenarios applied, kept in the query of the page's route so that a link shows the same; the line that
// says what is shown, and the legend of a comparison's marks. The plan is read in diagram-data.js.

import { get } from "./api.js";
import { MARKS, planDays, planQuery } from "./diagram-data.js";
import { h } from "./dom.js";
import { href } from "./paths.js";

// The open scenarios the user may apply (none when they cannot be listed).
export async function openScenarios() {
  try {
    const { data } = await get("/api/scenarios");
    return data.filter((scenario) => scenario.state === "open");
  } catch (error) {
    if (error.status === 401) throw error;
    return [];
  }
}

function field(id, label, input) {
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function scenarioBox(scenario, plan) {
  const box = h("input", {
    type: "checkbox",
    name: "scenario",
    value: scenario.key,
    id: `plan-scenario-${scenario.key}`,
    checked: Boolean(plan?.scenarios.includes(scenario.key)),
  });
  const when = scenario.effectiveDate ? ` (effective ${scenario.effectiveDate})` : "";
  return h("label", { class: "check", for: box.id }, box, ` ${scenario.name}${when}`);
}

// The form: "Show" puts the plan into the route's query, "Today" takes it out again.
export function planControl(route, plan, scenarios) {
  const at = h("input", { type: "date", id: "plan-at", name: "at", value: plan?.at, required: true });
  const compare = h("input", { type: "date", id: "plan-compare", name: "compare", value: plan?.compare });
  const boxes = scenarios.map((scenario) => scenarioBox(scenario, plan));
  const onsubmit = (event) => {
    event.preventDefault();
    const chosen = boxes.map((label) => label.querySelector("input")).filter((box) => box.checked);
    const other = compare.value && compare.value !== at.value ? compare.value : null;
    const query = planQuery({ at: at.value, compare: other, scenarios: chosen.map((box) => box.value) });
    location.hash = href(route, query);
  };
  return h(
    "form",
    { class: "panel plan-form", id: "plan-form", "aria-labelledby": "plan-title", onsubmit },
    h("h2", { id: "plan-title" }, "Plan"),
    h(
      "div",
      { class: "toolbar" },
      field("plan-at", "As on", at),
      field("plan-compare", "Compare with (optional)", compare),
      h(
        "fieldset",
        { class: "plan-scenarios" },
        h("legend", {}, "Scenarios applied"),
        boxes.length ? boxes : h("span", { class: "muted" }, "No open scenarios"),
      ),
      h("button", { type: "submit", class: "button primary", id: "plan-show" }, "Show"),
      plan ? h("a", { class: "button", id: "plan-clear", href: href(route) }, "Today") : null,
    ),
  );
}

// What a planned diagram shows, in words.
export function planNotice(plan, scenarios) {
  if (!plan) return null;
  const names = plan.scenarios.map((key) => scenarios.find((s) => s.key === key)?.name ?? key);
  const applied = names.length ? ` with ${names.join(", ")} where effective` : ", main only";
  const [first, second] = planDays(plan);
  const days = second ? `on ${first} compared with ${second}` : `on ${first}`;
  return h(
    "p",
    { class: "notice plan-notice", id: "plan-notice" },
    `The planned landscape ${days}${applied}; elements outside their runtime period are left out.`,
  );
}

// The marks of a comparison, drawn as the diagrams draw them.
export function markLegend(plan) {
  if (!plan?.compare) return null;
  const entry = ([mark, { color, dash, opacity, label }]) =>
    h(
      "li",
      { "data-mark": mark },
      h("span", {
        class: "swatch",
        style: `background:var(--panel);border:2px ${dash ? "dashed" : "solid"} ${color};opacity:${opacity}`,
      }),
      label,
    );
  return h("ul", { class: "legend", id: "mark-legend" }, Object.entries(MARKS).map(entry));
}
