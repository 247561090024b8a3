// A scenario's review page: what it is, its review (scenario-approval.js), the roles it is shared with
// (scenario-sharing.js) and its discussion (scenario-comments.js), its changes by type, each changed
// element with its fields at the base, in main and in the scenario, its comments, the conflicts and the
// controls that settle them; then the merge (a dry run first if wanted) and closing or reopening it. The
// merge itself is in scenario-merge.js.

import { api, get } from "./api.js";
import { pageHead } from "./components.js";
import { buildControl, relationPicker } from "./controls.js";
import { h, toast, uniqueId } from "./dom.js";
import { formatTime } from "./format.js";
import { keepSessionAlive } from "./keepalive.js";
import { elementRoute, href, scenarioPath, scenarioRoute, scenariosRoute } from "./paths.js";
import {
  actionLabel,
  behindMainText,
  choiceLabel,
  conflictChoices,
  conflictField,
  conflictKindLabel,
  fieldRow,
  openConflictCount,
  problemText,
  resolutionText,
  summaryLines,
  valueButtonLabel,
  valueLabel,
} from "./scenario-diff.js";
import { reviewPanel } from "./scenario-approval.js";
import { refreshShell, switchTo } from "./scenario-bar.js";
import { elementThread, loadComments, scenarioThread } from "./scenario-comments.js";
import { mergePanel } from "./scenario-merge.js";
import { mayManage } from "./scenario-rules.js";
import { sharingPanel } from "./scenario-sharing.js";
import { stateBadge } from "./scenarios.js";
import { session, typeDef, typeLabel } from "./session.js";
import { scenarioKey, leaveScenario } from "./workspace.js";

function propertyOf(type, name) {
  const def = typeDef(type);
  return [...(def?.properties || []), ...(def?.relationEnds || [])].find((p) => p.name === name) || null;
}

// The diff's pages from the first: as many as were shown before (a reload after settling keeps them).
async function loadDiff(review, pages) {
  let cursor = null;
  let first = null;
  const items = [];
  let loaded = 0;
  do {
    const { data } = await get(scenarioPath(review.key, "diff"), { against: review.against, cursor });
    first = first || data;
    items.push(...data.items);
    cursor = data.nextCursor;
    loaded += 1;
  } while (cursor && loaded < pages);
  Object.assign(review, { first, items, cursor, pages: loaded });
}

function summaryPanel(review) {
  const lines = summaryLines(review.first.summary);
  const conflicts = review.first.openConflicts ?? 0;
  return h(
    "section",
    { class: "panel", id: "scenario-summary", "aria-labelledby": "scenario-summary-title" },
    h("h2", { id: "scenario-summary-title" }, "Summary"),
    lines.length
      ? h(
          "dl",
          { class: "props" },
          lines.map(([type, text]) => [h("dt", {}, typeLabel(type)), h("dd", { "data-type": type }, text)]),
        )
      : h("p", { class: "empty" }, "No changes yet: open an element and edit it while in this scenario."),
    review.against === "main"
      ? h(
          "p",
          { class: conflicts ? "conflict-count open" : "conflict-count", id: "open-conflicts" },
          conflicts
            ? `${conflicts} open conflict${conflicts === 1 ? "" : "s"} to settle`
            : "No open conflicts",
        )
      : null,
  );
}

function fieldsTable(item, review) {
  const withMain = review.against === "main";
  const column = (text) => h("th", { scope: "col" }, text);
  const wholeElement = (item.conflicts || []).some((conflict) => conflict.field === "*");
  const row = (field) => {
    const shown = fieldRow(field, propertyOf(item.element.type, field.field), { wholeElement });
    return h(
      "tr",
      { "data-field": shown.field, class: `field-${shown.state}` },
      h("th", { scope: "row" }, shown.field),
      h("td", { "data-side": "base", class: "muted" }, shown.base),
      withMain ? h("td", { "data-side": "main" }, shown.main) : null,
      h("td", { "data-side": "scenario" }, shown.scenario),
      withMain
        ? h("td", {}, h("span", { class: `field-state state-${shown.state}` }, shown.stateLabel))
        : null,
    );
  };
  return h(
    "table",
    { class: withMain ? "changes three-way" : "changes two-way" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        column("Field"),
        column("Base"),
        withMain ? column("Main now") : null,
        column("Scenario"),
        withMain ? column("State") : null,
      ),
    ),
    h("tbody", {}, item.fields.map(row)),
  );
}

// The control for "another value" of a field changed on both sides: the field's own form control.
function valueControl(item, conflict, id) {
  const property = propertyOf(item.element.type, conflict.field) || {
    name: conflict.field,
    valueType: "text",
  };
  const field = item.fields.find((f) => f.field === conflict.field);
  const values = conflict.resolution?.value ?? field?.scenario ?? [];
  if (property.name === "parent") return relationPicker(item.element.type, false, values, id, "parent");
  return buildControl(property, values, id);
}

