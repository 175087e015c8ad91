import { describe, expect, it } from "vitest";
import {
  activePathGuide,
  buildFlowGraph,
  formatLabel,
  ownerOf,
  stepBefore,
  threadSuffixes,
  tipNodeId,
  X_GAP,
  Y_GAP,
  type FlowCard,
  type Graph,
} from "./graph";
import { family, minute } from "@/lib/testing/fixtures";

function labelsOf(graph: Graph, createdAt?: Map<string, number>): Record<string, string> {
  const flow = buildFlowGraph(graph, { createdAt });
  return Object.fromEntries(flow.cards.map((c) => [c.id, c.label]));
}

describe("labels", () => {
  it("numbers the main path 1, 2, 3", () => {
    const g = family([{ id: "R", turns: 3 }], "R");
    expect(labelsOf(g)).toEqual({ "R:1": "1", "R:2": "2", "R:3": "3" });
  });

  it("gives alternatives the next ordinal of the path in creation order, wherever they fork", () => {
    const g = family(
      [
        { id: "R", turns: 5 },
        { id: "A", parent: "R", bp: 3, turns: 5 },
        { id: "B", parent: "R", bp: 2, turns: 4 },
        { id: "C", parent: "A", bp: 4, turns: 5 },
      ],
      "R",
    );
    const labels = labelsOf(g);
    expect([labels["A:4"], labels["A:5"]]).toEqual(["4.1", "5.1"]);
    expect([labels["B:3"], labels["B:4"]]).toEqual(["3.2", "4.2"]);
    expect(labels["C:5"]).toBe("5.1.1");
    expect([labels["R:1"], labels["R:5"]]).toEqual(["1", "5"]);
  });

  it("orders siblings by creation time when it is known", () => {
    const g = family(
      [
        { id: "R", turns: 5 },
        { id: "A", parent: "R", bp: 3, turns: 4 },
        { id: "B", parent: "R", bp: 2, turns: 3 },
      ],
      "R",
    );
    const created = new Map([
      ["R", minute(0)],
      ["A", minute(900)],
      ["B", minute(800)],
    ]);
    const labels = labelsOf(g, created);
    expect(labels["B:3"]).toBe("3.1");
    expect(labels["A:4"]).toBe("4.2");
  });

  it("labels the walkthrough's branch from step 2 as 3.1 and keeps the original path", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "D", parent: "R", bp: 2, turns: 3 },
      ],
      "D",
    );
    const flow = buildFlowGraph(g);
    const by = Object.fromEntries(flow.cards.map((c) => [c.id, c]));
    expect(by["D:3"]?.label).toBe("3.1");
    expect(["R:1", "R:2", "R:3"].map((id) => by[id]?.label)).toEqual(["1", "2", "3"]);
    expect(by["D:3"]?.active).toBe(true);
    expect(by["R:2"]?.active).toBe(true);
    expect(by["R:3"]?.active).toBe(false);
    expect(by["D:3"]?.head).toBe(true);
    expect(by["D:3"]?.lane).not.toBe(by["R:3"]?.lane);
  });

  it("continues the count from the tip, in the parent's lane", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "C", parent: "R", bp: 3, turns: 5 },
      ],
      "C",
    );
    const flow = buildFlowGraph(g);
    const by = Object.fromEntries(flow.cards.map((c) => [c.id, c]));
    expect([by["C:4"]?.label, by["C:5"]?.label]).toEqual(["4", "5"]);
    expect(by["C:4"]?.lane).toBe(by["R:3"]?.lane);
    expect(flow.laneCount).toBe(1);
  });

  it("flips a continuation to its reserved ordinal when the parent goes past the fork, renumbering no sibling", () => {
    const specs = [
      { id: "R", turns: 3 },
      { id: "A", parent: "R", bp: 2, turns: 3 },
      { id: "C", parent: "R", bp: 3, turns: 5 },
      { id: "D", parent: "C", bp: 4, turns: 5 },
      { id: "E", parent: "R", bp: 1, turns: 2 },
    ];
    const created = new Map([
      ["R", minute(0)],
      ["A", minute(10)],
      ["C", minute(20)],
      ["D", minute(30)],
      ["E", minute(40)],
    ]);
    const at = (_t: string, k: number): number => k;
    const before = labelsOf(family(specs, "R", { capturedAt: at }), created);
    expect([before["C:4"], before["C:5"]]).toEqual(["4", "5"]);
    expect(before["A:3"]).toBe("3.1");
    expect(before["D:5"]).toBe("5.3");
    expect(before["E:2"]).toBe("2.4");

    // The original path is continued past the fork (R:4 captured after C was made).
    const later = [{ id: "R", turns: 4 }, ...specs.slice(1)];
    const after = labelsOf(family(later, "R", { capturedAt: (t, k) => (t === "R" && k === 4 ? 50 : k) }), created);
    expect(after["R:4"]).toBe("4");
    expect([after["C:4"], after["C:5"]]).toEqual(["4.2", "5.2"]);
    expect(after["D:5"]).toBe("5.2.3");
    expect(after["A:3"]).toBe("3.1");
    expect(after["E:2"]).toBe("2.4");
  });

  it("makes only the first branch at a tip a continuation", () => {
    const g = family(
      [
        { id: "R", turns: 2 },
        { id: "C1", parent: "R", bp: 2, turns: 3 },
        { id: "C2", parent: "R", bp: 2, turns: 3 },
      ],
      "R",
    );
    const labels = labelsOf(g);
    expect(labels["C1:3"]).toBe("3");
    expect(labels["C2:3"]).toBe("3.2");
  });

  it("treats a branch at 0 as an alternative first step", () => {
    const g = family(
      [
        { id: "R", turns: 2 },
        { id: "Z", parent: "R", bp: 0, turns: 1 },
      ],
      "R",
    );
    expect(labelsOf(g)["Z:1"]).toBe("1.1");
  });

  it("keeps labels globally unique over random families", () => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let trial = 0; trial < 200; trial++) {
      const specs: { id: string; parent?: string; bp?: number; turns: number }[] = [{ id: "T0", turns: 1 + rand(4) }];
      const created = new Map<string, number>([["T0", minute(0)]]);
      const times = new Map<string, number>();
      let clock = 1;
      for (let k = 1; k <= (specs[0]?.turns ?? 0); k++) times.set(`T0:${k}`, clock++);
      for (let i = 1; i < 12; i++) {
        const action = rand(3);
        if (action === 0) {
          // continue an existing thread by one turn
          const s = specs[rand(specs.length)];
          if (s) {
            s.turns += 1;
            times.set(`${s.id}:${s.turns}`, clock++);
          }
          continue;
        }
        const parent = specs[rand(specs.length)];
        if (!parent) continue;
        const low = parent.parent === undefined ? 0 : (parent.bp ?? 0) + 1;
        if (parent.turns < low) continue;
        const bp = low + rand(parent.turns - low + 1);
        const id = `T${i}`;
        created.set(id, minute(clock++));
        const turns = bp + rand(3);
        specs.push({ id, parent: parent.id, bp, turns });
        for (let k = bp + 1; k <= turns; k++) times.set(`${id}:${k}`, clock++);
      }
      const g = family(specs, "T0", { capturedAt: (t, k) => times.get(`${t}:${k}`) ?? 0 });
      const flow = buildFlowGraph(g, { createdAt: created });
      const labels = flow.cards.map((c) => c.label);
      expect(new Set(labels).size).toBe(labels.length);
    }
  });

  it("formats labels", () => {
    expect(formatLabel(4, [])).toBe("4");
    expect(formatLabel(4, [1, 2])).toBe("4.1.2");
  });
});

