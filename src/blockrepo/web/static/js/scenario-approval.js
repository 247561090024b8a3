// A scenario's review on its review page: who reviews it and who approved its current version, the
// Approve button for a reviewer, and for its owner (or a supervisor) the form proposing it for review.
// Reviewers are picked from the accounts where the user may list them, else typed as logins.

import { api, get } from "./api.js";
import { h, toast, uniqueId } from "./dom.js";
import { formatTime } from "./format.js";
import { scenarioPath } from "./paths.js";
import { problemText } from "./scenario-diff.js";
import {
  approvalText,
  hasApproved,
  mayApprove,
  mayListUsers,
  mayManage,
  parseLogins,
  reviewerCandidates,
} from "./scenario-rules.js";
import { session } from "./session.js";

// A refusal in words; the owner's own approval gets a sentence of its own.
function refusalText(failure) {
  if (failure.problem?.code === "self_approval") {
    return `You own this scenario, so you cannot approve it (${failure.message}). Ask a reviewer.`;
  }
  return problemText(failure.message, failure.problem);
}

function reviewerList(review) {
  const approvedAt = new Map(review.approvals.map((approval) => [approval.user, approval.approvedAt]));
  return h(
    "ul",
    { class: "reviewer-list", id: "reviewer-list" },
    review.reviewers.map((login) =>
      h(
        "li",
        { "data-reviewer": login, class: approvedAt.has(login) ? "approved" : null },
        h("strong", {}, login),
        " ",
        approvedAt.has(login)
          ? h("span", { class: "approval-yes" }, `approved ${formatTime(approvedAt.get(login))}`)
          : h("span", { class: "muted" }, "not yet approved this version"),
      ),
    ),
    // Approvals by holders of APPROVE_SCENARIOS who are not among the reviewers.
    review.approvals
      .filter((approval) => !review.reviewers.includes(approval.user))
      .map((approval) =>
        h(
          "li",
          { "data-reviewer": approval.user, class: "approved" },
          h("strong", {}, approval.user),
          " ",
          h("span", { class: "approval-yes" }, `approved ${formatTime(approval.approvedAt)}`),
        ),
      ),
  );
}

function statusLine(scenario) {
  const { review } = scenario;
  if (!review) {
    return h(
      "p",
      { id: "review-state", class: "muted" },
      scenario.state === "open"
        ? "Not proposed for review: it may be merged without approvals (unless main is protected)."
        : "Not proposed for review.",
    );
  }
  return h(
    "p",
    { id: "review-state", class: review.approved ? "review-state approved" : "review-state waiting" },
    `${review.requiredApprovals} approval${review.requiredApprovals === 1 ? "" : "s"} of the current ` +
      `version needed: ${approvalText(review)}.`,
  );
}

function approveControls(panel, scenario, error) {
  const login = session.user?.login;
  if (!mayApprove(scenario, session.user)) return null;
  if (hasApproved(scenario.review, login)) {
    return h("p", { id: "approved-by-me" }, "You approved this version.");
  }
  const button = h(
    "button",
    { type: "button", class: "button primary", id: "approve-scenario" },
    "Approve this version",
  );
  button.addEventListener("click", async () => {
    error.textContent = "";
    button.disabled = true;
    try {
      const { data } = await api("POST", scenarioPath(scenario.key, "approvals"));
      toast("Approved");
      panel.update(data);
    } catch (failure) {
      if (failure.status === 401) throw failure;
      error.textContent = refusalText(failure);
      button.disabled = false;
    }
  });
  return h("div", { class: "actions" }, button);
}

