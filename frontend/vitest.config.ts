import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

export default defineConfig({
  resolve: { alias: { "@": fileURLToPath(new URL("./src", import.meta.url)) } },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
    coverage: {
      provider: "v8",
      // the pure modules: the shared ones and every feature's lib
      include: ["src/lib/**/*.ts", "src/features/*/lib/**/*.ts"],
      exclude: ["src/**/*.test.ts", "src/**/*.perf.ts", "src/lib/testing/**", "src/lib/api/schema.d.ts"],
      reporter: ["text-summary", "text"],
      thresholds: { lines: 90 },
    },
  },
});
