// ESLint (flat config): the JavaScript and TypeScript recommended rules, and the rules
// of hooks with complete effect dependencies as errors. Formatting is Prettier's.
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
    // The browser tests run under node and hand functions to the page.
    files: ["tests/**/*.mjs", "*.config.{ts,mjs}"],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
);
