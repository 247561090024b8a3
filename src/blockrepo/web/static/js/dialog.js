// Deleting an element, after confirmation in a modal dialog (and a tick for its children, if it has any).

import { api } from "./api.js";
import { h, toast } from "./dom.js";
import { elementPath } from "./paths.js";

async function deleteElement(type, element, recursive) {
  await api("DELETE", elementPath(type, element.id[0]), {
    query: { recursive: recursive ? "true" : "" },
    headers: { "If-Match": `W/"${element.revision[0]}"` },
  });
}

function dialogBody(element, children, recursive, error) {
  return [
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
  ];
}

export function openDeleteDialog(type, element, done) {
  const children = element.children || [];
  const recursive = h("input", { type: "checkbox", id: "delete-recursive" });
  const error = h("p", { class: "form-error", role: "alert" });
  const onsubmit = async (event) => {
    if (event.submitter?.value !== "delete") return;
    event.preventDefault();
    if (children.length && !recursive.checked) {
      error.textContent = "Tick the box to delete its children too.";
      recursive.focus();
      return;
    }
    try {
      await deleteElement(type, element, children.length > 0);
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
  };
  const form = h("form", { method: "dialog", onsubmit }, dialogBody(element, children, recursive, error));
  const dialog = h("dialog", { class: "dialog", "aria-labelledby": "delete-title" }, form);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}