async function settle(review, item, conflict, take, value, error) {
  error.textContent = "";
  try {
    const body = { element: item.element.id, field: conflict.field, take };
    if (take === "value") body.value = value;
    await api("POST", scenarioPath(review.key, "resolutions"), { body, auth: "relogin" });
    toast(`Settled ${conflict.field === "*" ? item.element.name : conflict.field}`);
    await review.redraw(item.element.id);
  } catch (failure) {
    if (failure.status === 401 && !failure.loginCancelled) throw failure;
    error.textContent = problemText(failure.message, failure.problem);
  }
}

function valueForm(review, item, conflict, error) {
  const id = uniqueId("resolution-value");
  const control = valueControl(item, conflict, id);
  const onsubmit = (event) => {
    event.preventDefault();
    settle(review, item, conflict, "value", control.read(), error);
  };
  return h(
    "form",
    { class: "inline-form value-form", onsubmit },
    h("label", { for: id }, valueLabel(conflict.kind)),
    control.node,
    h("button", { type: "submit", class: "button" }, valueButtonLabel(conflict.kind)),
  );
}

// The ways a conflict can be settled, as buttons (the chosen one pressed) and, for a field changed on both
// sides, a form for another value.
function settleControls(review, item, conflict) {
  const error = h("p", { class: "form-error", role: "alert" });
  const taken = conflict.resolution?.take;
  const choices = conflictChoices(conflict.kind, item.action);
  const buttons = choices
    .filter((take) => take !== "value")
    .map((take) =>
      h(
        "button",
        {
          type: "button",
          class: take === taken ? "button primary" : "button",
          "aria-pressed": take === taken ? "true" : "false",
          "data-take": take,
          onclick: () => settle(review, item, conflict, take, undefined, error),
        },
        choiceLabel(take, conflict.kind),
      ),
    );
  const label = `Settle ${conflict.field === "*" ? "the element" : conflict.field} of ${item.element.name}`;
  return h(
    "div",
    { class: "settle", role: "group", "aria-label": label },
    h("div", { class: "actions" }, buttons),
    choices.includes("value") ? valueForm(review, item, conflict, error) : null,
    error,
  );
}

function conflictEntry(review, item, conflict) {
  const property = propertyOf(item.element.type, conflictField(conflict));
  const open = !conflict.resolution;
  return h(
    "li",
    { class: open ? "conflict-entry open" : "conflict-entry", "data-field": conflict.field },
    h(
      "p",
      { class: "conflict-head" },
      h("span", { class: `chip conflict-chip kind-${conflict.kind}` }, conflictKindLabel(conflict.kind)),
      h("span", {}, conflict.message),
      h("span", { class: "resolution" }, resolutionText(conflict.resolution, conflict.kind, property)),
    ),
    review.scenario.state === "open" && mayManage(review.scenario, session.user)
      ? settleControls(review, item, conflict)
      : null,
  );
}

function elementHead(item) {
  const { element } = item;
  const open = openConflictCount(item);
  const name =
    item.action === "deleted"
      ? h("span", {}, element.name)
      : h("a", { href: href(elementRoute(element.type, element.id)) }, element.name);
  return h(
    "h3",
    { tabindex: "-1", id: `review-element-${element.id}` },
    h("span", { class: `op op-${item.action}` }, actionLabel(item.action)),
    " ",
    name,
    h("span", { class: "muted" }, ` ${typeLabel(element.type)}`),
    open ? h("span", { class: "badge conflict-badge" }, `${open} conflict${open === 1 ? "" : "s"}`) : null,
  );
}

function elementPanel(review, item) {
  const table = fieldsTable(item, review);
  const thread = elementThread(review, item);
  return h(
    "section",
    {
      class: item.conflicts?.length ? "panel review-element has-conflicts" : "panel review-element",
      "data-element": item.element.id,
      "aria-labelledby": `review-element-${item.element.id}`,
    },
    h("div", { class: "review-element-head" }, elementHead(item), thread.button),
    thread.region,
    item.conflicts?.length
      ? h(
          "ul",
          { class: "conflict-list" },
          item.conflicts.map((conflict) => conflictEntry(review, item, conflict)),
        )
      : null,
    item.action === "deleted"
      ? h("details", {}, h("summary", {}, "What it had"), table)
      : h("div", { class: "scroll-x" }, table),
  );
}

function moreButton(review) {
  const more = h("button", { type: "button", class: "button", id: "review-more" }, "More elements");
  more.addEventListener("click", async () => {
    more.disabled = true;
    const before = review.items.length;
    await loadDiff(review, review.pages + 1);
    drawDiff(review);
    review.area.querySelectorAll(".review-element h3")[before]?.focus();
  });
  return more;
}

