/**
 * The family graph as the trajectory panel draws it: positions, lanes, step labels,
 * the displayed path, the head and stub heads. Pure (no React): it is unit-tested and
 * benchmarked on its own.
 *
 * Labels. A node's label is its turn number followed by its thread's suffix ("4.1.2").
 * The root's suffix is empty (1, 2, 3). A branch takes the next ordinal of its parent's
 * path in creation order, wherever on that path it forks, so a branch at step 3 gives
 * 4.1, 5.1 and a later one at step 2 gives 3.2, 4.2; a branch of a branch nests (x.1.1).
 * A branch opened at the very tip of its parent (the parent owns no later turn) just
 * continues the count, but still reserves its ordinal: once the parent is continued
 * past the fork it shows that ordinal (plain 4 becomes 4.2), its descendants re-root
 * under it, and no sibling is renumbered.
 *
 * Why this stays unique: ordinals are drawn from one counter per *reservation path* —
 * a thread together with every branch that ever continued it from its tip. A live
 * continuation always was one when it was made, so threads that show the same suffix
 * prefix draw from the same counter; two threads with equal suffixes therefore lie on
 * one continuation chain, whose turn ranges are disjoint.
 */
import type { components } from "@/lib/api/schema";

/** A thread of the family graph. A root forked from another family carries the turn it
 * was forked at (`forked_from_turn`, from the conversation list): turns up to it belong to
 * the source family, which this graph does not draw. */
export type GraphThread = components["schemas"]["GraphThread"] & { forked_from_turn?: number | null };
export type Graph = Omit<components["schemas"]["GraphOut"], "threads"> & { threads: GraphThread[] };
export type GraphNode = components["schemas"]["GraphNode"];
export type GraphEdge = components["schemas"]["GraphEdge"];

export type CardState = GraphNode["state"] | "stub";

export interface FlowCard {
  /** the node id, or `stub:<thread_id>` for a path that owns no turn yet */
  id: string;
  kind: "turn" | "stub";
  threadId: string;
  turn: number;
  label: string;
  lane: number;
  x: number;
  y: number;
  active: boolean;
  head: boolean;
  state: CardState;
  question: string;
  artifactCount: number;
  /** the short name of the card's thread (a branch name), if it has one; on the
   * thread's first card only, the one card that shows it (see turnCard) */
  threadName: string | null;
  /** the one-line summary of the card's thread, once the server derived it; on the
   * thread's first card only, as the name */
  threadSummary: string | null;
  /** the card's thread is archived (itself or through an ancestor) */
  archived: boolean;
  /** the first card of its thread: where the thread's name is shown and edited */
  firstOfThread: boolean;
  /** the codes of the researcher's notes on this step (the research ledger) */
  codes: readonly string[];
  /** a merge node: it brought another step's work in */
  merge: boolean;
}

const NO_CODES: readonly string[] = [];

export interface FlowLink {
  id: string;
  source: string;
  target: string;
  kind: "turn" | "branch" | "merge" | "stub";
  active: boolean;
  reason: string | null;
}

export interface FlowGraph {
  cards: FlowCard[];
  links: FlowLink[];
  laneCount: number;
  truncated: boolean;
  /** node id → label, for every card (stubs included) */
  labels: Map<string, string>;
  /** thread id → its displayed suffix */
  suffixes: Map<string, number[]>;
  lanes: Map<string, number>;
}

export interface LayoutOptions {
  /** horizontal distance between turns */
  xGap?: number;
  /** vertical distance between lanes */
  yGap?: number;
  /** the head (defaults to the graph's) */
  headTurnId?: string | null;
  /** the thread the studio displays: its stub head is on the displayed path */
  displayedThreadId?: string | null;
  /** thread id → creation time (ms); missing threads count as the newest */
  createdAt?: ReadonlyMap<string, number>;
}

export const X_GAP = 230;
export const Y_GAP = 170;

export function nodeId(threadId: string, turn: number): string {
  return `${threadId}:${turn}`;
}

export function stubId(threadId: string): string {
  return `stub:${threadId}`;
}

export function formatLabel(turn: number, suffix: readonly number[]): string {
  return suffix.length === 0 ? String(turn) : `${turn}.${suffix.join(".")}`;
}

/** The first turn a thread owns: after its branch point, or for a root after the turn it
 * was forked at (1 for a root that is no fork). The studio's one rule of ownership. */
