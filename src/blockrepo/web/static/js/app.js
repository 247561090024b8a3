// The single-page shell: hash routes, the top bar, the login page and the landscape overview.

import { ApiError, login, logout, onLoginNeeded, onUnauthenticated, get } from "./api.js";
import { pageHead } from "./components.js";
import { openLoginDialog } from "./dialog.js";
import { h, clear, toast } from "./dom.js";
import { stopKeepAlive } from "./keepalive.js";
import { stopWatching, watchElement } from "./live.js";
import { loginFailure } from "./format.js";
import { searchFilter } from "./iteraql.js";
import {
  elementRoute,
  href,
  listRoute,
  massdataPath,
  matchRoute,
  navActive,
  parseHash,
  safeNext,
} from "./paths.js";
import { session, loadSession, resetSession, visibleTypes, hasFunction } from "./session.js";
import { renderList } from "./list.js";
import { renderElement, renderHistory } from "./element.js";
import { renderEditor } from "./form.js";
import { renderFlows, renderNeighbourhood, renderRoadmap } from "./diagrams.js";
import { drawScenarioBar, onScenarioSwitch, setUpScenarioMenu } from "./scenario-bar.js";
import { renderScenarioList } from "./scenarios.js";
import { renderScenarioReview } from "./scenario-review.js";
import { leaveScenario, scenarioKey } from "./workspace.js";

const main = document.getElementById("main");

const routes = [
  [/^\/$/, () => renderHome],
  [/^\/search$/, () => renderSearch],
  [/^\/list\/([^/]+)$/, () => renderList],
  [/^\/element\/([^/]+)\/(\d+)$/, () => renderElement],
  [/^\/element\/([^/]+)\/(\d+)\/edit$/, () => renderEditor],
  [/^\/new\/([^/]+)$/, () => renderEditor],
  [/^\/history\/([^/]+)\/(\d+)$/, () => renderHistory],
  [/^\/diagram\/flows$/, () => renderFlows],
  [/^\/diagram\/roadmap$/, () => renderRoadmap],
  [/^\/diagram\/neighbourhood\/([^/]+)\/(\d+)$/, () => renderNeighbourhood],
  [/^\/scenarios$/, () => renderScenarioList],
  [/^\/scenarios\/([^/]+)$/, () => renderScenarioReview],
];

export function currentRoute() {
  return parseHash(location.hash);
}

export function navigate(path, query = {}) {
  location.hash = href(path, query);
}

function sendToLogin() {
  const { path, hash } = currentRoute();
  if (path === "/login") return;
  resetSession();
  barDrawn = false;
  location.hash = `#/login?next=${encodeURIComponent(`#${hash}`)}`;
}

onUnauthenticated(sendToLogin);

// A form's write that found its session ended logs in in place (dialog.js) and is sent again, as the user
// who opened the page, or as someone else only if they say so (the page then learns who is logged in).
// Someone else's login that is not to save is ended again: a later Save asks for a login once more
// instead of acting as them.
async function logInInPlace() {
  const opener = session.user?.login ?? null;
  const outcome = await openLoginDialog(opener);
  if (outcome && outcome.user !== opener && !outcome.retry) {
    await logout();
    return false;
  }
  if (outcome && outcome.user !== opener) {
    resetSession();
    try {
      await loadSession();
      showTopbar(true);
    } catch {
      return false; // the new session could not be read: the write is not sent
    }
  }
  return outcome?.retry === true;
}

onLoginNeeded(logInInPlace);

let renderCount = 0;
let barDrawn = false;

// The scenario menu and banner: awaited the first time after login (the tab's scenario is checked before a
// page reads in it), drawn beside the page after that. False when the page cannot be drawn.
async function scenarioBarDrawn() {
  const drawing = drawScenarioBar();
  if (barDrawn) {
    drawing.catch((error) => {
      if (!(error instanceof ApiError && error.status === 401)) toast(error.message, "error");
    });
    return true;
  }
  try {
    await drawing;
    barDrawn = true;
    return true;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) showFailure(error);
    return false;
  }
}