describe("layout", () => {
  it("places x = turn * gap and y = lane * gap, one lane per branch, depth first", () => {
    const g = family(
      [
        { id: "R", turns: 4 },
        { id: "A", parent: "R", bp: 2, turns: 4 },
        { id: "B", parent: "R", bp: 1, turns: 2 },
        { id: "AA", parent: "A", bp: 3, turns: 4 },
      ],
      "R",
    );
    const flow = buildFlowGraph(g);
    expect(flow.lanes.get("R")).toBe(0);
    expect(flow.lanes.get("A")).toBe(1);
    expect(flow.lanes.get("AA")).toBe(2);
    expect(flow.lanes.get("B")).toBe(3);
    const aa = flow.cards.find((c) => c.id === "AA:4");
    expect(aa?.x).toBe(4 * X_GAP);
    expect(aa?.y).toBe(2 * Y_GAP);
    const custom = buildFlowGraph(g, { xGap: 10, yGap: 5 });
    expect(custom.cards.find((c) => c.id === "AA:4")).toMatchObject({ x: 40, y: 10 });
  });

  it("draws the displayed path strong and the rest dimmed", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 1, turns: 3 },
      ],
      "A",
    );
    const flow = buildFlowGraph(g);
    const active = flow.links.filter((l) => l.active).map((l) => l.id);
    expect(active.sort()).toEqual(["A:2->A:3", "R:1->A:2"]);
    expect(flow.links.find((l) => l.id === "R:1->R:2")?.active).toBe(false);
  });

  it("marks the head, which may be set explicitly", () => {
    const g = family([{ id: "R", turns: 3 }], "R");
    expect(
      buildFlowGraph(g)
        .cards.filter((c) => c.head)
        .map((c) => c.id),
    ).toEqual(["R:3"]);
    expect(
      buildFlowGraph(g, { headTurnId: "R:1" })
        .cards.filter((c) => c.head)
        .map((c) => c.id),
    ).toEqual(["R:1"]);
    expect(buildFlowGraph(g, { headTurnId: null }).cards.some((c) => c.head)).toBe(false);
  });

  it("adds stub heads for paths that own no turn yet", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "S", parent: "R", bp: 2, turns: 2, reason: "try again" },
        { id: "Z", parent: "R", bp: 0, turns: 0 },
        { id: "X", parent: "R", bp: 1, turns: 1, deleted: true },
      ],
      "S",
    );
    const flow = buildFlowGraph(g, { displayedThreadId: "S" });
    const stub = flow.cards.find((c) => c.id === "stub:S");
    expect(stub).toMatchObject({
      kind: "stub",
      turn: 3,
      label: "3.1",
      active: true,
      x: 3 * X_GAP,
      question: "try again",
    });
    expect(flow.links.find((l) => l.target === "stub:S")).toMatchObject({ source: "R:2", kind: "stub", active: true });
    expect(flow.cards.find((c) => c.id === "stub:Z")?.label).toBe("1.2");
    expect(flow.links.some((l) => l.target === "stub:Z")).toBe(false);
    expect(flow.cards.some((c) => c.id === "stub:X")).toBe(false);
    expect(buildFlowGraph(g).cards.find((c) => c.id === "stub:S")?.active).toBe(false);
  });

  it("carries thread names on each thread's first card, where the name is shown and edited", () => {
    const g = family(
      [
        { id: "R", turns: 3, name: "main" },
        { id: "S", parent: "R", bp: 1, turns: 3, name: "formal" },
        { id: "Z", parent: "R", bp: 2, turns: 0, name: "next" },
      ],
      "S",
    );
    const flow = buildFlowGraph(g);
    const card = (id: string) => flow.cards.find((c) => c.id === id);
    expect(card("R:1")).toMatchObject({ threadName: "main", firstOfThread: true });
    // (only the first card shows the name: the others carry none, see turnCard)
    expect(card("R:2")).toMatchObject({ threadName: null, firstOfThread: false });
    expect(card("S:2")).toMatchObject({ threadName: "formal", firstOfThread: true });
    expect(card("S:3")).toMatchObject({ threadName: null, firstOfThread: false });
    expect(card("stub:Z")).toMatchObject({ threadName: "next", firstOfThread: true });
    const orphan: Graph = {
      ...g,
      nodes: [...g.nodes, { ...(g.nodes[0] as Graph["nodes"][number]), id: "Q:1", thread_id: "Q" }],
    };
    expect(buildFlowGraph(orphan).cards.find((c) => c.id === "Q:1")).toMatchObject({
      threadName: null,
      firstOfThread: false,
    });
  });

  it("reports truncation and copes with nodes dropped from the front", () => {
    const full = family(
      [
        { id: "R", turns: 4 },
        { id: "A", parent: "R", bp: 1, turns: 3 },
      ],
      "R",
      { truncated: true },
    );
    const dropped = new Set(["R:1", "R:2"]);
    const g: Graph = {
      ...full,
      nodes: full.nodes.filter((n) => !dropped.has(n.id)),
      edges: full.edges.filter((e) => !dropped.has(e.source) && !dropped.has(e.target)),
    };
    const flow = buildFlowGraph(g);
    expect(flow.truncated).toBe(true);
    expect(flow.cards.map((c) => c.id).sort()).toEqual(["A:2", "A:3", "R:3", "R:4"]);
    expect(flow.cards.find((c) => c.id === "A:2")?.label).toBe("2.1");
    for (const l of flow.links) {
      expect(flow.labels.has(l.source) && flow.labels.has(l.target)).toBe(true);
    }
    // the step before each card, with the links the cap left
    const parents = new Map(flow.links.map((l) => [l.target, l.source] as const));
    const before = (id: string) => stepBefore(flow.cards.find((c) => c.id === id) as FlowCard, parents);
    expect(before("R:4")).toBe("R:3");
    // R:2 and its link were dropped: still the step before R:3, as in the full graph
    expect(before("R:3")).toBe("R:2");
    expect(before("A:3")).toBe("A:2");
    // a thread's first card whose branch point was dropped: the thread's baseline
    expect(before("A:2")).toBe("A:0");
    const whole = buildFlowGraph(full);
    const all = new Map(whole.links.map((l) => [l.target, l.source] as const));
    expect(stepBefore(whole.cards.find((c) => c.id === "A:2") as FlowCard, all)).toBe("R:1");
    expect(stepBefore(whole.cards.find((c) => c.id === "R:1") as FlowCard, all)).toBe("R:0");
  });
});