export function firstOwned(thread: GraphThread): number {
  if (thread.branch_point_turn !== null) return thread.branch_point_turn + 1;
  return (thread.forked_from_turn ?? 0) + 1;
}

/** True when the thread owns no turn yet (a freshly opened path). */
export function ownsNoTurn(thread: GraphThread): boolean {
  return thread.turn_index < firstOwned(thread);
}

interface Index {
  byId: Map<string, GraphThread>;
  children: Map<string, GraphThread[]>;
  order: GraphThread[];
  nodeTime: Map<string, number>;
  createdAt: (t: GraphThread) => number;
}

function buildIndex(graph: Graph, createdAt?: ReadonlyMap<string, number>): Index {
  const byId = new Map<string, GraphThread>();
  const position = new Map<string, number>();
  graph.threads.forEach((t, i) => {
    byId.set(t.thread_id, t);
    position.set(t.thread_id, i);
  });
  const created = (t: GraphThread): number => createdAt?.get(t.thread_id) ?? Number.POSITIVE_INFINITY;
  // Creation order; parents always precede their children (threads[] is breadth-first).
  const order = [...graph.threads].sort((a, b) => {
    const ca = created(a);
    const cb = created(b);
    if (ca !== cb) return ca < cb ? -1 : 1;
    return (position.get(a.thread_id) ?? 0) - (position.get(b.thread_id) ?? 0);
  });
  const children = new Map<string, GraphThread[]>();
  for (const t of order) {
    if (t.parent_thread_id === null || !byId.has(t.parent_thread_id)) continue;
    const list = children.get(t.parent_thread_id);
    if (list) list.push(t);
    else children.set(t.parent_thread_id, [t]);
  }
  const nodeTime = new Map<string, number>();
  for (const n of graph.nodes) nodeTime.set(n.id, Date.parse(n.captured_at));
  return { byId, children, order, nodeTime, createdAt: created };
}

/** The thread and its ancestors, nearest first (a corrupt cycle ends the walk). */
export function* lineage(threads: ReadonlyMap<string, GraphThread>, threadId: string): Generator<GraphThread> {
  const seen = new Set<string>();
  let current = threads.get(threadId);
  while (current !== undefined && !seen.has(current.thread_id)) {
    seen.add(current.thread_id);
    yield current;
    current = current.parent_thread_id === null ? undefined : threads.get(current.parent_thread_id);
  }
}

/** The thread of `threadId`'s lineage that owns turn `turn`, or null when no thread of
 * this family does (a turn a fork inherited from its source, or an unknown thread). */
export function ownerOf(threads: ReadonlyMap<string, GraphThread>, threadId: string, turn: number): string | null {
  for (const thread of lineage(threads, threadId)) if (turn >= firstOwned(thread)) return thread.thread_id;
  return null;
}

function isFirstAtPoint(index: Index, thread: GraphThread): boolean {
  const siblings = index.children.get(thread.parent_thread_id ?? "") ?? [];
  const first = siblings.find((s) => s.branch_point_turn === thread.branch_point_turn);
  return first?.thread_id === thread.thread_id;
}

/** A branch that continues its parent from the parent's current tip. */
function isLiveContinuation(index: Index, thread: GraphThread): boolean {
  const parent = thread.parent_thread_id === null ? undefined : index.byId.get(thread.parent_thread_id);
  if (parent === undefined || thread.branch_point_turn === null) return false;
  return parent.turn_index === thread.branch_point_turn && isFirstAtPoint(index, thread);
}

/** A branch that continued its parent's tip when it was made (it may have flipped since). */
function wasContinuation(index: Index, thread: GraphThread): boolean {
  if (isLiveContinuation(index, thread)) return true;
  const parent = thread.parent_thread_id === null ? undefined : index.byId.get(thread.parent_thread_id);
  const bp = thread.branch_point_turn;
  if (parent === undefined || bp === null || !isFirstAtPoint(index, thread)) return false;
  if (bp < firstOwned(parent) - 1) return false;
  const next = index.nodeTime.get(nodeId(parent.thread_id, bp + 1));
  const created = index.createdAt(thread);
  return next !== undefined && Number.isFinite(created) && next > created;
}

/** thread id → displayed suffix (see the module comment). */
export function threadSuffixes(graph: Graph, createdAt?: ReadonlyMap<string, number>): Map<string, number[]> {
  return suffixesOf(buildIndex(graph, createdAt));
}