async function route() {
  const { path, query } = currentRoute();
  const ticket = ++renderCount;
  stopWatching();
  stopKeepAlive();
  if (path === "/login") {
    showTopbar(false);
    renderLogin(query);
    return;
  }
  if (!session.user) {
    try {
      await loadSession();
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) showFailure(error);
      return;
    }
  }
  showTopbar(true);
  if (!(await scenarioBarDrawn())) return;
  if (ticket !== renderCount) return;
  const match = matchRoute(routes, path);
  if (!match) {
    clear(main).append(
      h(
        "section",
        { class: "panel" },
        h("h1", {}, "Page not found"),
        h("p", {}, h("a", { href: "#/" }, "Back to the landscape")),
      ),
    );
    return;
  }
  const { params } = match;
  const view = match.target();
  clear(main).append(h("p", { class: "loading" }, "Loading…"));
  try {
    const content = await view({ params, query, navigate, isCurrent: () => ticket === renderCount });
    if (ticket !== renderCount) return;
    clear(main).append(content);
    main.dataset.page = path.split("/")[1] || "home";
    // Read by bench/web_pages.py: when a view's data arrived and was drawn, on the page's own clock.
    performance.mark("blockrepo:view-rendered", { detail: path });
    document.title = `${main.querySelector("h1")?.textContent || "blockrepo"} · blockrepo`;
    watchShownElement(ticket);
  } catch (error) {
    if (ticket === renderCount && !(error instanceof ApiError && error.status === 401)) showFailure(error);
  }
}

// An element page (not as of a past revision) draws itself again when someone changes the element.
function watchShownElement(ticket) {
  const page = main.querySelector(".element-page");
  if (!page || page.dataset.asOf || !hasFunction("VIEW_HISTORY")) return;
  const revision = Number(page.dataset.revision);
  const scenario = scenarioKey();
  const onChange = (change) => {
    if (ticket !== renderCount) return;
    stopWatching();
    toast(
      scenario
        ? `${change.user} changed this element in the scenario`
        : `${change.user} changed this element (revision ${change.revision})`,
    );
    route();
  };
  watchElement(page.dataset.type, page.dataset.id, revision, onChange, scenario);
}

function showFailure(error) {
  clear(main).append(
    h(
      "section",
      { class: "panel error-panel", role: "alert" },
      h(
        "h1",
        {},
        error instanceof ApiError
          ? `${error.status}: ${error.problem.title || "Request failed"}`
          : "Something went wrong",
      ),
      h("p", {}, error.message),
      h("p", {}, h("a", { href: "#/" }, "Back to the landscape")),
    ),
  );
}

