"use client";
import { useEffect, useState } from "react";
import { useChosenPath } from "./use-big-trees";
import { tipNodeId, type Graph } from "@/features/graph/lib/graph";

interface Options {
  /** the thread the address names (null while the conversation is not created) */
  anchor: string | null;
  familyRoot: string | null;
  /** the family's working thread and head, as the history says */
  working: string | null;
  head: string | null;
  /** the history answer is fresh (not a cached one being refetched) */
  fresh: boolean;
  /** the thread on screen, and the family's graph */
  displayed: string | null;
  graph: Graph | undefined;
  /** shows a thread of the family without checking anything out */
  showThread: (threadId: string) => void;
}

/**
 * A family opens on the path this user last looked at, remembered on the server
 * (else on its main path)
 * (`GET …/chosen-path`), not on the family's shared head: another client may have
 * moved the head since. When the remembered node lies on another thread than the
 * working one (and is not the head), that thread is shown, as a view (nothing is checked out until a send or
 * a restore, which go through it as for any path opened). From then on the end of the
 * path shown is recorded as the chosen one: the head when the working thread is shown,
 * else the shown thread's newest step. A later move of the head is followed as before.
 * `moveTo(node, move)` records a path the page opens before opening it: a reload right
 * after the move opens on it.
 */
export function useChosenOpening({ anchor, familyRoot, working, head, fresh, displayed, graph, showThread }: Options) {
  // the family whose opening was settled (its remembered path shown, or not needed)
  const [opened, setOpened] = useState<string | null>(null);
  const settled = familyRoot !== null && opened === familyRoot && fresh;
  let end: string | null = null;
  if (settled && displayed !== null) end = displayed === working ? head : graph ? tipNodeId(graph, displayed) : null;
  const { data: chosen, moveTo } = useChosenPath(anchor, familyRoot, end);
  const node = chosen === undefined ? undefined : chosen.node_id;
  useEffect(() => {
    if (familyRoot === null || !fresh || node === undefined || opened === familyRoot) return;
    setOpened(familyRoot);
    // (the head itself, a restored step say, is shown as it is: its thread is a draft's
    // parent, and showing that thread would leave the restore)
    // Nothing chosen yet (the family was only ever moved by others, an API client say):
    // the main path, not whichever path was touched last.
    const thread = node === null ? familyRoot : node === head ? null : node.slice(0, node.lastIndexOf(":"));
    if (thread !== null && thread !== working) showThread(thread);
  }, [familyRoot, fresh, node, opened, working, head, showThread]);
  return { chosen, moveTo };
}
