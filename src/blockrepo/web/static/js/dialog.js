// Modal dialogs: deleting an element after confirmation (and a tick for its children, if it has any);
// logging in again in place when a save finds its session ended; offering a form's draft back.

import { api, login } from "./api.js";
import { h, toast } from "./dom.js";
import { formatTime, loginFailure } from "./format.js";
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

// --- logging in again in place ---------------------------------------------------------------------------

function loginStep(user, { onLoggedIn, onCancel }) {
  const error = h("p", { class: "form-error", role: "alert", id: "relogin-error" });
  const username = h("input", {
    id: "relogin-username",
    name: "j_username",
    autocomplete: "username",
    required: true,
    value: user || "",
  });
  const password = h("input", {
    id: "relogin-password",
    name: "j_password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const submit = h("button", { type: "submit", class: "button primary", id: "relogin-submit" }, "Log in");
  const onsubmit = async (event) => {
    event.preventDefault();
    submit.disabled = true;
    error.textContent = "";
    try {
      const answer = await login(username.value, password.value);
      password.value = "";
      onLoggedIn(answer?.user ?? username.value);
    } catch (failure) {
      error.textContent = loginFailure(failure.status, failure.message);
      password.select();
      submit.disabled = false;
    }
  };
  const cancel = h(
    "button",
    { type: "button", class: "button subtle", id: "relogin-cancel", onclick: onCancel },
    "Cancel",
  );
  const form = h(
    "form",
    { class: "login-form", id: "relogin-form", onsubmit },
    h("h2", { id: "login-dialog-title" }, "Your session has ended"),
    h("p", {}, "Log in again to save. What you typed stays as it is and is saved once you are logged in."),
    h("div", { class: "field" }, h("label", { for: "relogin-username" }, "User name"), username),
    h("div", { class: "field" }, h("label", { for: "relogin-password" }, "Password"), password),
    error,
    h("div", { class: "form-actions" }, submit, cancel),
  );
  return { form, focus: () => (user ? password : username).focus() };
}

// Someone else logged in than the user who opened the page: their name on it only if they say so.
function otherUserStep(user, opener, { save, again, cancel }) {
  const button = (id, kind, onclick, text) => h("button", { type: "button", class: kind, id, onclick }, text);
  return h(
    "div",
    {},
    h("h2", { id: "login-dialog-title" }, `You are logged in as ${user}`),
    h("p", {}, `${opener} opened this page. Nothing is saved as ${user} unless you choose so.`),
    h("p", {}, `Don't save logs ${user} out again.`),
    h(
      "div",
      { class: "form-actions" },
      button("relogin-again", "button primary", again, `Log in as ${opener}`),
      button("relogin-save-as", "button", save, `Save as ${user}`),
      button("relogin-cancel", "button subtle", cancel, "Don't save"),
    ),
  );
}

// A login in place of the page, for a write that found its session ended. Resolves to null when nobody
// logged in, else to who did and whether the write may be sent again (`retry`): at once for the user who
// opened the page (`opener`), only on request for anyone else.
export function openLoginDialog(opener) {
  return new Promise((resolve) => {
    const dialog = h("dialog", {
      class: "dialog",
      id: "login-dialog",
      "aria-labelledby": "login-dialog-title",
    });
    let loggedInAs = null;
    let retry = false;
    const finish = (send) => {
      retry = send;
      dialog.close();
    };
    const askLogin = (user) => {
      const step = loginStep(user, { onLoggedIn, onCancel: () => finish(false) });
      dialog.replaceChildren(step.form);
      step.focus();
    };
    function onLoggedIn(user) {
      loggedInAs = user;
      if (!opener || user === opener) {
        finish(true);
        return;
      }
      const again = () => askLogin(opener);
      dialog.replaceChildren(
        otherUserStep(user, opener, { save: () => finish(true), again, cancel: () => finish(false) }),
      );
      dialog.querySelector("#relogin-again").focus();
    }
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(loggedInAs === null ? null : { user: loggedInAs, retry });
    });
    document.body.append(dialog);
    dialog.showModal();
    askLogin(opener);
  });
}

// --- a form's draft --------------------------------------------------------------------------------------

// Offers a form's draft back; resolves true to restore it, false to discard it. Closing the dialog any other
// way (Escape) restores: the form can still be cancelled, the work cannot be typed again.
export function offerDraft(savedAt) {
  return new Promise((resolve) => {
    const choose = (choice) => () => dialog.close(choice);
    const dialog = h(
      "dialog",
      { class: "dialog", id: "draft-dialog", "aria-labelledby": "draft-title" },
      h("h2", { id: "draft-title" }, `Restore your unsaved changes from ${formatTime(savedAt)}?`),
      h("p", {}, "You changed this form without saving; this tab kept what you typed."),
      h(
        "div",
        { class: "form-actions" },
        h(
          "button",
          { type: "button", class: "button primary", id: "draft-restore", onclick: choose("restore") },
          "Restore",
        ),
        h(
          "button",
          { type: "button", class: "button subtle", id: "draft-discard", onclick: choose("discard") },
          "Discard",
        ),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue !== "discard");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
