import { describe, expect, it } from "vitest";
import { activePathGuide, buildFlowGraph, firstOwned, ownerOf, ownsNoTurn, tipNodeId } from "./graph";
import { family } from "@/lib/testing/fixtures";

// A fork of another family at step 2: its root owns turns 3 and later; turns 1 and 2
// are the source family's steps, which this family's graph does not draw.
describe("a forked family", () => {
  const g = family(
    [
      { id: "F", forkedAt: 2, turns: 4 },
      { id: "A", parent: "F", bp: 3, turns: 4 },
    ],
    "F",
  );
  const byId = new Map(g.threads.map((t) => [t.thread_id, t]));

  it("owns only the turns after its fork point", () => {
    expect(firstOwned(byId.get("F")!)).toBe(3);
    expect(firstOwned(byId.get("A")!)).toBe(4);
    expect(ownerOf(byId, "F", 2)).toBeNull();
    expect(ownerOf(byId, "A", 1)).toBeNull();
    expect(ownerOf(byId, "A", 3)).toBe("F");
    expect(ownerOf(byId, "A", 4)).toBe("A");
    expect(ownsNoTurn(byId.get("F")!)).toBe(false);
  });

  it("puts the path name on the fork's first own card and labels from its fork point", () => {
    const flow = buildFlowGraph(g);
    const cards = new Map(flow.cards.map((c) => [c.id, c]));
    expect(cards.get("F:3")).toMatchObject({ label: "3", firstOfThread: true });
    expect(cards.get("F:4")).toMatchObject({ label: "4", firstOfThread: false });
    expect(cards.get("A:4")).toMatchObject({ label: "4.1", firstOfThread: true });
  });

  it("guides the chat through its own steps only: an inherited turn is no step to restore", () => {
    const flow = buildFlowGraph(g);
    const guide = activePathGuide(g, flow, "F");
    expect([...guide.values()].map((s) => [s.turn, s.nodeId, s.label])).toEqual([
      [3, "F:3", "3"],
      [4, "F:4", "4"],
    ]);
    expect(guide.get(3)?.offshoots.map((o) => [o.threadId, o.label])).toEqual([["A", "4.1"]]);
    expect(activePathGuide(g, flow, "A").get(2)).toBeUndefined();
  });

  it("has no step to open while it owns none (a fresh fork)", () => {
    const fresh = family([{ id: "F", forkedAt: 2, turns: 2 }], "F", { head: null });
    const root = fresh.threads[0]!;
    expect(ownsNoTurn(root)).toBe(true);
    expect(tipNodeId(fresh, "F")).toBeNull();
    const flow = buildFlowGraph(fresh);
    expect(flow.cards).toEqual([]);
    expect(activePathGuide(fresh, flow, "F").size).toBe(0);
  });
});
