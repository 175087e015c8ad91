/**
 * "Where am I": what the header and the lists say about the place on screen: the
 * branch's name and the label the graph gives its branch point, the counts of real
 * steps and real paths, a family's step count on its root's row. Pure (no React).
 */
import type { Conversation } from "./api/client";
import { lineage, nodeId, ownerOf, ownsNoTurn, type FlowGraph, type Graph } from "@/features/graph/lib/graph";

/** What the labels on steps mean (the legend, and the `?` list). */
export const LABEL_LEGEND: readonly { example: string; meaning: string }[] = [
  { example: "1, 2, 3", meaning: "the main path: the conversation's steps in order" },
  { example: "3.1", meaning: "an alternative: the first other path that continues after step 3" },
  { example: "3.2", meaning: "the second alternative after step 3" },
  { example: "5.1.1", meaning: "nested: an alternative that forks from the alternative 5.1" },
];

/** Real steps and real paths on a graph: a path that has no step yet is not counted. */
export function graphCounts(flow: FlowGraph | null): { steps: number; paths: number } {
  if (!flow) return { steps: 0, paths: 0 };
  const turns = flow.cards.filter((c) => c.kind === "turn");
  return { steps: turns.length, paths: new Set(turns.map((c) => c.threadId)).size };
}

/** Steps a listed thread owns (a branch's turn clock counts the turns it inherited). */
function ownedSteps(c: Conversation): number {
  const start = c.branch_point_turn ?? c.forked_from?.turn_index ?? 0;
  return Math.max(0, c.turn_index - start);
}

/** The steps of a whole family, on its root's row: the root's and every listed branch's. */
export function familySteps(conversations: readonly Conversation[], root: Conversation): number {
  return conversations
    .filter((c) => c.root_thread_id === root.root_thread_id)
    .reduce((sum, c) => sum + ownedSteps(c), 0);
}

export function stepsText(n: number): string {
  return `${n} step${n === 1 ? "" : "s"}`;
}

export interface Whereabouts {
  /** the branch's name (null: unnamed, or the main path) */
  name: string | null;
  /** an unnamed branch's one-line summary, once the server made one (null: named, none yet, the main path) */
  summary: string | null;
  /** the label of the step this path branched at, as the graph shows it (null: a root) */
  branchedAt: string | null;
  /** the label of the newest step of the path shown */
  tip: string | null;
  /** a branch's short label: the graph's label of its first own step (null: none yet, the main path) */
  first: string | null;
}

/** Where the displayed thread is: its name, the graph's label of its branch point (a
 * draft's name and point are its nearest listed ancestor's), and its newest step. */
export function whereabouts(graph: Graph | undefined, flow: FlowGraph | null, displayed: string | null): Whereabouts {
  const none = { name: null, summary: null, branchedAt: null, tip: null, first: null };
  if (!graph || !flow || displayed === null) return none;
  const threads = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  let name: string | null = null;
  let summary: string | null = null;
  let branchedAt: string | null = null;
  let branch: string | null = null;
  for (const t of lineage(threads, displayed)) {
    if (t.parent_thread_id === null) break;
    if (ownsNoTurn(t) && t.thread_id === displayed && t.name === null) continue; // a restore: its parent names it
    name = t.name;
    branch = t.thread_id;
    summary = t.name === null ? (t.summary ?? null) : null;
    const bp = t.branch_point_turn ?? 0;
    const owner = bp > 0 ? ownerOf(threads, t.parent_thread_id, bp) : null;
    branchedAt = owner === null ? "0" : (flow.labels.get(nodeId(owner, bp)) ?? String(bp));
    break;
  }
  const path = flow.cards.filter((c) => c.active && c.kind === "turn").sort((a, b) => b.turn - a.turn);
  const first = branch === null ? null : (path.findLast((c) => c.threadId === branch)?.label ?? null);
  return { name, summary, branchedAt, tip: path[0]?.label ?? null, first };
}
