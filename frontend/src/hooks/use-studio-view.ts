"use client";
import { useMemo, useState } from "react";
import type { Conversation, Workspace } from "@/lib/api/client";
import { withOneCardAdded } from "@/features/graph/lib/flow-add";
import { keepLayout, keepUnchanged } from "@/features/graph/lib/flow-identity";
import {
  activePathGuide,
  buildFlowGraph,
  type FlowGraph,
  type Graph,
  type GuideStep,
} from "@/features/graph/lib/graph";
import { rejectedByStep } from "@/lib/research";
import {
  cardDetails,
  chatTurns,
  mergeSteps,
  createdAtOf,
  familyGraph,
  listedConversation,
  restoredAt,
  stepQuestions,
} from "@/lib/studio-view";
import type { Message } from "@/features/chat/lib/transcript";

const EMPTY_GUIDE: ReadonlyMap<number, GuideStep> = new Map();

/** What the kept layout was made from. */
interface LaidOutFrom {
  graph: Graph;
  head: string | null;
  displayed: string | null;
  createdAt: ReadonlyMap<string, number>;
}

export interface StudioViewInput {
  conversations: Conversation[] | undefined;
  graph: Graph | undefined;
  messages: Message[] | undefined;
  workspace: Workspace | undefined;
  head: string | null;
  displayed: string | null;
  anchor: string | null;
}

/** The page's derived views (lib/studio-view), each memoised on the server answers it
 * is made of: none changes while a reply streams, so nothing built on them re-renders. */
export function useStudioView({ conversations, graph, messages, workspace, head, displayed, anchor }: StudioViewInput) {
  const createdAt = useMemo(() => createdAtOf(conversations), [conversations]);
  const family = useMemo(() => (graph ? familyGraph(graph, conversations) : undefined), [graph, conversations]);
  // Each card and link that a new answer leaves as it was keeps its object (one node
  // added: one new card), so that nothing built on it is rebuilt or re-rendered; a turn
  // just started at a path's tip is added to the previous layout without a new one; an
  // answer with the same cards joined the same way (a path switch's fetched graph after
  // the one held) keeps the cards where they are shown.
  const [kept] = useState(() => ({ flow: null as FlowGraph | null, from: null as LaidOutFrom | null }));
  const flow = useMemo(() => {
    if (!family) return null;
    const headTurnId = head ?? family.head_turn_id;
    const from = kept.from;
    const same =
      from !== null && from.head === headTurnId && from.displayed === displayed && from.createdAt === createdAt;
    const grown = same && kept.flow ? withOneCardAdded(from.graph, family, kept.flow, headTurnId) : null;
    // (the same cards joined the same way keep their places: lib/flow-identity's keepLayout)
    const next = buildFlowGraph(family, { headTurnId, displayedThreadId: displayed, createdAt });
    kept.flow = grown ?? keepUnchanged(kept.flow, keepLayout(kept.flow, next));
    kept.from = { graph: family, head: headTurnId, displayed, createdAt };
    return kept.flow;
  }, [family, head, displayed, createdAt, kept]);
  const guide = useMemo(
    () => (family && flow && displayed ? activePathGuide(family, flow, displayed) : EMPTY_GUIDE),
    [family, flow, displayed],
  );
  const turns = useMemo(() => chatTurns(messages, guide, family), [messages, guide, family]);
  const details = useMemo(() => cardDetails(turns, guide), [turns, guide]);
  const merges = useMemo(() => mergeSteps(family, guide), [family, guide]);
  const rejected = useMemo(() => rejectedByStep(workspace?.rejected ?? [], guide), [workspace, guide]);
  const questions = useMemo(() => stepQuestions(family), [family]);
  const current = useMemo(
    () => listedConversation(conversations, family, displayed, anchor),
    [conversations, family, displayed, anchor],
  );
  return {
    graph: family,
    flow,
    guide,
    turns,
    merges,
    details,
    rejected,
    questions,
    current,
    restoredAt: restoredAt(family, flow, displayed, head),
  };
}
