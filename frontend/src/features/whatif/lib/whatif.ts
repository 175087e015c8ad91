/**
 * What if: pure helpers for replay jobs and the aligned comparison of two paths.
 */
import type { components } from "@/lib/api/schema";
import { ownerOf, type Graph } from "@/features/graph/lib/graph";

export type Job = components["schemas"]["JobOut"];
export type Profile = components["schemas"]["ProfileOut"];
export type PathsCompared = components["schemas"]["PathsCompared"];
export type PathTotals = components["schemas"]["PathTotals"];

/** Whether a job may still change (queued or running). */
export function jobActive(job: Pick<Job, "state"> | null | undefined): boolean {
  return job?.state === "queued" || job?.state === "running";
}

// How far along a job's state is: it only moves forward, to one of its ends.
const STAGE: Record<Job["state"], number> = { queued: 0, running: 1, done: 2, failed: 2, cancelled: 2 };

/** Of two reports of the same job, the later one. A job only moves forward (queued,
 * running, an end; its done count only grows), so an answer that was on its way while
 * the event stream reported more is not shown over it. */
export function laterJob(known: Job | undefined, next: Job): Job {
  if (known === undefined || known.id !== next.id) return next;
  const was = STAGE[known.state];
  const now = STAGE[next.state];
  if (was !== now) return now > was ? next : known;
  return next.progress.done >= known.progress.done ? next : known;
}

/** The job's progress as a whole percentage (0 when it has nothing to do yet). */
export function jobPercent(job: Pick<Job, "progress">): number {
  const { done, total } = job.progress;
  return total > 0 ? Math.min(100, Math.round((done / total) * 100)) : 0;
}

/** "3 of 6 steps · running", "done", "failed: …" — the progress bar's caption. */
export function jobCaption(job: Pick<Job, "progress" | "state" | "error">): string {
  const steps = `${job.progress.done} of ${job.progress.total} step${job.progress.total === 1 ? "" : "s"}`;
  if (job.state === "failed") return `${steps} · failed${job.error ? `: ${job.error}` : ""}`;
  return `${steps} · ${job.state}`;
}

/** A line diff of two replies: each line of `a` not in `b` is removed, each of `b` not
 * in `a` added, shared lines kept (in `b`'s order, after the removals). */
export function replyDiff(a: string, b: string): { sign: "+" | "-" | " "; text: string }[] {
  const left = a.split("\n");
  const right = b.split("\n");
  const inRight = new Set(right);
  const inLeft = new Set(left);
  return [
    ...left.filter((l) => !inRight.has(l)).map((text) => ({ sign: "-" as const, text })),
    ...right.map((text) => ({ sign: inLeft.has(text) ? (" " as const) : ("+" as const), text })),
  ];
}

/** The node id of a thread's latest step. */
export function latestNode(threadId: string, turnIndex: number): string {
  return `${threadId}:${turnIndex}`;
}

/** Texts on one side only: items made again by a replay have new identities, so the
 * two paths' items are matched by their text here. */
function textOnly(added: { text: string }[], removed: { text: string }[]): number {
  const a = added.map((i) => i.text);
  const r = removed.map((i) => i.text);
  return a.filter((t) => !r.includes(t)).length + r.filter((t) => !a.includes(t)).length;
}

/** What differs in the workspace after the two steps of a pair, as short words
 * ("objective", "document", "2 todos"); [] when the workspaces match. */
export function changedSurfaces(comparison: PathsCompared["pairs"][number]["comparison"]): string[] {
  if (!comparison) return [];
  const out: string[] = [];
  if (comparison.objective.changed) out.push("objective");
  if (comparison.document.changed) out.push("document");
  const prefs = textOnly(comparison.preferences.added, comparison.preferences.removed);
  if (prefs > 0) out.push(`${prefs} preference${prefs === 1 ? "" : "s"}`);
  const todos = textOnly(comparison.todos.added, comparison.todos.removed);
  if (todos > 0) out.push(`${todos} todo${todos === 1 ? "" : "s"}`);
  return out;
}

/** The job a `haico/jobProgress` action of the family's event stream carries (null for
 * any other action): the studio's progress bar follows the stream. */
