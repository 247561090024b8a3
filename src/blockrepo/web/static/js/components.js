// Page parts several views share: the breadcrumb trail, page heads, enum values as coloured pills, the
// dash of an empty value and the "as of" banner.

import { h } from "./dom.js";
import { EMPTY } from "./format.js";
import { literalColor } from "./palette.js";
import { href, listRoute } from "./paths.js";

// "Landscape / <type> / … /": the type links to its list, each further [label, route] to its page.
export function crumbs(type, typeName, ...more) {
  return h(
    "p",
    { class: "crumbs" },
    h("a", { href: "#/" }, "Landscape"),
    " / ",
    h("a", { href: href(listRoute(type)) }, typeName),
    more.map(([label, route]) => [" / ", h("a", { href: href(route) }, label)]),
    " /",
  );
}

// The head of a page: its title block on the left, actions (if any) on the right.
export function pageHead(...children) {
  return h("div", { class: "page-head" }, ...children);
}

export function pill(property, value) {
  const color = literalColor(property, value);
  return h("span", { class: "pill", style: color ? `--pill:${color}` : null }, value);
}

export function emptyValue(tag = "span") {
  return h(tag, { class: "empty-value" }, EMPTY);
}

// Shown above a page read "as of" an earlier revision or time, with the way back to today.
export function asOfBanner(asOf, todayRoute, attrs = {}) {
  return h(
    "p",
    { class: "notice asof-banner", ...attrs },
    `As the repository stood at ${asOf}. `,
    h("a", { href: href(todayRoute) }, "Back to today"),
  );
}