describe("path guide", () => {
  it("lists the displayed path's steps with labels and the offshoots forking at each", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 2, turns: 3 },
        { id: "B", parent: "R", bp: 1, turns: 2 },
        { id: "S", parent: "R", bp: 2, turns: 2 },
        { id: "Z", parent: "R", bp: 0, turns: 1 },
      ],
      "R",
    );
    const flow = buildFlowGraph(g);
    const guide = activePathGuide(g, flow, "R");
    expect([...guide.values()].map((s) => [s.turn, s.nodeId, s.label])).toEqual([
      [1, "R:1", "1"],
      [2, "R:2", "2"],
      [3, "R:3", "3"],
    ]);
    expect(guide.get(1)?.offshoots.map((o) => [o.threadId, o.label])).toEqual([["B", "2.2"]]);
    expect(guide.get(2)?.offshoots.map((o) => [o.threadId, o.label])).toEqual([
      ["A", "3.1"],
      ["S", "3.3"],
    ]);

    const fromA = activePathGuide(g, flow, "A");
    expect([...fromA.values()].map((s) => s.nodeId)).toEqual(["R:1", "R:2", "A:3"]);
    expect(fromA.get(2)?.offshoots.map((o) => o.threadId)).toEqual(["R", "S"].filter((t) => t !== "R"));
  });

  it("finds owners and tips through the lineage", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 2, turns: 4 },
        { id: "S", parent: "A", bp: 3, turns: 3 },
      ],
      "R",
    );
    const byId = new Map(g.threads.map((t) => [t.thread_id, t]));
    expect(ownerOf(byId, "S", 1)).toBe("R");
    expect(ownerOf(byId, "S", 3)).toBe("A");
    expect(ownerOf(byId, "missing", 2)).toBeNull();
    expect(tipNodeId(g, "A")).toBe("A:4");
    expect(tipNodeId(g, "S")).toBe("A:3");
    expect(tipNodeId(g, "nope")).toBeNull();
    expect(threadSuffixes(g).get("S")).toEqual([1, 1]);
  });
});

describe("merge nodes", () => {
  it("marks a merge node and keeps its merge edge as a link of its own kind", () => {
    const g = family(
      [
        { id: "R", turns: 3 },
        { id: "A", parent: "R", bp: 1, turns: 2 },
      ],
      "R",
    );
    const nodes = g.nodes.map((n) => (n.id === "R:3" ? { ...n, kind: "merge" as const } : n));
    const edges = [...g.edges, { id: "A:2->R:3", source: "A:2", target: "R:3", kind: "merge" as const, reason: null }];
    const flow = buildFlowGraph({ ...g, nodes, edges });
    expect(flow.cards.find((c) => c.id === "R:3")).toMatchObject({ merge: true, label: "3" });
    expect(flow.cards.find((c) => c.id === "R:2")).toMatchObject({ merge: false });
    expect(flow.links.find((l) => l.id === "A:2->R:3")).toMatchObject({ kind: "merge", active: false });
  });
});
