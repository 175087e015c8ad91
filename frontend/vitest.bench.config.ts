import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

// The layout budget: a 5000-node family laid out in at most 50 ms (see graph.perf.ts).
export default defineConfig({
  resolve: { alias: { "@": fileURLToPath(new URL("./src", import.meta.url)) } },
  test: { include: ["src/**/*.perf.ts"], environment: "node" },
});