function suffixesOf(index: Index): Map<string, number[]> {
  const counters = new Map<string, { next: number }>();
  const suffixes = new Map<string, number[]>();
  for (const thread of index.order) {
    const parent = thread.parent_thread_id === null ? undefined : index.byId.get(thread.parent_thread_id);
    if (parent === undefined) {
      counters.set(thread.thread_id, { next: 1 });
      suffixes.set(thread.thread_id, []);
      continue;
    }
    const counter = counters.get(parent.thread_id) ?? { next: 1 };
    const ordinal = counter.next++;
    counters.set(thread.thread_id, wasContinuation(index, thread) ? counter : { next: 1 });
    const base = suffixes.get(parent.thread_id) ?? [];
    suffixes.set(thread.thread_id, isLiveContinuation(index, thread) ? base : [...base, ordinal]);
  }
  return suffixes;
}

/** thread id → lane: depth-first, siblings in creation order; a live tip
 * continuation stays in its parent's lane (it is the same line, later). */
function lanesOf(index: Index): { lanes: Map<string, number>; count: number } {
  const lanes = new Map<string, number>();
  let next = 0;
  const roots = index.order.filter((t) => t.parent_thread_id === null || !index.byId.has(t.parent_thread_id));
  const stack: GraphThread[] = [...roots].reverse();
  while (stack.length > 0) {
    const thread = stack.pop() as GraphThread;
    if (lanes.has(thread.thread_id)) continue;
    const parentLane = thread.parent_thread_id === null ? undefined : lanes.get(thread.parent_thread_id);
    if (parentLane !== undefined && isLiveContinuation(index, thread)) {
      lanes.set(thread.thread_id, parentLane);
    } else {
      lanes.set(thread.thread_id, next++);
    }
    const kids = index.children.get(thread.thread_id) ?? [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i] as GraphThread);
  }
  return { lanes, count: next };
}

/** A turn's card, where the layout puts it: its lane, label and the head given (the
 * full layout's, or those of a card added to the previous layout, lib/flow-add). */
export function turnCard(
  n: Graph["nodes"][number],
  thread: Graph["threads"][number] | undefined,
  at: { lane: number; label: string; head: string | null | undefined; xGap?: number; yGap?: number },
): FlowCard {
  const { lane, label, head } = at;
  // The thread's name and summary go on its first card, the one that shows them: on
  // every card, a summary written (or a name given) would render the whole lane again,
  // 50 cards for a change one card shows (a summary landing while a reply streams).
  const first = thread !== undefined && n.turn_index === firstOwned(thread);
  return {
    id: n.id,
    kind: "turn",
    threadId: n.thread_id,
    turn: n.turn_index,
    label,
    lane,
    x: n.turn_index * (at.xGap ?? X_GAP),
    y: lane * (at.yGap ?? Y_GAP),
    active: n.is_on_active_path,
    head: n.id === head,
    state: n.state,
    question: n.user_message,
    artifactCount: n.artifact_count,
    threadName: first ? thread.name : null,
    threadSummary: first ? (thread.summary ?? null) : null,
    archived: thread?.archived ?? false,
    firstOfThread: first,
    codes: n.codes ?? NO_CODES,
    merge: n.kind === "merge",
  };
}

/** The step before a turn's card (what its hover preview compares it with): the source
 * of the link into it (`parents`: target → source), else the previous turn of its thread
 * (a capped graph dropped that turn and its link: the step is still the one before, and
 * the card does not render again when the cap moves past it), else, for a thread's first
 * card, the thread's baseline (`thread:0`). */
export function stepBefore(card: FlowCard, parents: ReadonlyMap<string, string>): string {
  return parents.get(card.id) ?? nodeId(card.threadId, card.firstOfThread ? 0 : card.turn - 1);
}

