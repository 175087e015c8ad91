// ESLint (flat config): the JavaScript and TypeScript recommended rules, the rules of
// hooks with complete effect dependencies as errors, and the studio's two boundaries:
// a hook imports no component, and only the typed client (src/lib/api) talks to the
// server. Formatting is Prettier's.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["out/", ".next/", "coverage/", "test-results/", "next-env.d.ts", "src/lib/api/schema.d.ts"],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ["src/**/*.{ts,tsx}"],
    plugins: { "react-hooks": reactHooks },
    languageOptions: { globals: globals.browser },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
    },
  },
  {
    // Only the typed client reaches the network: its token, its one 401 handler, its
    // encoding of ids in paths.
    files: ["src/**/*.{ts,tsx}"],
    ignores: ["src/lib/api/**"],
    rules: {
      "no-restricted-globals": [
        "error",
        { name: "fetch", message: "Requests go through the typed client (src/lib/api)." },
        { name: "XMLHttpRequest", message: "Requests go through the typed client (src/lib/api)." },
        { name: "EventSource", message: "Streams go through the typed client (src/lib/api)." },
      ],
      "no-restricted-properties": [
        "error",
        { object: "window", property: "fetch", message: "Requests go through the typed client (src/lib/api)." },
        { object: "globalThis", property: "fetch", message: "Requests go through the typed client (src/lib/api)." },
        { object: "self", property: "fetch", message: "Requests go through the typed client (src/lib/api)." },
      ],
    },
  },
  {
    // A hook imports no component: types a hook shares with a component live in the
    // hook or in a lib.
    files: ["src/hooks/**/*.{ts,tsx}", "src/features/*/hooks/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^@/components/|^@/features/[^/]+/components/|(^|/)components/|^\\.\\./components$)",
              message: "A hook imports no component: move the shared type into the hook or a lib.",
            },
          ],
        },
      ],
    },
  },
  {
    // The browser tests run under node and hand functions to the page.
    files: ["tests/**/*.mjs", "*.config.{ts,mjs}"],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
);
