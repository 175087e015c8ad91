"use client";
import { useMemo } from "react";
import type { Conversation, Workspace } from "@/lib/api/client";
import { activePathGuide, buildFlowGraph, type Graph, type GuideStep } from "@/lib/graph";
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
import type { Message } from "@/lib/transcript";

const EMPTY_GUIDE: ReadonlyMap<number, GuideStep> = new Map();

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
  const flow = useMemo(
    () =>
      family
        ? buildFlowGraph(family, { headTurnId: head ?? family.head_turn_id, displayedThreadId: displayed, createdAt })
        : null,
    [family, head, displayed, createdAt],
  );
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
