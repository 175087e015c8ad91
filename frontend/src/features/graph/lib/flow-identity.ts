/**
 * Keeping objects that did not change, so that one node added to a 2,000-node family
 * costs about one card: React Flow adopts a node object it already holds without work,
 * a memoised card whose props keep their identity does not render, and comparing
 * identical objects is one `===`. Pure (no React): unit-tested on its own.
 *
 * The layout itself is recomputed whole (a few ms at 2,000 nodes, see graph.perf.ts);
 * what is kept is each card and link object whose values did not change, and down the
 * line each React Flow node built from a kept card.
 */
import type { FlowCard, FlowGraph, FlowLink } from "./graph";

/** Same values, key by key; an array value (a card's codes) is compared item by item. */
function sameValues(a: object, b: object): boolean {
  if (a === b) return true;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const k in x) {
    keys++;
    const u = x[k];
    const v = y[k];
    if (u === v) continue;
    if (!Array.isArray(u) || !Array.isArray(v) || u.length !== v.length) return false;
    for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return false;
  }
  for (const k in y) if (Object.hasOwn(y, k)) keys--;
  return keys === 0;
}

function keep<T extends { id: string }>(previous: readonly T[], next: T[]): T[] {
  if (previous.length === 0) return next;
  const old = new Map(previous.map((o) => [o.id, o] as const));
  return next.map((o) => {
    const was = old.get(o.id);
    return was !== undefined && sameValues(was, o) ? was : o;
  });
}

/** `next` with every card and link that holds the same values as in `previous` replaced
 * by the previous object (a node added: every other card and link is kept). The maps
 * (labels, suffixes, lanes) are next's. */
export function keepUnchanged(previous: FlowGraph | null, next: FlowGraph): FlowGraph {
  if (previous === null) return next;
  const cards: FlowCard[] = keep(previous.cards, next.cards);
  const links: FlowLink[] = keep(previous.links, next.links);
  return { ...next, cards, links };
}

/** Whether two layouts draw the same cards joined the same way: the same card ids, and
 * the same links (id, source and target). */
function sameShape(a: FlowGraph, b: FlowGraph): boolean {
  if (a.cards.length !== b.cards.length || a.links.length !== b.links.length) return false;
  const cards = new Set(a.cards.map((c) => c.id));
  if (!b.cards.every((c) => cards.has(c.id))) return false;
  const links = new Map(a.links.map((l) => [l.id, l] as const));
  return b.links.every((l) => {
    const was = links.get(l.id);
    return was !== undefined && was.source === l.source && was.target === l.target;
  });
}

/**
 * `next` with the cards where `shown` has them, when both draw the same cards joined the
 * same way; else `next` as it is. After a path switch the page shows the family graph it
 * holds, then the one fetched through the new path, whose lanes need not come out the
 * same (they follow the order the answer lists the threads in and the creation times
 * known then): the same cards would move under the pointer (a click pressed on one
 * card and let go on another). Each card keeps its
 * place and lane (its colour), the flow its lanes (where a card added to a thread goes,
 * lib/flow-add); everything else (labels, states, the path) is next's. A card added or
 * gone, or a link changed, lays the family out anew.
 */
export function keepLayout(shown: FlowGraph | null, next: FlowGraph): FlowGraph {
  if (shown === null || shown === next || !sameShape(shown, next)) return next;
  const at = new Map(shown.cards.map((c) => [c.id, c] as const));
  let moved = false;
  const cards = next.cards.map((c) => {
    const was = at.get(c.id);
    if (was === undefined || (was.x === c.x && was.y === c.y && was.lane === c.lane)) return c;
    moved = true;
    return { ...c, x: was.x, y: was.y, lane: was.lane };
  });
  if (!moved) return next;
  return { ...next, cards, lanes: new Map([...next.lanes, ...shown.lanes]), laneCount: shown.laneCount };
}

interface FlowNodeLike {
  id: string;
  type?: string;
  position: { x: number; y: number };
  data: unknown;
  measured?: { width?: number; height?: number };
}

/**
 * The nodes to hand React Flow when the layout gives `next`, React Flow holding
 * `previous` (with the sizes it measured, and a dragged card's position). A node whose
 * data object and place are unchanged is the previous object itself; any other is the
 * new node, carrying the size measured for its card. A node object without `measured`
 * is hidden until it is measured again, and a re-measure can be lost when two updates
 * land in one render, which left cards invisible; a card whose content changes size is
 * still re-measured by the observer watching its element. A card dragged and let go
 * goes back to its place (its position differs from the layout's).
 */
export function carryMeasured<T extends FlowNodeLike>(previous: readonly T[], next: readonly T[]): T[] {
  const before = new Map(previous.map((n) => [n.id, n] as const));
  return next.map((n) => {
    const was = before.get(n.id);
    if (was === undefined) return n;
    if (
      was.data === n.data &&
      was.type === n.type &&
      was.position.x === n.position.x &&
      was.position.y === n.position.y &&
      (n.measured === undefined || was.measured === n.measured)
    ) {
      return was;
    }
    const size = was.measured;
    if (n.measured !== undefined || size?.width === undefined || size.height === undefined) return n;
    return { ...n, measured: { width: size.width, height: size.height } };
  });
}
