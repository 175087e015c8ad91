/**
 * Finding one's way in a big family, as pure functions: the children of a node, the
 * siblings of a step ("‹ 2/3 ›"), the walk down a remembered path to its leaf, the
 * breadcrumbs of the displayed path with its branch points, and the conversations
 * menu's filter. No React: unit-tested on their own.
 */
import type { Conversation } from "@/lib/api/client";
import {
  firstOwned,
  lineage,
  nodeId,
  ownerOf,
  type FlowCard,
  type FlowGraph,
  type Graph,
  type GraphThread,
  type GuideStep,
} from "./graph";

function parseNode(id: string): { thread: string; turn: number } | null {
  const at = id.lastIndexOf(":");
  const turn = Number(id.slice(at + 1));
  return at < 0 || !Number.isInteger(turn) ? null : { thread: id.slice(0, at), turn };
}

/** Threads that an archive hides: each archived thread and every thread below it. */
function hiddenThreads(graph: Graph): Set<string> {
  const byId = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const hidden = new Set<string>();
  for (const t of graph.threads) {
    if (t.deleted || [...lineage(byId, t.thread_id)].some((a) => a.archived)) hidden.add(t.thread_id);
  }
  return hidden;
}

export interface TreeIndex {
  byId: Map<string, GraphThread>;
  hidden: Set<string>;
  nodes: Set<string>;
}

export function treeIndex(graph: Graph): TreeIndex {
  return {
    byId: new Map(graph.threads.map((t) => [t.thread_id, t] as const)),
    hidden: hiddenThreads(graph),
    nodes: new Set(graph.nodes.map((n) => n.id)),
  };
}

/**
 * The children of a node (null: the root-level nodes), the same thread's next turn
 * first, then the branches that start there in the graph's order. Archived and
 * deleted threads are left out, except `keep` (the step on screen).
 */
export function childrenOf(index: TreeIndex, parent: string | null, keep: string | null = null): string[] {
  const p = parent === null ? null : parseNode(parent);
  const turn = p === null ? 1 : p.turn + 1;
  const kids: string[] = [];
  const add = (id: string) => {
    if (!kids.includes(id) && index.nodes.has(id)) kids.push(id);
  };
  if (p !== null && index.byId.get(p.thread) !== undefined) {
    const cont = nodeId(p.thread, turn);
    if (!index.hidden.has(p.thread) || cont === keep) add(cont);
  }
  for (const t of index.byId.values()) {
    if (firstOwned(t) !== turn) continue;
    const id = nodeId(t.thread_id, turn);
    if (index.hidden.has(t.thread_id) && id !== keep) continue;
    if (p === null) {
      if (t.parent_thread_id === null || t.branch_point_turn === 0) add(id);
    } else if (t.parent_thread_id !== null && ownerOf(index.byId, t.parent_thread_id, p.turn) === p.thread) add(id);
  }
  return kids;
}

export interface Siblings {
  /** every sibling's node id, in order; the step itself included */
  ids: string[];
  /** the step's position among them (0-based) */
  index: number;
}

/** The step's siblings when its parent forks (more than one child); null otherwise. */
export function siblingsOf(index: TreeIndex, step: string): Siblings | null {
  const s = parseNode(step);
  if (s === null) return null;
  const parent = s.turn <= 1 ? null : ownerOf(index.byId, s.thread, s.turn - 1);
  const ids = childrenOf(index, parent === null ? null : nodeId(parent, s.turn - 1), step);
  const at = ids.indexOf(step);
  return ids.length > 1 && at >= 0 ? { ids, index: at } : null;
}

/** From `start` down to a leaf, taking the remembered child at each fork (`choices`:
 * fork node → child node), else the first child. The leaf ends a thread's path. */
export function descend(index: TreeIndex, start: string, choices: ReadonlyMap<string, string>): string {
  let node = start;
  const seen = new Set<string>([node]);
  for (;;) {
    const kids = childrenOf(index, node);
    if (kids.length === 0) return node;
    const chosen = choices.get(node);
    const next = chosen !== undefined && kids.includes(chosen) ? chosen : kids[0];
    if (next === undefined || seen.has(next)) return node;
    seen.add(next);
    node = next;
  }
}

export interface Crumb {
  nodeId: string;
  label: string;
  /** other paths fork here */
  fork: number;
  /** a gap before this crumb: steps left out between it and the previous one */
  gap: boolean;
}

/**
 * The breadcrumbs of the displayed path: all of a short path (up to `whole` steps);
 * else its first and last steps, every branch point, and the steps around the end,
 * long plain stretches (two steps or more) left out (`gap`).
 */