/** The API graph as positioned cards and links (x = turn * gap, y = lane * gap). */
export function buildFlowGraph(graph: Graph, options: LayoutOptions = {}): FlowGraph {
  const xGap = options.xGap ?? X_GAP;
  const yGap = options.yGap ?? Y_GAP;
  const head = options.headTurnId === undefined ? graph.head_turn_id : options.headTurnId;
  const index = buildIndex(graph, options.createdAt);
  const suffixes = suffixesOf(index);
  const { lanes, count } = lanesOf(index);
  const labels = new Map<string, string>();
  const cards: FlowCard[] = [];
  const active = new Set<string>();

  for (const n of graph.nodes) {
    const lane = lanes.get(n.thread_id) ?? 0;
    const thread = index.byId.get(n.thread_id);
    const label = formatLabel(n.turn_index, suffixes.get(n.thread_id) ?? []);
    labels.set(n.id, label);
    if (n.is_on_active_path) active.add(n.id);
    cards.push(turnCard(n, thread, { lane, label, head, xGap, yGap }));
  }

  const links: FlowLink[] = graph.edges.map((e) => ({
    id: e.id,
    source: e.source,
    target: e.target,
    kind: e.kind,
    active: active.has(e.source) && active.has(e.target),
    reason: e.reason ?? null,
  }));

  for (const thread of index.order) {
    if (thread.deleted || thread.parent_thread_id === null || !ownsNoTurn(thread)) continue;
    const turn = firstOwned(thread);
    const id = stubId(thread.thread_id);
    const lane = lanes.get(thread.thread_id) ?? 0;
    const label = formatLabel(turn, suffixes.get(thread.thread_id) ?? []);
    const isActive = options.displayedThreadId === thread.thread_id;
    labels.set(id, label);
    cards.push({
      id,
      kind: "stub",
      threadId: thread.thread_id,
      turn,
      label,
      lane,
      x: turn * xGap,
      y: lane * yGap,
      active: isActive,
      head: false,
      state: "stub",
      question: thread.reason ?? "",
      artifactCount: 0,
      threadName: thread.name,
      threadSummary: thread.summary ?? null,
      archived: thread.archived ?? false,
      firstOfThread: true,
      codes: NO_CODES,
      merge: false,
    });
    const bp = thread.branch_point_turn ?? 0;
    const owner = bp > 0 ? ownerOf(index.byId, thread.parent_thread_id, bp) : null;
    if (owner !== null) {
      const source = nodeId(owner, bp);
      if (labels.has(source)) {
        links.push({
          id: `${source}->${id}`,
          source,
          target: id,
          kind: "stub",
          active: isActive && active.has(source),
          reason: thread.reason,
        });
      }
    }
  }

  return { cards, links, laneCount: count, truncated: graph.truncated, labels, suffixes, lanes };
}

export interface Offshoot {
  threadId: string;
  /** the label of the offshoot's first step */
  label: string;
  reason: string | null;
}

export interface GuideStep {
  turn: number;
  nodeId: string;
  label: string;
  offshoots: Offshoot[];
}

/**
 * The displayed path, turn by turn: each step's node, label, and the other paths
 * that fork at it (what the chat shows as offshoot chips).
 */
export function activePathGuide(graph: Graph, flow: FlowGraph, displayedThreadId: string): Map<number, GuideStep> {
  const byId = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const path = new Set([...lineage(byId, displayedThreadId)].map((t) => t.thread_id));
  const guide = new Map<number, GuideStep>();
  const last = byId.get(displayedThreadId)?.turn_index ?? 0;
  for (let turn = 1; turn <= last; turn++) {
    const owner = ownerOf(byId, displayedThreadId, turn);
    if (owner === null) continue; // a fork's inherited turn: a step of another family
    const id = nodeId(owner, turn);
    guide.set(turn, { turn, nodeId: id, label: flow.labels.get(id) ?? String(turn), offshoots: [] });
  }
  for (const thread of graph.threads) {
    if (thread.deleted || thread.parent_thread_id === null || path.has(thread.thread_id)) continue;
    const bp = thread.branch_point_turn ?? 0;
    const step = guide.get(bp);
    if (step === undefined) continue;
    const owner = ownerOf(byId, thread.parent_thread_id, bp);
    if (owner === null || nodeId(owner, bp) !== step.nodeId) continue;
    const first = ownsNoTurn(thread) ? stubId(thread.thread_id) : nodeId(thread.thread_id, bp + 1);
    step.offshoots.push({
      threadId: thread.thread_id,
      label: flow.labels.get(first) ?? formatLabel(bp + 1, flow.suffixes.get(thread.thread_id) ?? []),
      reason: thread.reason,
    });
  }
  return guide;
}

/** The latest node of a thread's path (what opening that path checks out), or null
 * when the thread owns no turn and its lineage has none either. */
export function tipNodeId(graph: Graph, threadId: string): string | null {
  const byId = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const turn = byId.get(threadId)?.turn_index ?? 0;
  const owner = turn < 1 ? null : ownerOf(byId, threadId, turn);
  return owner === null ? null : nodeId(owner, turn);
}
