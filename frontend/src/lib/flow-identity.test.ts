import { describe, expect, it } from "vitest";
import { withStartedNode } from "./big-trees";
import { carryMeasured, keepUnchanged } from "./flow-identity";
import { buildFlowGraph, type Graph } from "./graph";
import { family } from "./testing/fixtures";

const specs = [
  { id: "R", turns: 6 },
  { id: "A", parent: "R", bp: 3, turns: 5 },
  { id: "B", parent: "A", bp: 4, turns: 6 },
];

describe("keepUnchanged", () => {
  it("keeps every card and link object of a family that one node was added to", () => {
    const g = family(specs, "R");
    const before = buildFlowGraph(g);
    const grown: Graph = withStartedNode(g, "R:7", "R:6", "one more");
    const after = keepUnchanged(before, buildFlowGraph(grown));
    expect(after.cards).toHaveLength(before.cards.length + 1);
    const old = new Map(before.cards.map((c) => [c.id, c] as const));
    for (const card of after.cards) {
      if (card.id === "R:7") expect(old.has(card.id)).toBe(false);
      else expect(card).toBe(old.get(card.id));
    }
    const oldLinks = new Map(before.links.map((l) => [l.id, l] as const));
    for (const link of after.links) if (link.target !== "R:7") expect(link).toBe(oldLinks.get(link.id));
  });

  it("replaces a card whose values changed, and compares codes item by item", () => {
    const g = family(specs, "R");
    const before = buildFlowGraph(g);
    const changed: Graph = {
      ...g,
      nodes: g.nodes.map((n) =>
        n.id === "A:5" ? { ...n, state: "error" } : n.id === "R:2" ? { ...n, codes: [...(n.codes ?? [])] } : n,
      ),
    };
    const after = keepUnchanged(before, buildFlowGraph(changed));
    const card = (flow: typeof after, id: string) => flow.cards.find((c) => c.id === id);
    expect(card(after, "A:5")).not.toBe(card(before, "A:5"));
    expect(card(after, "A:5")?.state).toBe("error");
    expect(card(after, "R:2")).toBe(card(before, "R:2"));
    const coded = keepUnchanged(before, buildFlowGraph({ ...g, nodes: g.nodes.map((n) => ({ ...n, codes: ["x"] })) }));
    expect(card(coded, "R:2")).not.toBe(card(before, "R:2"));
  });

  it("replaces only a thread's first card when its summary or name changes (the card that shows them)", () => {
    const g = family(specs, "R");
    const before = buildFlowGraph(g);
    const summarised: Graph = {
      ...g,
      threads: g.threads.map((t) => (t.thread_id === "A" ? { ...t, summary: "a new summary", name: "formal" } : t)),
    };
    const after = keepUnchanged(before, buildFlowGraph(summarised));
    const old = new Map(before.cards.map((c) => [c.id, c] as const));
    const replaced = after.cards.filter((c) => c !== old.get(c.id)).map((c) => c.id);
    expect(replaced).toEqual(["A:4"]);
    expect(after.cards.find((c) => c.id === "A:4")).toMatchObject({
      threadSummary: "a new summary",
      threadName: "formal",
    });
  });

  it("takes the next flow as it is without a previous one", () => {
    const next = buildFlowGraph(family(specs, "R"));
    expect(keepUnchanged(null, next)).toBe(next);
  });
});

interface Node {
  id: string;
  type?: string;
  position: { x: number; y: number };
  data: unknown;
  measured?: { width?: number; height?: number };
  selected?: boolean;
}

describe("carryMeasured", () => {
  const at = (x: number) => ({ x, y: 0 });
  it("keeps the measured size of a card that is replaced by a new object", () => {
    const previous: Node[] = [
      { id: "a", position: at(0), data: {}, measured: { width: 200, height: 90 } },
      { id: "b", position: at(1), data: {}, measured: { width: undefined, height: undefined } },
      { id: "c", position: at(2), data: {} },
    ];
    const next: Node[] = [
      { id: "a", position: at(0), data: {} },
      { id: "b", position: at(1), data: {} },
      { id: "c", position: at(2), data: {} },
      { id: "d", position: at(3), data: {} },
      { id: "e", position: at(4), data: {}, measured: { width: 1, height: 2 } },
    ];
    const merged = carryMeasured(previous, next);
    expect(merged.map((n) => n.measured)).toEqual([
      { width: 200, height: 90 },
      undefined,
      undefined,
      undefined,
      { width: 1, height: 2 },
    ]);
    expect(merged[3]).toBe(next[3]);
  });

  it("hands back the previous node itself when its data object and place are unchanged", () => {
    const data = { card: "a" };
    const held: Node = {
      id: "a",
      type: "commit",
      position: at(0),
      data,
      measured: { width: 200, height: 90 },
      selected: true,
    };
    const merged = carryMeasured([held], [{ id: "a", type: "commit", position: at(0), data }]);
    expect(merged[0]).toBe(held);
  });

  it("puts a dragged card back in its place, with its size", () => {
    const data = { card: "a" };
    const dragged: Node = { id: "a", position: { x: 40, y: 70 }, data, measured: { width: 200, height: 90 } };
    const [back] = carryMeasured([dragged], [{ id: "a", position: at(0), data }]);
    expect(back?.position).toEqual(at(0));
    expect(back?.measured).toEqual({ width: 200, height: 90 });
  });
});
