// API paths, the interface's hash routes and their query strings. No DOM, no network
// (tests/js/paths.test.mjs).

// A path with the given query; empty, null and undefined values are left out.
export function withQuery(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export function elementPath(type, id) {
  return `/api/element/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;
}

export function massdataPath(type) {
  return `/api/massdata/${encodeURIComponent(type)}`;
}

export function historyPath(type, id) {
  return `/api/history/${encodeURIComponent(type)}/${id}`;
}

export function scenarioPath(key, action = "") {
  return `/api/scenarios/${encodeURIComponent(key)}${action ? `/${action}` : ""}`;
}

// Whether a request works in the scenario the tab is in: the element routes do (read and write); lists,
// search, history and the rest of the API know no scenario yet and answer with main.
export function scenarioScoped(path) {
  if (path === "/api/element" || path.startsWith("/api/element/")) return true;
  // An element's or a type's history reads the scenario; the feed and landscape diffs are main's (and
  // refuse the header); the stream names its scenario in its query (an EventSource sends no headers).
  const history = /^\/api\/history\/([^/?]+)(\/\d+)?$/.exec(path);
  if (history !== null) return !["diff", "stream"].includes(history[1]);
  // Lists and queries read the scenario; export and import work on main only (and refuse the header).
  const massdata = /^\/api\/massdata\/([^/?]+)$/.exec(path);
  return massdata !== null && !["export", "import"].includes(massdata[1]);
}

// Routes of the interface, as used in `navigate` (no "#") and in links (with it).
export const elementRoute = (type, id) => `/element/${encodeURIComponent(type)}/${id}`;
export const listRoute = (type) => `/list/${encodeURIComponent(type)}`;
export const scenariosRoute = "/scenarios";
export const scenarioRoute = (key) => `/scenarios/${encodeURIComponent(key)}`;
export const href = (route, query) => `#${withQuery(route, query)}`;

// The location hash split into route and query.
export function parseHash(hash) {
  const text = hash.replace(/^#/, "") || "/";
  const [path, queryText = ""] = text.split("?");
  return { path, query: new URLSearchParams(queryText), hash: text };
}

// The first route whose pattern matches, with the matched parts decoded.
export function matchRoute(routes, path) {
  const found = routes.find(([pattern]) => pattern.test(path));
  if (!found) return null;
  return { params: path.match(found[0]).slice(1).map(decodeURIComponent), target: found[1] };
}

// Where to go after logging in: only a route of this page, and never the login page again.
export function safeNext(next) {
  return next && next.startsWith("#/") && !next.startsWith("#/login") ? next : "#/";
}

// Whether a top-bar link (data-nav) belongs to the route shown.
export function navActive(nav, path) {
  return (
    (nav === "home" && (path === "/" || path.startsWith("/list"))) ||
    path.endsWith(`/${nav}`) ||
    path.startsWith(`/${nav}/`)
  );
}
