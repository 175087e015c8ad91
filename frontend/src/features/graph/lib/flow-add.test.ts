import { describe, expect, it } from "vitest";
import { withStartedNode } from "./big-trees";
import { withOneCardAdded } from "./flow-add";
import { buildFlowGraph, firstOwned, type Graph } from "./graph";
import { family, minute, type ThreadSpec } from "@/lib/testing/fixtures";

const specs: ThreadSpec[] = [
  { id: "R", turns: 6 },
  { id: "A", parent: "R", bp: 3, turns: 5, reason: "try another way" },
  { id: "B", parent: "A", bp: 4, turns: 6, name: "bee" },
  { id: "C", parent: "R", bp: 2, turns: 4, archived: true },
  { id: "S", parent: "A", bp: 5, turns: 5 }, // a stub at A's tip
  { id: "T", parent: "B", bp: 6, turns: 8 }, // a branch at B's tip: it goes on from there
  { id: "E", parent: "R", bp: 6, turns: 6 }, // a stub at R's tip
];
const created = new Map(specs.map((s, i) => [s.id, minute(1000 + i)] as const));

/** Each thread's next turn started, as the studio draws it before the graph is fetched again. */
function grown(g: Graph, thread: string): Graph {
  const t = g.threads.find((x) => x.thread_id === thread);
  const turn = t?.turn_index ?? 0;
  return withStartedNode(g, `${thread}:${turn + 1}`, turn >= 1 ? `${thread}:${turn}` : null, "next");
}

describe("withOneCardAdded", () => {
  for (const displayed of ["R", "B", "S", "T"]) {
    it(`gives what the full layout gives, displaying ${displayed}`, () => {
      const g = family(specs, displayed);
      const options = {
        headTurnId: `${displayed}:${displayed === "T" ? 8 : 5}`,
        displayedThreadId: displayed,
        createdAt: created,
      };
      const before = buildFlowGraph(g, options);
      let added = 0;
      for (const t of g.threads) {
        const next = grown(g, t.thread_id);
        const quick = withOneCardAdded(g, next, before, options.headTurnId);
        const owns = t.turn_index >= firstOwned(t);
        const tipBranch = g.threads.some(
          (c) => c.parent_thread_id === t.thread_id && c.branch_point_turn === t.turn_index,
        );
        if (!owns || tipBranch) {
          expect(quick).toBeNull();
          continue;
        }
        added++;
        expect(quick).toEqual(buildFlowGraph(next, options));
        const old = new Set(before.cards);
        expect(quick?.cards.filter((c) => !old.has(c)).map((c) => c.id)).toEqual([
          `${t.thread_id}:${t.turn_index + 1}`,
        ]);
        const oldLinks = new Set(before.links);
        expect(quick?.links.filter((l) => !oldLinks.has(l)).length).toBe(1);
      }
      expect(added).toBe(2); // C and T (R, A, B have a branch at their tip; E, S own no turn)
    });
  }

  it("is null for anything but one node added at a tip", () => {
    const g = family(specs, "R");
    const flow = buildFlowGraph(g);
    expect(withOneCardAdded(g, g, flow, null)).toBeNull();
    const refetched = grown(g, "R");
    const copy = { ...refetched, nodes: refetched.nodes.map((n) => ({ ...n })) };
    expect(withOneCardAdded(g, copy, flow, null)).toBeNull(); // another answer, not the same objects
    const two = grown(grown(g, "R"), "R");
    expect(withOneCardAdded(g, two, flow, null)).toBeNull();
  });
});
