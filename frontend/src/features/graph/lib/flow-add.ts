/**
 * The layout of one node added, without laying out the family again: a turn started at
 * the tip of a path is one new card and one new link, every other card and link left as
 * they were (the same objects). Pure: unit-tested against the full layout.
 */
import { firstOwned, formatLabel, turnCard, type FlowGraph, type FlowLink, type Graph } from "./graph";

function sameBut(a: Record<string, unknown>, b: Record<string, unknown>, key: string): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => k === key || a[k] === b[k]);
}

/**
 * `flow`, laid out from `before` (default gaps, head `head`), with the node that `after`
 * adds to it: `after` holds `before`'s nodes and edges (the same objects) and one more
 * of each, the new node being the next turn of a thread that already owns turns and has
 * no branch at its tip (as `withStartedNode` makes it). The new card and link are what
 * buildFlowGraph gives them, where it puts them. Null for any other change, which the
 * caller lays out in full: a branch at the tip is renumbered (and may change lane) once
 * its parent goes on, a path's first turn replaces its stub.
 */
export function withOneCardAdded(before: Graph, after: Graph, flow: FlowGraph, head: string | null): FlowGraph | null {
  const count = before.nodes.length;
  const edges = before.edges.length;
  if (after.nodes.length !== count + 1 || after.edges.length !== edges + 1) return null;
  if (after.threads.length !== before.threads.length || after.truncated !== before.truncated) return null;
  for (let i = 0; i < count; i++) if (after.nodes[i] !== before.nodes[i]) return null;
  for (let i = 0; i < edges; i++) if (after.edges[i] !== before.edges[i]) return null;
  const node = after.nodes[count];
  const edge = after.edges[edges];
  if (node === undefined || edge === undefined || edge.target !== node.id) return null;
  let thread: Graph["threads"][number] | undefined;
  for (let i = 0; i < after.threads.length; i++) {
    const was = before.threads[i];
    const now = after.threads[i];
    if (was === undefined || now === undefined || was === now) continue;
    if (thread !== undefined || now.thread_id !== node.thread_id || was.thread_id !== now.thread_id) return null;
    if (!sameBut(was, now, "turn_index") || was.turn_index !== node.turn_index - 1) return null;
    if (now.turn_index !== node.turn_index || was.turn_index < firstOwned(was)) return null;
    thread = now;
  }
  if (thread === undefined) return null;
  const tip = node.turn_index - 1;
  const id = thread.thread_id;
  if (after.threads.some((t) => t.parent_thread_id === id && t.branch_point_turn === tip)) return null;
  const lane = flow.lanes.get(id);
  const suffix = flow.suffixes.get(id);
  const source = before.nodes.find((n) => n.id === edge.source);
  if (lane === undefined || suffix === undefined || source === undefined) return null;
  const label = formatLabel(node.turn_index, suffix);
  const card = turnCard(node, thread, { lane, label, head });
  const link: FlowLink = {
    id: edge.id,
    source: edge.source,
    target: edge.target,
    kind: edge.kind,
    active: (source?.is_on_active_path ?? false) && node.is_on_active_path,
    reason: edge.reason ?? null,
  };
  // (the layout puts turn cards before stubs, and the graph's links before stubs' links)
  const insert = <T>(list: readonly T[], item: T, stub: (x: T) => boolean): T[] => {
    const at = list.findIndex(stub);
    return at < 0 ? [...list, item] : [...list.slice(0, at), item, ...list.slice(at)];
  };
  return {
    ...flow,
    cards: insert(flow.cards, card, (c) => c.kind === "stub"),
    links: insert(flow.links, link, (l) => l.kind === "stub"),
    labels: new Map(flow.labels).set(node.id, label),
  };
}
