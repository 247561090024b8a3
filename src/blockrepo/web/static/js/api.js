// The only way the interface talks to the server: blockrepo's public REST API, with the session cookie and
// X-XSRF-TOKEN on every write, and Blockrepo-Scenario on element reads and writes while the tab works in a
// planning scenario. A 401 sends the user to the login page and back to where they were, except where the
// caller keeps its page: a form's write logs in in place and is sent again (`auth: "relogin"`).

import { massdataPath, scenarioScoped, withQuery } from "./paths.js";
import { scenarioKey } from "./workspace.js";

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
let unauthenticatedHandler = () => {};
// Opens the login in place; resolves true when the request may be sent again (see app.js).
let loginHandler = null;
let pendingLogin = null;

export function onUnauthenticated(handler) {
  unauthenticatedHandler = handler;
}

export function onLoginNeeded(handler) {
  loginHandler = handler;
}

// The error of a write whose user closed the login without logging in: nothing was sent, and the form keeps
// what was typed.
class NotLoggedIn extends ApiError {
  constructor(data) {
    super(401, { ...data, detail: "Not saved: you are not logged in. What you typed is still here." });
    this.loginCancelled = true;
  }
}

// Requests that find their session ended at once share one login dialog.
function loggedInAgain() {
  pendingLogin ??= Promise.resolve(loginHandler()).finally(() => {
    pendingLogin = null;
  });
  return pendingLogin;
}

function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

// `auth` says what a 401 does: "page" goes to the login page, "relogin" logs in in place and sends the same
// request once more (with the new session's CSRF token), "quiet" only throws.
export async function api(method, path, { body, query, headers = {}, auth = "page" } = {}) {
  const sent = { "X-Requested-With": "XMLHttpRequest", Accept: "application/json", ...headers };
  if (WRITE_METHODS.has(method)) {
    const token = cookie("XSRF-TOKEN");
    if (token) sent["X-XSRF-TOKEN"] = token;
  }
  const scenario = scenarioKey();
  if (scenario && scenarioScoped(path) && !("Blockrepo-Scenario" in sent))
    sent["Blockrepo-Scenario"] = scenario;
  let payload;
  if (body !== undefined) {
    sent["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const response = await fetch(withQuery(path, query), {
    method,
    headers: sent,
    body: payload,
    credentials: "same-origin",
  });
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  if (response.status === 401) {
    if (auth === "quiet") throw new ApiError(401, data);
    if (auth === "relogin" && loginHandler) {
      if (!(await loggedInAgain())) throw new NotLoggedIn(data);
      return api(method, path, { body, query, headers, auth: "page" });
    }
    unauthenticatedHandler();
    throw new ApiError(401, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return { data, etag: response.headers.get("ETag"), status: response.status };
}

export const get = (path, query) => api("GET", path, { query });

export async function login(username, password) {
  const response = await fetch("/j_service_security_check", {
    method: "POST",
    headers: { "X-Requested-With": "XMLHttpRequest", Accept: "application/json" },
    body: new URLSearchParams({ j_username: username, j_password: password }),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export async function logout() {
  await api("POST", "/j_service_logout").catch(() => null);
}

// Every element of a type (following the cursor), with only the given fields.
export async function allElements(type, fields, filter) {
  const items = [];
  let cursor = null;
  do {
    const { data } = await get(massdataPath(type), {
      fields: fields.join(","),
      limit: 1000,
      cursor,
      filter,
    });
    items.push(...data.items);
    cursor = data.nextCursor;
  } while (cursor);
  return items;
}

// Every element of a type as it will be on a day with the given scenarios (GET /api/projection, following
// the cursor); only the given fields, or all without.
export async function projectedElements(type, at, scenarios, fields) {
  const items = [];
  let cursor = null;
  do {
    const { data } = await get("/api/projection", {
      at,
      type,
      scenarios: scenarios.join(","),
      fields: fields?.join(","),
      limit: 1000,
      cursor,
    });
    items.push(...data.items);
    cursor = data.nextCursor;
  } while (cursor);
  return items;
}
