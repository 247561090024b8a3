// ESLint 9 flat config for the web interface's modules (browser), their unit tests and scripts (Node).
// `make lint` runs it; formatting is Prettier's (.prettierrc.json), so no stylistic rule is set here.

import js from "@eslint/js";
import globals from "globals";

// The interface writes text only (dom.js `h`, textContent): anything that parses a string as HTML is refused.
const NO_HTML = [
  ...["innerHTML", "outerHTML", "insertAdjacentHTML", "createContextualFragment", "setHTMLUnsafe"].map(
    (property) => ({
      property,
      message: "The interface writes text only: build nodes with h() from dom.js.",
    }),
  ),
  ...["write", "writeln"].map((property) => ({
    object: "document",
    property,
    message: "The interface writes text only: build nodes with h() from dom.js.",
  })),
];

const BUG_RULES = {
  "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
  "no-undef": "error",
  eqeqeq: ["error", "always"],
  "no-restricted-properties": ["error", ...NO_HTML],
  "no-eval": "error",
  "no-implied-eval": "error",
  "no-new-func": "error",
  "no-shadow": "error",
  "no-use-before-define": ["error", { functions: false, classes: true, variables: false }],
  "no-promise-executor-return": "error",
  "no-self-compare": "error",
  "no-template-curly-in-string": "error",
  "no-unmodified-loop-condition": "error",
  "no-unreachable-loop": "error",
  "no-constant-binary-expression": "error",
  "no-var": "error",
  "prefer-const": "error",
  "no-mixed-operators": ["error", { groups: [["&&", "||", "??"]] }],
  // Views are split into components: a function that builds a whole page from 150 lines is not one.
  "max-lines-per-function": ["error", { max: 60, skipBlankLines: true, skipComments: true }],
  // Prettier breaks code at 110 columns but leaves long strings alone; this catches those.
  "max-len": ["error", { code: 110, ignoreUrls: true, ignoreRegExpLiterals: true }],
};

export default [
  {
    ignores: ["node_modules/", ".venv/", "src/blockrepo/web/static/vendor/", "build/", "dist/", "artifacts/"],
  },
  js.configs.recommended,
  {
    files: ["src/blockrepo/web/static/js/**/*.js"],
    languageOptions: { ecmaVersion: 2023, sourceType: "module", globals: { ...globals.browser } },
    rules: BUG_RULES,
  },
  {
    files: ["tests/js/**/*.mjs", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2023, sourceType: "module", globals: { ...globals.node } },
    rules: { ...BUG_RULES, "max-lines-per-function": "off" },
  },
];