export function breadcrumbs(guide: ReadonlyMap<number, GuideStep>, tail = 3, whole = 7): Crumb[] {
  const steps = [...guide.values()].sort((a, b) => a.turn - b.turn);
  const wanted = (s: GuideStep | undefined, i: number) =>
    s !== undefined && (steps.length <= whole || i === 0 || i >= steps.length - tail || s.offshoots.length > 0);
  // a gap stands for two steps or more: one step alone is shown rather than hidden
  const keep = steps.filter((s, i) => wanted(s, i) || (wanted(steps[i - 1], i - 1) && wanted(steps[i + 1], i + 1)));
  const position = new Map(steps.map((s, i) => [s.turn, i] as const));
  let previous = -1;
  return keep.map((s) => {
    const at = position.get(s.turn) ?? 0;
    const crumb = {
      nodeId: s.nodeId,
      label: s.label,
      fork: s.offshoots.length,
      gap: at > previous + 1 && previous >= 0,
    };
    previous = at;
    return crumb;
  });
}

/** A conversation as the menu shows it: its branch name, else its summary, else its title. */
export function displayName(c: Pick<Conversation, "title" | "name" | "summary">): string {
  return c.name ?? c.summary ?? c.title;
}

/** The conversations whose title, name or summary holds every word of `filter`. */
export function filterConversations<T extends Pick<Conversation, "title" | "name" | "summary">>(
  list: readonly T[],
  filter: string,
): T[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [...list];
  return list.filter((c) => {
    const text = `${c.title} ${c.name ?? ""} ${c.summary ?? ""}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

/** fork node → chosen child, from the server's chosen path. */
export function choiceMap(choices: readonly { fork_node_id: string; child_node_id: string }[] | undefined) {
  return new Map((choices ?? []).map((c) => [c.fork_node_id, c.child_node_id] as const));
}

/** A branch's fold state, on its first card: folded (its later steps and every
 * branch below it hidden) and how many cards that hides. */
export interface Fold {
  folded: boolean;
  hidden: number;
}

export type FoldedCard = FlowCard & { fold: Fold | null };
export type FoldedFlow = Omit<FlowGraph, "cards"> & { cards: FoldedCard[] };

/** Whether a branch is folded: as the user toggled it, else folded when archived. */
export function isFolded(thread: GraphThread, toggles: ReadonlyMap<string, boolean>): boolean {
  return toggles.get(thread.thread_id) ?? thread.archived ?? false;
}

/**
 * The flow with folded branches collapsed to their first card: a folded branch's
 * later cards and the cards of every branch below it are left out, with the links
 * that touch them. The displayed path is never folded away. Each branch's first card
 * carries its fold state (for the fold button).
 */
export function foldFlow(graph: Graph, flow: FlowGraph, toggles: ReadonlyMap<string, boolean>): FoldedFlow {
  const byId = new Map(graph.threads.map((t) => [t.thread_id, t] as const));
  const onPath = new Set(flow.cards.filter((c) => c.active).map((c) => c.threadId));
  const folded = new Set(
    graph.threads
      .filter((t) => t.parent_thread_id !== null && isFolded(t, toggles) && !onPath.has(t.thread_id))
      .map((t) => t.thread_id),
  );
  // The topmost folded thread above (or at) each thread, if any.
  const foldOf = new Map<string, string>();
  for (const t of graph.threads) {
    let top: string | null = null;
    for (const a of lineage(byId, t.thread_id)) if (folded.has(a.thread_id)) top = a.thread_id;
    if (top !== null) foldOf.set(t.thread_id, top);
  }
  const hiddenCount = new Map<string, number>();
  const shown: FlowCard[] = [];
  const hiddenIds = new Set<string>();
  for (const card of flow.cards) {
    const top = foldOf.get(card.threadId);
    const shows = top === undefined || (top === card.threadId && card.firstOfThread) || card.active;
    if (shows) shown.push(card);
    else {
      hiddenIds.add(card.id);
      if (top !== undefined) hiddenCount.set(top, (hiddenCount.get(top) ?? 0) + 1);
    }
  }
  const owned = new Set(flow.cards.filter((c) => !c.firstOfThread).map((c) => c.threadId));
  const parents = new Set(graph.threads.map((t) => t.parent_thread_id));
  const foldOfCard = (card: FlowCard): Fold | null => {
    const thread = byId.get(card.threadId);
    if (!card.firstOfThread || thread === undefined || thread.parent_thread_id === null) return null;
    if (folded.has(card.threadId)) return { folded: true, hidden: hiddenCount.get(card.threadId) ?? 0 };
    if (!onPath.has(card.threadId) && (owned.has(card.threadId) || parents.has(card.threadId)))
      return { folded: false, hidden: 0 };
    return null;
  };
  return {
    ...flow,
    cards: shown.map((card) => withFold(card, foldOfCard(card))),
    links:
      hiddenIds.size === 0
        ? flow.links
        : flow.links.filter((l) => !hiddenIds.has(l.source) && !hiddenIds.has(l.target)),
  };
}

// A card kept by the layout (lib/flow-identity) keeps its folded card too, while its
// fold state is the same: one node added leaves every other card's object as it was.
const FOLDED = new WeakMap<FlowCard, FoldedCard>();

function withFold(card: FlowCard, fold: Fold | null): FoldedCard {
  const made = FOLDED.get(card);
  const was = made?.fold ?? null;
  if (
    made !== undefined &&
    (was === fold || (was && fold && was.folded === fold.folded && was.hidden === fold.hidden))
  ) {
    return made;
  }
  const next = { ...card, fold };
  FOLDED.set(card, next);
  return next;
}

/** Whether two records hold the same values, key by key; a nested plain object (a
 * card) is compared the same way, one level down. For keeping a card's data object
 * when a new graph answer leaves the card as it was: a memoised card then does not
 * render again, so adding one node renders one card. */
export function sameShallow(
  a: Readonly<Record<string, unknown>>,
  b: Readonly<Record<string, unknown>>,
  depth = 1,
): boolean {
  if (a === b) return true;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    const x = a[k];
    const y = b[k];
    if (x === y) return true;
    const plain = (v: unknown) => typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
    return (
      depth > 0 &&
      plain(x) &&
      plain(y) &&
      sameShallow(x as Record<string, unknown>, y as Record<string, unknown>, depth - 1)
    );
  });
}

/**
 * The graph with a node that has just started (a `chat/turnStarted` action), drawn at
 * once instead of after the graph is fetched again (which follows and replaces it):
 * running, on the displayed path when its parent is, joined to its parent. Unchanged
 * when the node is there already or its thread is not in this graph.
 */
export function withStartedNode(graph: Graph, turnId: string, parentTurnId: string | null, question: string): Graph {
  const node = parseNode(turnId);
  if (node === null || graph.nodes.some((n) => n.id === turnId)) return graph;
  if (!graph.threads.some((t) => t.thread_id === node.thread)) return graph;
  const parent = parentTurnId === null ? undefined : graph.nodes.find((n) => n.id === parentTurnId);
  if (parentTurnId !== null && parent === undefined) return graph;
  const edges =
    parent === undefined
      ? graph.edges
      : [
          ...graph.edges,
          {
            id: `${parent.id}->${turnId}`,
            source: parent.id,
            target: turnId,
            kind: parent.thread_id === node.thread ? ("turn" as const) : ("branch" as const),
            reason: null,
          },
        ];
  return {
    ...graph,
    threads: graph.threads.map((t) =>
      t.thread_id === node.thread && t.turn_index < node.turn ? { ...t, turn_index: node.turn } : t,
    ),
    nodes: [
      ...graph.nodes,
      {
        id: turnId,
        thread_id: node.thread,
        turn_index: node.turn,
        user_message: question.slice(0, 500),
        captured_at: new Date().toISOString(),
        artifact_count: 0,
        is_on_active_path: parent === undefined ? true : parent.is_on_active_path,
        kind: "turn",
        state: "running",
      },
    ],
    edges,
  };
}

/** What the trajectory frames: its frame and the set of its cards, in one string that
 * does not depend on the cards' order (a graph fetched again lists the node drawn at a
 * turn's start elsewhere than the page had put it: the same cards, nothing to frame). */
export function cardSetSignature(frame: string, ids: readonly string[]): string {
  return `${frame}|${[...ids].sort().join(",")}`;
}

/** The cards a small change of the card set added (a turn started, a branch made): the
 * new ids when `next` adds at most a few cards to `previous` and drops at most a few
 * (a capped graph fetched again drops its oldest steps as new ones come); none when the
 * same cards come in another order. Null for a bigger change (another family or path,
 * an unfold): the view is framed again. */
export function addedCards(previous: string, next: string): string[] | null {
  if (previous === "" || previous === next) return null;
  const [frameA, idsA = ""] = previous.split("|");
  const [frameB, idsB = ""] = next.split("|");
  if (frameA !== frameB) return null;
  const before = new Set(idsA.split(","));
  const after = new Set(idsB.split(","));
  const added = [...after].filter((id) => !before.has(id));
  if (added.length > FEW) return null;
  let gone = 0;
  for (const id of before) if (!after.has(id) && ++gone > FEW) return null;
  return added;
}

// "A few" cards for addedCards: a turn and what comes with it (a stub, a merge).
const FEW = 3;