// Reviewers to choose from: checkboxes of the accounts, or a text field of logins.
async function reviewerField(scenario) {
  const chosen = new Set(scenario.review?.reviewers || []);
  if (mayListUsers(session.user)) {
    try {
      const { data } = await get("/api/administration/users");
      const boxes = reviewerCandidates(data, scenario.owner).map((user) => {
        const id = uniqueId("reviewer");
        const name = [user.firstName, user.lastName].filter(Boolean).join(" ");
        return h(
          "label",
          { class: "check", for: id },
          h("input", {
            type: "checkbox",
            id,
            name: "reviewer",
            value: user.login,
            checked: chosen.has(user.login),
          }),
          ` ${user.login}`,
          name ? h("span", { class: "muted" }, ` (${name})`) : null,
        );
      });
      const node = h(
        "fieldset",
        { class: "reviewer-choice" },
        h("legend", {}, "Reviewers"),
        boxes.length ? boxes : h("p", { class: "muted" }, "No other accounts."),
      );
      const read = () => [...node.querySelectorAll("input:checked")].map((box) => box.value);
      return { node, read, focus: () => node.querySelector("input")?.focus() };
    } catch (failure) {
      if (failure.status === 401) throw failure; // otherwise fall back to typed logins
    }
  }
  const id = uniqueId("reviewers");
  const hintId = `${id}-hint`;
  const input = h("input", {
    type: "text",
    id,
    name: "reviewers",
    value: [...chosen].join(", "),
    "aria-describedby": hintId,
    autocomplete: "off",
  });
  const node = h(
    "div",
    { class: "field" },
    h("label", { for: id }, "Reviewers"),
    input,
    h("p", { class: "muted small", id: hintId }, "Their logins, separated by commas."),
  );
  return { node, read: () => parseLogins(input.value), focus: () => input.focus() };
}

async function proposeForm(panel, scenario) {
  const reviewers = await reviewerField(scenario);
  const countId = uniqueId("required-approvals");
  const count = h("input", {
    type: "number",
    id: countId,
    min: "1",
    max: "50",
    step: "1",
    required: true,
    value: String(scenario.review?.requiredApprovals || 1),
  });
  const error = h("p", { class: "form-error", role: "alert" });
  const submit = h(
    "button",
    { type: "submit", class: "button", id: "propose-review" },
    scenario.review ? "Change the review" : "Propose for review",
  );
  const onsubmit = async (event) => {
    event.preventDefault();
    error.textContent = "";
    const logins = reviewers.read();
    if (!logins.length) {
      error.textContent = "Choose at least one reviewer.";
      reviewers.focus();
      return;
    }
    const required = Number(count.value);
    if (!Number.isInteger(required) || required < 1 || required > logins.length) {
      error.textContent = `The approvals needed are between 1 and ${logins.length} (the reviewers).`;
      count.focus();
      return;
    }
    submit.disabled = true;
    try {
      const { data } = await api("POST", scenarioPath(scenario.key, "review"), {
        body: { reviewers: logins, requiredApprovals: required },
        auth: "relogin",
      });
      toast("Proposed for review");
      panel.update(data);
    } catch (failure) {
      if (failure.status === 401 && !failure.loginCancelled) throw failure;
      error.textContent = problemText(failure.message, failure.problem);
      submit.disabled = false;
    }
  };
  const form = h(
    "form",
    { class: "propose-form", id: "propose-form", onsubmit },
    reviewers.node,
    h("div", { class: "inline-form" }, h("label", { for: countId }, "Approvals needed"), count),
    h("div", { class: "actions" }, submit),
    error,
  );
  if (!scenario.review) return form;
  return h("details", { class: "propose-details" }, h("summary", {}, "Change reviewers"), form);
}

// The review panel; `onChange(scenario)` hears of a proposal or an approval (the merge button follows).
export async function reviewPanel(review, onChange) {
  const panel = h("section", {
    class: "panel review-panel",
    id: "scenario-review-status",
    "aria-labelledby": "review-status-title",
  });
  const draw = async (scenario) => {
    const error = h("p", { class: "form-error", role: "alert", id: "review-error" });
    const propose =
      scenario.state === "open" && mayManage(scenario, session.user)
        ? await proposeForm(panel, scenario)
        : null;
    const parts = [
      h("h2", { id: "review-status-title", tabindex: "-1" }, "Review"),
      statusLine(scenario),
      scenario.review ? reviewerList(scenario.review) : null,
      approveControls(panel, scenario, error),
      error,
      propose,
    ];
    panel.replaceChildren(...parts.filter(Boolean)); // replaceChildren would write a null as "null"
  };
  // A proposal or an approval moves the focus here; a settled conflict (approvals lapse) does not.
  panel.update = async (scenario, { focus = true } = {}) => {
    review.scenario = scenario;
    await draw(scenario);
    onChange(scenario);
    if (focus) panel.querySelector("h2").focus();
  };
  await draw(review.scenario);
  return panel;
}
