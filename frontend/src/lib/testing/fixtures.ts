/** Builds API-shaped family graphs for the pure-module tests and the bench. */
import type { Graph, GraphEdge, GraphNode, GraphThread } from "@/features/graph/lib/graph";

export interface ThreadSpec {
  id: string;
  parent?: string;
  bp?: number;
  turns: number;
  deleted?: boolean;
  reason?: string;
  name?: string;
  summary?: string;
  archived?: boolean;
  /** a root forked from another family at this turn: it owns only the turns after it */
  forkedAt?: number;
}

/** A family with one node per owned turn; node `T:k` was captured at minute
 * `capturedAt(T, k)` (default: k, then the threads' order). */
export function family(
  specs: ThreadSpec[],
  requested: string,
  opts: { capturedAt?: (thread: string, turn: number) => number; head?: string | null; truncated?: boolean } = {},
): Graph {
  const threads: GraphThread[] = specs.map((s) => ({
    thread_id: s.id,
    title: s.id,
    name: s.name ?? null,
    parent_thread_id: s.parent ?? null,
    branch_point_turn: s.parent === undefined ? null : (s.bp ?? 0),
    reason: s.reason ?? null,
    turn_index: s.turns,
    deleted: s.deleted ?? false,
    summary: s.summary ?? null,
    archived: s.archived ?? false,
    ...(s.forkedAt !== undefined ? { forked_from_turn: s.forkedAt } : {}),
  }));
  const byId = new Map(threads.map((t) => [t.thread_id, t]));
  const owner = (thread: string, turn: number): string => {
    let t = byId.get(thread);
    while (t !== undefined) {
      if (turn > (t.branch_point_turn ?? t.forked_from_turn ?? 0)) return t.thread_id;
      t = t.parent_thread_id === null ? undefined : byId.get(t.parent_thread_id);
    }
    return thread;
  };
  // the active path: per lineage thread, the last turn on it
  const limits = new Map<string, number>();
  let bound = Number.POSITIVE_INFINITY;
  let cur = byId.get(requested);
  while (cur !== undefined) {
    limits.set(cur.thread_id, bound);
    if (cur.branch_point_turn !== null) bound = Math.min(bound, cur.branch_point_turn);
    cur = cur.parent_thread_id === null ? undefined : byId.get(cur.parent_thread_id);
  }
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  specs.forEach((s, i) => {
    const first = (s.parent === undefined ? (s.forkedAt ?? 0) : (s.bp ?? 0)) + 1;
    for (let k = first; k <= s.turns; k++) {
      const id = `${s.id}:${k}`;
      const minute = opts.capturedAt ? opts.capturedAt(s.id, k) : k * 100 + i;
      nodes.push({
        id,
        thread_id: s.id,
        turn_index: k,
        user_message: `q ${id}`,
        captured_at: new Date(Date.UTC(2026, 0, 1) + minute * 60_000).toISOString(),
        artifact_count: 0,
        is_on_active_path: k <= (limits.get(s.id) ?? -1),
        state: "complete",
        model: null,
        codes: [],
        kind: "turn",
      });
      let source: string | null = null;
      let kind: "turn" | "branch" = "turn";
      if (k > first) source = `${s.id}:${k - 1}`;
      else if (s.parent !== undefined && (s.bp ?? 0) > 0) {
        source = `${owner(s.parent, s.bp ?? 0)}:${s.bp}`;
        kind = "branch";
      }
      if (source !== null) edges.push({ id: `${source}->${id}`, source, target: id, kind, reason: null });
    }
  });
  const req = byId.get(requested);
  const head =
    opts.head !== undefined
      ? opts.head
      : req && req.turn_index > 0
        ? `${owner(requested, req.turn_index)}:${req.turn_index}`
        : null;
  return {
    root_thread_id: specs[0]?.id ?? "",
    head_turn_id: head,
    truncated: opts.truncated ?? false,
    threads,
    nodes,
    edges,
  };
}

/** minute → ms since the epoch, matching `family`'s capture times */
export function minute(m: number): number {
  return Date.UTC(2026, 0, 1) + m * 60_000;
}
