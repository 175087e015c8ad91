/**
 * "Which is better" between sibling steps (the same parent, or both a path's first
 * step): the other siblings a step may be judged against, and how a judgment reads in
 * a step's details. Pure.
 */
import type { Schemas } from "@/lib/api/client";

export type Judgment = Schemas["JudgmentOut"];
export type Preferred = "a" | "b" | "tie";

/** The siblings `nodeId` may be compared with (itself left out). */
export function rivals(nodeId: string, siblings: readonly string[]): string[] {
  return siblings.filter((s) => s !== nodeId);
}

/** A judgment seen from one of its steps: "Step 2.1 is better than step 2 (clarity)". */
export function judgmentText(j: Judgment, label: (nodeId: string) => string): string {
  const a = label(j.a);
  const b = label(j.b);
  const said =
    j.preferred === "tie"
      ? `Steps ${a} and ${b} are as good as each other`
      : j.preferred === "a"
        ? `Step ${a} is better than step ${b}`
        : `Step ${b} is better than step ${a}`;
  return j.criterion ? `${said} (${j.criterion})` : said;
}

/** The judgments that name `nodeId` on either side. */
export function judgmentsOf(all: readonly Judgment[], nodeId: string): Judgment[] {
  return all.filter((j) => j.a === nodeId || j.b === nodeId);
}

/** A graph's edge, as far as siblings go. */
export interface Edge {
  source: string;
  target: string;
  kind: string;
}

/** The step a node continues (its parent), null for a first step; a merge's second
 * parent (its "merge" edge) does not count. */
export function parentOf(edges: readonly Edge[], nodeId: string): string | null {
  return edges.find((e) => e.target === nodeId && e.kind !== "merge")?.source ?? null;
}

/** Whether two steps are siblings (the same parent, or both a first step): the pairs
 * a judgment may compare. */
export function areSiblings(edges: readonly Edge[], a: string, b: string): boolean {
  return a !== b && parentOf(edges, a) === parentOf(edges, b);
}
