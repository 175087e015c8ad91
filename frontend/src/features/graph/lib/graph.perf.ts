/**
 * The layout budget: `buildFlowGraph` on a 5000-node family (a 1000-turn main path,
 * 100 branches of 40 turns at spread-out points, some nested) within 50 ms on this
 * machine. The median of several runs is compared, after a warm-up.
 */
import { expect, it } from "vitest";
import { buildFlowGraph } from "./graph";
import { family, minute, type ThreadSpec } from "@/lib/testing/fixtures";

const BUDGET_MS = 50;

function bigFamily(): { specs: ThreadSpec[]; created: Map<string, number> } {
  const specs: ThreadSpec[] = [{ id: "R", turns: 1000 }];
  const created = new Map<string, number>([["R", minute(0)]]);
  for (let i = 0; i < 100; i++) {
    const nested = i % 4 === 3;
    const parent = nested ? `B${i - 1}` : "R";
    const bp = nested ? (i - 1) * 9 + 20 : i * 9 + 5;
    specs.push({ id: `B${i}`, parent, bp, turns: bp + 40 });
    created.set(`B${i}`, minute(10_000 + i));
  }
  return { specs, created };
}

it(`lays out a 5000-node family within ${BUDGET_MS} ms`, () => {
  const { specs, created } = bigFamily();
  const graph = family(specs, "B50");
  expect(graph.nodes.length).toBe(5000);
  for (let i = 0; i < 5; i++) buildFlowGraph(graph, { createdAt: created });
  const times: number[] = [];
  for (let i = 0; i < 15; i++) {
    const start = performance.now();
    const flow = buildFlowGraph(graph, { createdAt: created, displayedThreadId: "B50" });
    times.push(performance.now() - start);
    expect(flow.cards.length).toBe(5000);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] ?? Number.POSITIVE_INFINITY;
  console.log(
    `graph layout bench: 5000 nodes, median ${median.toFixed(1)} ms ` +
      `(min ${times[0]?.toFixed(1)} ms, budget ${BUDGET_MS} ms)`,
  );
  expect(median).toBeLessThanOrEqual(BUDGET_MS);
});
