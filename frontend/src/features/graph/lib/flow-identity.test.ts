import { describe, expect, it } from "vitest";
import { withStartedNode } from "./big-trees";
import { withOneCardAdded } from "./flow-add";
import { carryMeasured, keepLayout, keepUnchanged } from "./flow-identity";
import { buildFlowGraph, type FlowGraph, type Graph } from "./graph";
import { family } from "@/lib/testing/fixtures";

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

describe("keepLayout", () => {
  const forks = [
    { id: "R", turns: 4 },
    { id: "A", parent: "R", bp: 1, turns: 3 },
    { id: "B", parent: "R", bp: 2, turns: 3 },
  ];
  // the family as the page holds it (fetched through A), then fetched through B: the
  // same cards, its threads listed in another order (B's lane before A's)
  const cached = family(forks, "A");
  const viaB = family(forks, "B");
  const fetched: Graph = { ...viaB, threads: [0, 2, 1].map((i) => viaB.threads[i] as Graph["threads"][number]) };
  const places = (flow: FlowGraph) => new Map(flow.cards.map((c) => [c.id, `${c.x},${c.y},${c.lane}`] as const));

  it("keeps the shown places of the same cards joined the same way (a path switch's fetched graph)", () => {
    const shown = buildFlowGraph(cached);
    const next = buildFlowGraph(fetched);
    // (without it, A's and B's cards swap lanes)
    expect(places(next)).not.toEqual(places(shown));
    const kept = keepLayout(shown, next);
    expect(places(kept)).toEqual(places(shown));
    // the rest is the fetched graph's: the displayed path is now B's
    expect(kept.cards.find((c) => c.id === "B:3")?.active).toBe(true);
    expect(kept.cards.find((c) => c.id === "A:2")?.active).toBe(false);
    expect(kept.labels).toBe(next.labels);
    // a card then added to a thread goes into the lane its cards are shown in
    const grown = withStartedNode(fetched, "A:4", "A:3", "one more");
    const added = withOneCardAdded(fetched, grown, kept, fetched.head_turn_id);
    const a3 = kept.cards.find((c) => c.id === "A:3");
    expect(added?.cards.find((c) => c.id === "A:4")).toMatchObject({ lane: a3?.lane, y: a3?.y });
  });

  it("lays out anew when a card is added or gone, or a link changed", () => {
    const shown = buildFlowGraph(cached);
    const more = buildFlowGraph(withStartedNode(fetched, "A:4", "A:3", "one more"));
    expect(keepLayout(shown, more)).toBe(more);
    const fewer = buildFlowGraph({ ...fetched, nodes: fetched.nodes.filter((n) => n.id !== "B:3") });
    expect(keepLayout(shown, fewer)).toBe(fewer);
    const relinked = buildFlowGraph({
      ...fetched,
      edges: fetched.edges.map((e) => (e.target === "B:3" ? { ...e, source: "A:2" } : e)),
    });
    expect(keepLayout(shown, relinked)).toBe(relinked);
    expect(keepLayout(null, more)).toBe(more);
  });

  it("hands back the next layout itself when nothing moved", () => {
    const next = buildFlowGraph(family(forks, "B"));
    expect(keepLayout(buildFlowGraph(cached), next)).toBe(next);
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