function showTopbar(visible) {
  const bar = document.getElementById("topbar");
  bar.hidden = !visible;
  if (!visible) document.getElementById("scenario-banner").hidden = true;
  if (visible && session.user) {
    document.getElementById("current-user").textContent = session.user.login;
    const { path } = currentRoute();
    for (const link of bar.querySelectorAll("[data-nav]")) {
      if (navActive(link.dataset.nav, path)) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }
}

function loginForm(next) {
  const error = h("p", { class: "form-error", role: "alert", id: "login-error" });
  const username = h("input", {
    id: "j_username",
    name: "j_username",
    autocomplete: "username",
    required: true,
    autofocus: true,
  });
  const password = h("input", {
    id: "j_password",
    name: "j_password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const submit = h("button", { type: "submit", class: "button primary wide" }, "Log in");
  const onsubmit = async (event) => {
    event.preventDefault();
    submit.disabled = true;
    error.textContent = "";
    try {
      await login(username.value, password.value);
      resetSession();
      location.hash = safeNext(next);
    } catch (failure) {
      error.textContent = loginFailure(failure.status, failure.message);
      password.select();
    } finally {
      submit.disabled = false;
    }
  };
  const form = h(
    "form",
    { class: "login-form", method: "post", action: "/j_service_security_check", onsubmit },
    h("div", { class: "field" }, h("label", { for: "j_username" }, "User name"), username),
    h("div", { class: "field" }, h("label", { for: "j_password" }, "Password"), password),
    error,
    submit,
  );
  return { form, username };
}

function renderLogin(query) {
  const { form, username } = loginForm(query.get("next") || "#/");
  const brand = h(
    "div",
    { class: "login-brand" },
    h("img", { src: "/web/icon.svg", alt: "", width: 40, height: 40 }),
    h("span", {}, "blockrepo"),
  );
  clear(main).append(
    h(
      "section",
      { class: "login-page" },
      h(
        "div",
        { class: "login-card" },
        brand,
        h("h1", {}, "Log in"),
        h("p", { class: "muted" }, "Your enterprise-architecture repository."),
        form,
      ),
    ),
  );
  main.dataset.page = "login";
  document.title = "Log in · blockrepo";
  username.focus();
}

// The landscape as an ArchiMate model for Archi and other modelling tools (GET /api/exchange/archimate).
function archimateExport() {
  if (!hasFunction("EXPORT")) return null;
  return h(
    "a",
    {
      class: "button",
      href: "/api/exchange/archimate",
      download: "landscape-archimate.xml",
      id: "export-archimate",
    },
    "Export ArchiMate model",
  );
}

async function renderHome({ isCurrent }) {
  const types = visibleTypes();
  const counted = hasFunction("MASSDATA");
  const grid = h("ul", { class: "type-grid" });
  for (const type of types) {
    const count = h("span", { class: "count", "data-count-of": type.name }, counted ? "…" : "");
    grid.append(
      h(
        "li",
        {},
        h(
          "a",
          { class: "type-card", href: href(listRoute(type.name)), "data-type": type.name },
          h("span", { class: "abbr" }, type.abbreviation || type.name.slice(0, 2)),
          h("span", { class: "type-name" }, type.displayName || type.name),
          count,
        ),
      ),
    );
    if (counted) {
      get(massdataPath(type.name), { limit: 1, fields: "id", count: "true" })
        .then(({ data }) => {
          if (isCurrent()) count.textContent = `${data.total.toLocaleString()} elements`;
        })
        .catch(() => {
          count.textContent = "";
        });
    }
  }
  return h(
    "div",
    {},
    pageHead(
      h(
        "div",
        {},
        h("h1", {}, "Landscape"),
        h("p", { class: "muted" }, `${types.length} building block types`),
      ),
      h("div", { class: "actions" }, archimateExport()),
    ),
    counted
      ? null
      : h(
          "p",
          { class: "notice" },
          "Lists and search need the MASSDATA permission; open elements from their links.",
        ),
    grid,
  );
}

// Up to eight matches of one type, and how many there are; nothing when the type cannot be listed.
async function searchType(type, text) {
  try {
    const { data } = await get(massdataPath(type.name), {
      filter: searchFilter(text),
      fields: "name,description",
      limit: 8,
      count: "true",
      sort: "name",
    });
    return { type, data };
  } catch (error) {
    if (error.status === 401) throw error;
    return { type, data: { items: [], total: 0 } };
  }
}

function searchGroup(type, data, text) {
  const more =
    data.total > data.items.length
      ? h(
          "a",
          { href: `${href(listRoute(type.name))}?q=${encodeURIComponent(text)}` },
          `all ${data.total} in ${type.displayName}`,
        )
      : null;
  const item = (found) =>
    h(
      "li",
      {},
      h("a", { href: href(elementRoute(type.name, found.id[0])) }, found.name[0]),
      found.description?.[0]
        ? h("span", { class: "muted" }, ` — ${found.description[0].slice(0, 120)}`)
        : null,
    );
  return h(
    "section",
    { class: "panel search-group", "data-type": type.name },
    h("h2", {}, type.displayName, h("span", { class: "badge" }, String(data.total))),
    h("ul", { class: "result-list" }, data.items.map(item)),
    more,
  );
}

async function renderSearch({ query }) {
  const text = (query.get("q") || "").trim();
  document.getElementById("global-search-input").value = text;
  const section = h("div", {}, pageHead(h("h1", {}, `Search: “${text}”`)));
  if (!text) return section;
  const results = await Promise.all(visibleTypes().map((type) => searchType(type, text)));
  const found = results.filter(({ data }) => data.items.length);
  if (!found.length) section.append(h("p", { class: "empty" }, "Nothing matches."));
  for (const { type, data } of found) section.append(searchGroup(type, data, text));
  return section;
}

document.getElementById("global-search").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate("/search", { q: document.getElementById("global-search-input").value.trim() });
});

document.getElementById("logout").addEventListener("click", async () => {
  await logout();
  resetSession();
  leaveScenario();
  barDrawn = false;
  toast("You are logged out.");
  location.hash = "#/login";
});

onScenarioSwitch(route);
setUpScenarioMenu();
window.addEventListener("hashchange", route);
route();
