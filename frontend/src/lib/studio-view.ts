/**
 * What the studio page shows, derived from the server's answers: the family graph with
 * its fork point, the chat's turns, each card's reply and tool steps, the step a restored
 * draft stands at, the listed conversation on screen. Pure (no React): the page memoises
 * each view on its own inputs, so a streamed token recomputes none of them.
 */
import type { Conversation } from "./api/client";
import { lineage, ownsNoTurn, type FlowGraph, type Graph, type GuideStep } from "@/features/graph/lib/graph";
import { groupTurns, type ChatTurn, type Message, type TurnState } from "@/features/chat/lib/transcript";

/** What a commit card shows of its turn besides the question. */
export interface CardDetail {
  reply: string | null;
  steps: number;
}

/** The graph with the fork point of every root the conversation list says is a fork
 * (the graph's threads do not carry it); the same object when there is none to add. */
export function familyGraph(graph: Graph, conversations: readonly Conversation[] | undefined): Graph {
  const forks = new Map<string, number>();
  for (const c of conversations ?? []) {
    if (c.parent_thread_id === null && c.forked_from) forks.set(c.thread_id, c.forked_from.turn_index);
  }
  if (!graph.threads.some((t) => forks.has(t.thread_id))) return graph;
  return {
    ...graph,
    threads: graph.threads.map((t) => {
      const turn = forks.get(t.thread_id);
      return turn === undefined ? t : { ...t, forked_from_turn: turn };
    }),
  };
}

/** thread id → creation time (ms), for the labels' creation order. */
export function createdAtOf(conversations: readonly Conversation[] | undefined): Map<string, number> {
  return new Map((conversations ?? []).map((c) => [c.thread_id, Date.parse(c.created_at)] as const));
}

/** The displayed path's transcript as chat turns, each ended as its graph node says. */
export function chatTurns(
  messages: readonly Message[] | undefined,
  guide: ReadonlyMap<number, GuideStep>,
  graph: Graph | undefined,
): ChatTurn[] {
  const nodes = new Map((graph?.nodes ?? []).map((n) => [n.id, n] as const));
  const states = new Map<number, TurnState>();
  for (const step of guide.values()) {
    const node = nodes.get(step.nodeId);
    if (node) states.set(step.turn, node.state);
  }
  return groupTurns(messages ?? [], states);
}

/** A merge step of the displayed path: the chat shows what it brought in. */
export interface MergeStep {
  turn: number;
  nodeId: string;
  label: string;
  text: string;
}

/** The displayed path's merge steps, oldest first (they have no messages of their own). */
export function mergeSteps(graph: Graph | undefined, guide: ReadonlyMap<number, GuideStep>): MergeStep[] {
  const nodes = new Map((graph?.nodes ?? []).map((n) => [n.id, n] as const));
  const out: MergeStep[] = [];
  for (const step of guide.values()) {
    const node = nodes.get(step.nodeId);
    if (node?.kind === "merge") {
      out.push({ turn: step.turn, nodeId: step.nodeId, label: step.label, text: node.user_message });
    }
  }
  return out.sort((a, b) => a.turn - b.turn);
}

/** node id → its reply and tool-step count, for the cards of the displayed path. */
export function cardDetails(
  turns: readonly ChatTurn[],
  guide: ReadonlyMap<number, GuideStep>,
): Map<string, CardDetail> {
  const details = new Map<string, CardDetail>();
  for (const t of turns) {
    const step = guide.get(t.turn);
    if (step) details.set(step.nodeId, { reply: t.reply || null, steps: t.tools.length });
  }
  return details;
}

/** node id → the user's message at that step. */
export function stepQuestions(graph: Graph | undefined): Map<string, string> {
  return new Map((graph?.nodes ?? []).map((n) => [n.id, n.user_message] as const));
}

/** The label of the step a restored draft stands at (a branch that owns no turn yet,
 * opened by restoring `head`), or null when the displayed thread is not such a draft. */
export function restoredAt(
  graph: Graph | undefined,
  flow: FlowGraph | null,
  displayed: string | null,
  head: string | null,
): string | null {
  const thread = graph?.threads.find((t) => t.thread_id === displayed);
  if (!thread || thread.parent_thread_id === null || !ownsNoTurn(thread) || !head) return null;
  return flow?.labels.get(head) ?? String(thread.branch_point_turn ?? "");
}

/** The listed conversation the displayed thread is: a draft is unlisted, so its nearest
 * listed ancestor; the anchor's when the graph does not know the thread. */
export function listedConversation(
  conversations: readonly Conversation[] | undefined,
  graph: Graph | undefined,
  displayed: string | null,
  anchor: string | null,
): Conversation | undefined {
  const listed = new Map((conversations ?? []).map((c) => [c.thread_id, c] as const));
  const threads = new Map((graph?.threads ?? []).map((t) => [t.thread_id, t] as const));
  if (displayed !== null) {
    if (listed.has(displayed)) return listed.get(displayed);
    for (const thread of lineage(threads, displayed)) {
      const hit = listed.get(thread.thread_id);
      if (hit) return hit;
    }
  }
  return anchor ? listed.get(anchor) : undefined;
}
