// Comments on a scenario under review: the scenario's own thread, and one per changed element (behind a
// button on the element's block), each with a form to add one. Whoever sees the scenario may comment.

import { api, get } from "./api.js";
import { h, toast, uniqueId } from "./dom.js";
import { formatTime } from "./format.js";
import { scenarioPath } from "./paths.js";
import { problemText } from "./scenario-diff.js";
import { commentsLabel, commentThreads } from "./scenario-rules.js";

export async function loadComments(review) {
  const { data } = await get(scenarioPath(review.key, "comments"));
  review.threads = commentThreads(data);
}

function commentList(comments, id) {
  if (!comments.length) return h("p", { class: "muted small", id }, "No comments yet.");
  return h(
    "ol",
    { class: "comment-list", id },
    comments.map((comment) =>
      h(
        "li",
        { class: "comment", "data-comment": comment.id },
        h(
          "p",
          { class: "comment-head" },
          h("strong", {}, comment.author),
          comment.field ? h("span", { class: "chip" }, comment.field) : null,
          h("span", { class: "muted small" }, formatTime(comment.createdAt)),
        ),
        h("p", { class: "comment-text" }, comment.text),
      ),
    ),
  );
}

// A form adding a comment; `fields` (an element's changed fields) offers a field to attach it to.
function commentForm(review, { element = null, fields = [], label, onAdded }) {
  const textId = uniqueId("comment-text");
  const fieldId = uniqueId("comment-field");
  const text = h("textarea", { id: textId, rows: "2", required: true, maxlength: "10000" });
  const field = fields.length
    ? h(
        "select",
        { id: fieldId },
        h("option", { value: "" }, "the whole element"),
        fields.map((name) => h("option", { value: name }, name)),
      )
    : null;
  const error = h("p", { class: "form-error", role: "alert" });
  const submit = h("button", { type: "submit", class: "button" }, "Add comment");
  const onsubmit = async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (!text.value.trim()) {
      error.textContent = "Write a comment first.";
      text.focus();
      return;
    }
    const body = { text: text.value.trim() };
    if (element !== null) body.element = element;
    if (field?.value) body.field = field.value;
    submit.disabled = true;
    try {
      await api("POST", scenarioPath(review.key, "comments"), { body, auth: "relogin" });
      await loadComments(review);
      toast("Comment added");
      onAdded();
    } catch (failure) {
      if (failure.status === 401 && !failure.loginCancelled) throw failure;
      error.textContent = problemText(failure.message, failure.problem);
      submit.disabled = false;
    }
  };
  return h(
    "form",
    { class: "comment-form", onsubmit },
    h("label", { for: textId }, label),
    text,
    field ? h("div", { class: "inline-form" }, h("label", { for: fieldId }, "About"), field) : null,
    h("div", { class: "actions" }, submit),
    error,
  );
}

// The scenario's own thread, as a panel; it draws itself again when a comment is added.
export function scenarioThread(review) {
  const panel = h("section", {
    class: "panel comments-panel",
    id: "scenario-comments",
    "aria-labelledby": "scenario-comments-title",
  });
  const draw = (focusList = false) => {
    const comments = review.threads.scenario;
    panel.replaceChildren(
      h("h2", { id: "scenario-comments-title", tabindex: "-1" }, "Discussion"),
      commentList(comments, "scenario-comment-list"),
      commentForm(review, {
        label: "Comment on the scenario",
        onAdded: () => draw(true),
      }),
    );
    if (focusList) panel.querySelector("h2").focus();
  };
  draw();
  return panel;
}

// An element's comment button and its thread (shown while the button is pressed; kept open on redraws).
export function elementThread(review, item) {
  const id = item.element.id;
  const regionId = `element-comments-${id}`;
  const count = () => review.threads.elements.get(id)?.length || 0;
  const button = h("button", {
    type: "button",
    class: "button subtle comment-toggle",
    "aria-expanded": "false",
    "aria-controls": regionId,
    "aria-describedby": `review-element-${id}`, // which element's comments, to a screen reader
    "data-comments": id,
  });
  const region = h("div", {
    class: "element-comments",
    id: regionId,
    role: "region",
    "aria-label": `Comments on ${item.element.name}`,
    hidden: true,
  });
  const draw = () => {
    button.textContent = commentsLabel(count());
    region.replaceChildren(
      commentList(review.threads.elements.get(id) || [], `element-comment-list-${id}`),
      commentForm(review, {
        element: id,
        fields: item.fields.map((field) => field.field),
        label: `Comment on ${item.element.name}`,
        onAdded: () => {
          draw();
          region.querySelector("textarea").focus();
        },
      }),
    );
  };
  const show = (open) => {
    region.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) review.openThreads.add(id);
    else review.openThreads.delete(id);
  };
  button.addEventListener("click", () => {
    const open = region.hidden;
    show(open);
    if (open) region.querySelector("textarea").focus();
  });
  draw();
  show(review.openThreads.has(id));
  return { button, region };
}
