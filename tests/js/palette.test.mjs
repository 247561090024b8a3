// The colours of app.css, light and dark: text on the backgrounds it is shown on keeps WCAG AA contrast.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const css = readFileSync(new URL("../../src/blockrepo/web/static/css/app.css", import.meta.url), "utf8");

// The custom properties of the first `:root { ... }` after `from` (the light one, or the dark one in the
// prefers-color-scheme block).
function variables(from) {
  const start = css.indexOf(":root {", css.indexOf(from));
  const block = css.slice(start, css.indexOf("}", start));
  return Object.fromEntries(
    [...block.matchAll(/(--[\w-]+):\s*([^;]+);/g)].map(([, name, value]) => [name, value.trim()]),
  );
}

const light = variables("");
const dark = { ...light, ...variables("@media (prefers-color-scheme: dark)") };

function luminance(hex) {
  const digits = hex.length === 4 ? [...hex.slice(1)].map((d) => d + d) : hex.slice(1).match(/../g);
  const [r, g, b] = digits.map((pair) => {
    const channel = parseInt(pair, 16) / 255;
    return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a, b) {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}

// Text colour, the background it is drawn on.
const PAIRS = [
  ["--ink", "--soft"],
  ["--ink", "--panel"],
  ["--ink", "--panel-alt"],
  ["--ink", "--hover"],
  ["--muted", "--panel"],
  ["--muted", "--soft"],
  ["--muted", "--panel-alt"],
  ["--brand", "--panel"],
  ["--brand", "--soft"],
  ["--brand", "--brand-soft"],
  ["--brand-ink", "--brand-fill"],
  ["--brand-ink", "--brand-fill-hover"],
  ["--nav-ink", "--brand-fill"],
  ["--search-ink", "--search-bg"],
  ["--accent-ink", "--accent"],
  ["--danger", "--panel"],
  ["--danger", "--danger-soft"],
  ["--ok", "--panel"],
  ["--ok", "--ok-soft"],
  ["--warn-ink", "--panel"],
  ["--ink", "--warn-bg"],
  ["--ink", "--banner-bg"],
  ["--muted", "--banner-bg"],
  ["--mark-added", "--panel"],
  ["--mark-removed", "--panel"],
  ["--mark-changed", "--panel"],
  ["--toast-ink", "--toast-bg"],
  ["--canvas-ink", "--canvas"],
  ["--canvas-label", "--canvas"],
  ["--canvas-ink", "--canvas-stripe"],
];

test("both palettes define every colour as a hex value", () => {
  for (const [name, palette] of [
    ["light", light],
    ["dark", dark],
  ]) {
    for (const variable of new Set(PAIRS.flat())) {
      assert.match(palette[variable] ?? "", /^#[0-9a-f]{3}(?:[0-9a-f]{3})?$/, `${name} ${variable}`);
    }
  }
});

test("the dark palette changes the page's main colours", () => {
  for (const variable of ["--ink", "--muted", "--soft", "--panel", "--brand", "--canvas", "--toast-bg"]) {
    assert.notEqual(dark[variable], light[variable], variable);
  }
  assert.ok(luminance(dark["--panel"]) < 0.05 && luminance(dark["--soft"]) < 0.05);
});

test("contrast: text at least 4.5:1 (WCAG AA) in both palettes", () => {
  const poor = [];
  for (const [name, palette] of [
    ["light", light],
    ["dark", dark],
  ]) {
    for (const [text, background] of PAIRS) {
      const ratio = contrast(palette[text], palette[background]);
      if (!(ratio >= 4.5)) poor.push(`${name}: ${text} on ${background} ${ratio.toFixed(2)}`);
    }
  }
  assert.deepEqual(poor, []);
});

test("contrast is computed as WCAG defines it", () => {
  assert.equal(contrast("#000", "#fff"), 21);
  assert.equal(contrast("#777777", "#777777"), 1);
  assert.equal(contrast("#767676", "#ffffff").toFixed(2), "4.54");
});