function drawDiff(review) {
  review.area.replaceChildren(
    summaryPanel(review),
    h("h2", { class: "section-title" }, "Changed elements"),
    ...review.items.map((item) => elementPanel(review, item)),
    ...(review.cursor ? [moreButton(review)] : []),
  );
}

function scenarioFacts(scenario) {
  const facts = [
    stateBadge(scenario.state),
    h("span", {}, `by ${scenario.owner}`),
    h("span", {}, `based on revision ${scenario.baseRevision}`),
    scenario.state === "open"
      ? h("span", { id: "review-behind" }, behindMainText(scenario.behindMain))
      : null,
    scenario.effectiveDate ? h("span", {}, `effective ${scenario.effectiveDate}`) : null,
    h("span", {}, `created ${formatTime(scenario.createdAt)}`),
  ];
  return h("p", { class: "meta" }, facts);
}

async function setState(review, action) {
  try {
    await api("POST", scenarioPath(review.key, action));
  } catch (error) {
    if (error.status === 401) throw error;
    toast(error.message, "error");
    return;
  }
  if (action === "close" && scenarioKey() === review.key) leaveScenario();
  toast(action === "close" ? "Scenario closed" : "Scenario reopened");
  refreshShell();
}

function stateActions(review) {
  const { scenario } = review;
  const current = scenarioKey() === scenario.key;
  const manages = mayManage(scenario, session.user);
  const button = (id, label, onclick, kind = "button") =>
    h("button", { type: "button", class: kind, id, onclick }, label);
  return h(
    "div",
    { class: "actions" },
    scenario.state === "open" && !current
      ? button("work-in-scenario", "Work in this scenario", () => switchTo(scenario), "button primary")
      : null,
    current ? button("review-leave", "Back to main", () => switchTo(null)) : null,
    scenario.state === "open" && manages
      ? button("close-scenario", "Close", () => setState(review, "close"))
      : null,
    scenario.state === "closed" && manages
      ? button("reopen-scenario", "Reopen", () => setState(review, "reopen"))
      : null,
  );
}

function mergedNotice(scenario) {
  if (scenario.state !== "merged") return null;
  return h(
    "p",
    { class: "notice", id: "merged-notice" },
    `Merged into main as revision ${scenario.mergedRevision} by ${scenario.mergedBy}, ` +
      `${formatTime(scenario.mergedAt)}. The changes below are against its base.`,
  );
}

// Against main (three ways, with conflicts) or against the scenario's base (what it changed, alone); a merged
// scenario only against its base (main holds its changes now).
function comparisonSwitch(review) {
  if (review.scenario.state === "merged") return null;
  const other = review.against === "main" ? "base" : "main";
  return h(
    "p",
    { class: "comparison" },
    review.against === "main" ? "Compared with main now. " : "Compared with its base. ",
    h(
      "a",
      {
        href: href(scenarioRoute(review.key), { against: other === "base" ? "base" : "" }),
        id: "compare-other",
      },
      other === "base" ? "Show only what the scenario changed" : "Compare with main now",
    ),
  );
}

export async function renderScenarioReview({ params, query }) {
  const [key] = params;
  const { data: scenario } = await get(scenarioPath(key));
  const against = scenario.state === "merged" || query.get("against") === "base" ? "base" : "main";
  const review = { key, scenario, against, openThreads: new Set() };
  review.area = h("div", { id: "scenario-diff" });
  review.redraw = async (elementId) => {
    const [{ data: now }] = await Promise.all([get(scenarioPath(key)), loadDiff(review, review.pages)]);
    await review.status?.update(now, { focus: false });
    drawDiff(review);
    document.getElementById(`review-element-${elementId}`)?.focus();
  };
  const [sharing] = await Promise.all([sharingPanel(scenario), loadDiff(review, 1), loadComments(review)]);
  drawDiff(review);
  const merge = scenario.state === "open" ? mergePanel(review) : null;
  const status = await reviewPanel(review, () => review.updateMergeGate?.());
  review.status = status;
  const page = h(
    "div",
    { class: "scenario-review", "data-scenario": key, "data-state": scenario.state },
    pageHead(
      h(
        "div",
        {},
        h("p", { class: "crumbs" }, h("a", { href: href(scenariosRoute) }, "Scenarios"), " /"),
        h("h1", {}, scenario.name),
        scenarioFacts(scenario),
      ),
      stateActions(review),
    ),
    scenario.description ? h("p", { class: "lead" }, scenario.description) : null,
    mergedNotice(scenario),
    status,
    sharing,
    comparisonSwitch(review),
    review.area,
    scenarioThread(review),
    merge,
  );
  // Its forms (comments, resolutions, sharing) keep the session while their user works in them.
  keepSessionAlive(page, session.user?.sessionIdleTimeout ?? null);
  return page;
}
