import { describe, expect, it } from "vitest";
import type { Conversation } from "./api/client";
import { buildFlowGraph, type Graph } from "@/features/graph/lib/graph";
import { family } from "./testing/fixtures";
import { familySteps, graphCounts, LABEL_LEGEND, stepsText, whereabouts } from "./where";

function conv(id: string, turn: number, parent: string | null = null, bp: number | null = null): Conversation {
  return {
    thread_id: id,
    root_thread_id: "R",
    title: id,
    name: null,
    objective: null,
    turn_index: turn,
    message_count: turn * 2,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    parent_thread_id: parent,
    branch_point_turn: bp,
    forked_from: null,
  } as Conversation;
}

describe("where am I", () => {
  it("counts real steps and real paths: a path with no step yet is none", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 1, turns: 2 },
        { id: "S", parent: "R", bp: 2, turns: 2 }, // owns no turn: a stub
      ],
      "R",
    );
    const flow = buildFlowGraph(g, {});
    expect(flow.laneCount).toBe(3); // the layout gives the stub a lane
    expect(graphCounts(flow)).toEqual({ steps: 4, paths: 2 });
    expect(graphCounts(null)).toEqual({ steps: 0, paths: 0 });
  });

  it("counts a family's steps on its root's row", () => {
    const list = [conv("R", 5), conv("A", 7, "R", 3), conv("B", 4, "A", 2)];
    expect(familySteps(list, list[0] as Conversation)).toBe(5 + 4 + 2);
    expect(stepsText(1)).toBe("1 step");
    expect(stepsText(11)).toBe("11 steps");
  });

  it("names the path shown and gives its branch point the graph's label", () => {
    const g: Graph = family(
      [
        { id: "R", turns: 4 },
        { id: "A", parent: "R", bp: 2, turns: 4, name: "needle" },
        { id: "N", parent: "A", bp: 3, turns: 4 },
        { id: "D", parent: "A", bp: 4, turns: 4 }, // a restore: a draft with no turn
      ],
      "N",
    );
    const flow = buildFlowGraph(g, { displayedThreadId: "N" });
    const nested = whereabouts(g, flow, "N");
    expect(nested.branchedAt).toBe(flow.labels.get("A:3"));
    expect(nested.branchedAt).toMatch(/^3\.\d+$/);
    expect(nested.name).toBeNull();
    expect(nested.tip).toBe(flow.labels.get("N:4"));
    const named = whereabouts(g, buildFlowGraph(g, { displayedThreadId: "A" }), "A");
    expect(named).toMatchObject({ name: "needle", branchedAt: "2" });
    // a draft speaks for the path it was restored from
    expect(whereabouts(g, flow, "D").name).toBe("needle");
    expect(whereabouts(g, flow, "R").branchedAt).toBeNull();
    expect(whereabouts(undefined, null, "R")).toEqual({
      name: null,
      summary: null,
      branchedAt: null,
      tip: null,
      first: null,
    });
  });

  it("speaks of an unnamed branch by its summary; a name wins", () => {
    const g: Graph = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 1, turns: 3, name: "needle" },
        { id: "B", parent: "R", bp: 2, turns: 4 },
      ],
      "B",
    );
    for (const t of g.threads) t.summary = `summary of ${t.thread_id}`;
    const flow = buildFlowGraph(g, { displayedThreadId: "B" });
    expect(whereabouts(g, flow, "B")).toMatchObject({ name: null, summary: "summary of B", branchedAt: "2" });
    expect(whereabouts(g, flow, "A")).toMatchObject({ name: "needle", summary: null });
    expect(whereabouts(g, flow, "R").summary).toBeNull(); // the main path has its title
    // the short label an unnamed branch goes by: its first own step, as the graph labels it
    expect(whereabouts(g, flow, "B").first).toBe(flow.labels.get("B:3"));
    expect(whereabouts(g, flow, "R").first).toBeNull();
  });

  it("explains every kind of label", () => {
    expect(LABEL_LEGEND.map((l) => l.example)).toEqual(["1, 2, 3", "3.1", "3.2", "5.1.1"]);
  });
});
