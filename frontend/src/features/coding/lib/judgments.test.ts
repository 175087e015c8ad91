import { describe, expect, it } from "vitest";
import { areSiblings, judgmentText, judgmentsOf, parentOf, rivals, type Judgment } from "./judgments";
import { DATASETS, datasetFileName } from "./exports";

const j = (a: string, b: string, preferred: "a" | "b" | "tie", criterion: string | null = null): Judgment => ({
  id: 1,
  a,
  b,
  preferred,
  criterion,
  rationale: null,
  judge: "ada",
  created_at: "2026-12-06T20:00:00Z",
});
const label = (n: string) => n.slice(n.indexOf(":") + 1);

describe("judgments", () => {
  it("reads a judgment either way round, and a tie", () => {
    expect(judgmentText(j("t:2", "u:2", "a", "clarity"), label)).toBe("Step 2 is better than step 2 (clarity)");
    expect(judgmentText(j("t:1", "u:3", "b"), label)).toBe("Step 3 is better than step 1");
    expect(judgmentText(j("t:1", "u:3", "tie"), label)).toBe("Steps 1 and 3 are as good as each other");
  });

  it("the rivals of a step and the judgments naming it", () => {
    expect(rivals("b", ["a", "b", "c"])).toEqual(["a", "c"]);
    const all = [j("a", "b", "a"), j("c", "d", "tie")];
    expect(judgmentsOf(all, "b")).toHaveLength(1);
    expect(judgmentsOf(all, "x")).toHaveLength(0);
  });
});

describe("siblings on the graph", () => {
  const edges = [
    { source: "R:1", target: "R:2", kind: "turn" },
    { source: "R:1", target: "B:2", kind: "branch" },
    { source: "R:2", target: "R:3", kind: "turn" },
    { source: "B:2", target: "R:3", kind: "merge" },
  ];
  it("the same parent, or both first steps; a merge edge is no parent", () => {
    expect(parentOf(edges, "R:3")).toBe("R:2");
    expect(parentOf(edges, "R:1")).toBeNull();
    expect(areSiblings(edges, "R:2", "B:2")).toBe(true);
    expect(areSiblings(edges, "R:1", "C:1")).toBe(true);
    expect(areSiblings(edges, "R:2", "R:3")).toBe(false);
    expect(areSiblings(edges, "R:2", "R:2")).toBe(false);
  });
});

describe("dataset exports", () => {
  it("names each file after the family's export name", () => {
    const base = "haico-bike-lanes-2026-12-06.csv";
    expect(datasetFileName(base, "qdpx")).toBe("haico-bike-lanes-2026-12-06.qdpx");
    expect(datasetFileName(base, "parquet")).toBe("haico-bike-lanes-2026-12-06.parquet");
    expect(datasetFileName(base, "tree")).toBe("haico-bike-lanes-2026-12-06-tree.jsonl");
    expect(datasetFileName(base, "preferences")).toBe("haico-bike-lanes-2026-12-06-preferences.jsonl");
    expect(DATASETS.map((d) => d.dataset)).toEqual(["qdpx", "tree", "preferences", "parquet"]);
  });
});