export function jobOfAction(action: { type?: unknown; job?: unknown }): Job | null {
  if (action.type !== "haico/jobProgress" || typeof action.job !== "object" || action.job === null) return null;
  const job = action.job as Partial<Job>;
  return typeof job.id === "string" && typeof job.state === "string" && job.progress ? (job as Job) : null;
}

/** The number of alternatives "Try N alternatives" asks for (a one-step replay with N repeats). */
export const ALTERNATIVES = 3;

/** The thread of a node id ("th_…:k" → "th_…"). */
export function threadOf(node: string): string {
  return node.slice(0, node.lastIndexOf(":"));
}

function turnOf(node: string): number {
  return Number(node.slice(node.lastIndexOf(":") + 1));
}

/** Why `to` cannot end a replay from `from` (null when it can). As the server requires
 * (it answers 422 otherwise), the end is `from` itself or a later step of a path through
 * it: the thread of `to` has `from`'s thread own `from`'s turn. `label` names a step. */
export function rangeProblem(
  graph: Pick<Graph, "threads" | "nodes">,
  from: string,
  to: string,
  label: (node: string) => string,
): string | null {
  if (!graph.nodes.some((n) => n.id === to)) return `Step ${label(to)} is not a step of this conversation.`;
  const threads = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const start = turnOf(from);
  if (turnOf(to) < start) {
    return `Step ${label(to)} comes before step ${label(from)}: pick a later step of a path through ${label(from)}.`;
  }
  if (ownerOf(threads, threadOf(to), start) !== threadOf(from)) {
    return `Step ${label(to)} is on another path: pick a later step of a path through ${label(from)}.`;
  }
  return null;
}

/** A step as the studio names it: its graph label ("3.1"), else (a step the graph has
 * not shown yet) its turn number, which is how the graph numbers it. */
export function stepName(node: string | null, labels: ReadonlyMap<string, string>): string {
  if (node === null) return "—";
  return labels.get(node) ?? String(turnOf(node));
}

/** A pair of the aligned comparison as "step 3" (both sides have the same label) or
 * "step 3 · 3.1" (a's label, then b's), numbered as the graph numbers them. */
export function pairName(pair: { a: string | null; b: string | null }, labels: ReadonlyMap<string, string>): string {
  const a = pair.a === null ? null : stepName(pair.a, labels);
  const b = pair.b === null ? null : stepName(pair.b, labels);
  if (a === null || b === null || a === b) return `step ${a ?? b ?? "—"}`;
  return `step ${a} · ${b}`;
}

// a node id, with the word the server put before it ("to_node th_…:3", "node th_…:3")
const NODE_ID = /\b(?:(?:from_node|to_node|node|step|turn)\s+)?(th_[0-9a-f]{32}:\d+)\b/g;
const THREAD_ID = /\bth_[0-9a-f]{32}\b/g;

/** A server message with its raw ids put in the studio's words: a node id becomes
 * "step 3.1" (its graph label, else its turn number), a thread id "this conversation"
 * or, for a branch the graph shows, "the path from 3.1" (`branches`: thread id → name). */
export function inStepLabels(
  message: string,
  labels: ReadonlyMap<string, string>,
  branches: ReadonlyMap<string, string> = new Map(),
): string {
  return message
    .replace(NODE_ID, (_whole, id: string) => `step ${stepName(id, labels)}`)
    .replace(THREAD_ID, (id) => {
      const name = branches.get(id);
      return name === undefined ? "this conversation" : name === "main" ? "the main path" : `the path ${name}`;
    });
}

/** The merge steps a replay of `from … to` would not re-send (they carry no message
 * of the user's): their labels, oldest first. `to`'s path is followed back to `from`. */
export function mergesInRange(
  graph: Pick<Graph, "threads" | "nodes">,
  from: string,
  to: string,
  labels: ReadonlyMap<string, string>,
): string[] {
  const threads = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const kinds = new Map(graph.nodes.map((n) => [n.id, n.kind] as const));
  const start = turnOf(from);
  const out: string[] = [];
  for (let k = turnOf(to); k >= start; k--) {
    const owner = ownerOf(threads, threadOf(to), k);
    if (owner === null) break;
    const id = `${owner}:${k}`;
    if (kinds.get(id) === "merge") out.push(stepName(id, labels));
  }
  return out.reverse();
}
