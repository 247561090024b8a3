// Merging a scenario into main from its review page: a dry run lists what would be written; the merge, after
// confirmation, writes it as one revision of main, or lists the conflicts still open (409).

import { api } from "./api.js";
import { h, toast } from "./dom.js";
import { scenarioPath } from "./paths.js";
import { actionLabel, mergeConflictText, mergeCountsText } from "./scenario-diff.js";
import { refreshShell } from "./scenario-bar.js";
import { approvalText, mergeBlockedReason } from "./scenario-rules.js";
import { session } from "./session.js";
import { leaveScenario, scenarioKey } from "./workspace.js";

const STEP_ACTIONS = { create: "created", update: "updated", delete: "deleted" };

function stepList(steps) {
  const step = (entry) =>
    h(
      "li",
      { "data-element": entry.element.id },
      h(
        "span",
        { class: `op op-${STEP_ACTIONS[entry.operation]}` },
        actionLabel(STEP_ACTIONS[entry.operation]),
      ),
      " ",
      h("strong", {}, entry.element.name),
      entry.fields.length ? h("span", { class: "muted" }, ` — ${entry.fields.join(", ")}`) : null,
    );
  return h("ul", { class: "merge-steps" }, steps.map(step));
}

// A refused merge in the result area: the open conflicts listed, or the write main refused, named.
function showRefusal(result, error) {
  if (error.status === 401) throw error;
  const conflicts = error.problem?.conflicts || [];
  const approvals =
    error.problem?.code === "approval_required"
      ? h(
          "p",
          { id: "merge-approvals" },
          error.problem.review
            ? `Its review ${approvalText(error.problem.review)} of the current version.`
            : "Propose it for review, and merge it once it is approved.",
        )
      : null;
  result.replaceChildren(
    h(
      "div",
      { class: "merge-refused", role: "alert" },
      h("p", {}, `${error.status === 409 ? "The merge is refused" : "The merge failed"}: ${error.message}`),
      approvals,
      conflicts.length
        ? h(
            "ul",
            { class: "merge-conflicts", id: "merge-conflicts" },
            conflicts.map((conflict) => h("li", {}, mergeConflictText(conflict))),
          )
        : null,
    ),
  );
  result.focus();
}

async function preview(review, result) {
  result.replaceChildren(h("p", { class: "muted" }, "Working out the merge…"));
  try {
    const { data } = await api("POST", scenarioPath(review.key, "merge"), { body: { dryRun: true } });
    result.replaceChildren(
      h("p", { id: "merge-preview-counts" }, `The merge would write: ${mergeCountsText(data.counts)}.`),
      stepList(data.steps),
    );
  } catch (error) {
    showRefusal(result, error);
  }
}

async function merge(review, result) {
  try {
    const { data } = await api("POST", scenarioPath(review.key, "merge"), { body: {} });
    if (scenarioKey() === review.key) leaveScenario();
    toast(`Merged into main as revision ${data.revision}: ${mergeCountsText(data.counts, true)}.`);
    refreshShell();
  } catch (error) {
    showRefusal(result, error);
  }
}

function confirmMerge(review, result, opener) {
  const onsubmit = (event) => {
    if (event.submitter?.value !== "merge") return;
    merge(review, result);
  };
  const form = h(
    "form",
    { method: "dialog", onsubmit },
    h("h2", { id: "merge-title" }, `Merge “${review.scenario.name}” into main?`),
    h(
      "p",
      {},
      "Its changes are written into main as one revision, checked as any edit is. " +
        "The scenario then takes no more changes.",
    ),
    h(
      "div",
      { class: "form-actions" },
      h("button", { type: "submit", value: "merge", class: "button primary", id: "confirm-merge" }, "Merge"),
      h("button", { type: "submit", value: "cancel", class: "button subtle" }, "Cancel"),
    ),
  );
  const dialog = h("dialog", { class: "dialog", "aria-labelledby": "merge-title" }, form);
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (opener.isConnected) opener.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
}

export function mergePanel(review) {
  const result = h("div", { id: "merge-result", "aria-live": "polite", tabindex: "-1" });
  const dryRun = h(
    "button",
    { type: "button", class: "button", id: "merge-preview", onclick: () => preview(review, result) },
    "Preview merge",
  );
  const mergeButton = h(
    "button",
    { type: "button", class: "button primary", id: "merge-scenario" },
    "Merge…",
  );
  mergeButton.addEventListener("click", () => confirmMerge(review, result, mergeButton));
  // Disabled, with the reason next to it (and named by it), while the merge cannot be made.
  const reason = h("p", { class: "merge-blocked", id: "merge-blocked" });
  review.updateMergeGate = () => {
    const blocked = mergeBlockedReason(review.scenario, session.user);
    mergeButton.disabled = Boolean(blocked);
    reason.textContent = blocked || "";
    reason.hidden = !blocked;
    if (blocked) mergeButton.setAttribute("aria-describedby", "merge-blocked");
    else mergeButton.removeAttribute("aria-describedby");
  };
  review.updateMergeGate();
  return h(
    "section",
    { class: "panel merge-panel", "aria-labelledby": "merge-panel-title" },
    h("h2", { id: "merge-panel-title" }, "Merge into main"),
    h(
      "p",
      { class: "muted" },
      "Conflicts must be settled first. The preview writes nothing; the merge is one revision of main.",
    ),
    h("div", { class: "actions" }, dryRun, mergeButton),
    reason,
    result,
  );
}
