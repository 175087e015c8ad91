"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { useStableCallback } from "@/hooks/use-stable-callback";
import { branchProfileQuery, useStartReplay } from "./use-whatif";
import type { Graph } from "@/features/graph/lib/graph";
import { ALTERNATIVES, rangeProblem, threadOf } from "@/features/whatif/lib/whatif";
import { messageOf } from "@/lib/api/client";

/** A replay's range being picked on the graph: its start, then its end (null while
 * the researcher picks it), and why the last pick could not end it. */
export interface ReplayRange {
  from: string;
  to: string | null;
  error: string | null;
}

/** The "Try N alternatives" job a card's button started last. */
export interface AlternativesJob {
  jobId: string;
  nodeId: string;
}

export interface GraphWhatIfOptions {
  graph: Graph | undefined;
  labels: ReadonlyMap<string, string>;
  /** the family on screen: another family forgets the range and the job */
  familyRoot: string | null;
  /** a card's click when no range is being picked (show the step) */
  onFocusStep: (nodeId: string) => void;
  setError: (message: string | null) => void;
}

export type GraphWhatIf = ReturnType<typeof useGraphWhatIf>;

/**
 * The graph's "what if". A replay's range is picked on the graph: a start ("Replay
 * from here…"), then a card clicked as its end, or the head, or the start alone. The
 * end is checked as the server checks it (the same step or a later one of a path
 * through the start) before the dialog opens; a refused pick says why and picking
 * goes on. "Try N alternatives" of any card is one click: a one-step replay with N
 * repeats and the branch's profile; its progress shows above the graph.
 */
export function useGraphWhatIf({ graph, labels, familyRoot, onFocusStep, setError }: GraphWhatIfOptions) {
  const { client } = useApi();
  const qc = useQueryClient();
  const { start } = useStartReplay();
  const [range, setRange] = useState<ReplayRange | null>(null);
  const [alternatives, setAlternatives] = useState<AlternativesJob | null>(null);
  useEffect(() => {
    setRange(null);
    setAlternatives(null);
  }, [familyRoot]);
  const label = useCallback((node: string) => labels.get(node) ?? node.slice(node.lastIndexOf(":") + 1), [labels]);

  const beginRange = useCallback((from: string) => setRange({ from, to: null, error: null }), []);
  const pickEnd = useCallback(
    (to: string) =>
      setRange((r) => {
        if (r === null) return r;
        const problem = graph ? rangeProblem(graph, r.from, to, label) : null;
        return problem === null ? { ...r, to, error: null } : { ...r, error: problem };
      }),
    [graph, label],
  );
  const repick = useCallback(() => setRange((r) => r && { ...r, to: null, error: null }), []);
  const closeRange = useCallback(() => setRange(null), []);
  const picking = range !== null && range.to === null;

  const tryAlternatives = useCallback(
    async (nodeId: string) => {
      const thread = threadOf(nodeId);
      try {
        const profileId = (await qc.fetchQuery(branchProfileQuery(client, thread))) ?? "default";
        const job = await start({ thread, from: nodeId, to: nodeId, profileId, repeats: ALTERNATIVES });
        setAlternatives({ jobId: job.id, nodeId });
      } catch (err) {
        setError(messageOf(err));
      }
    },
    [qc, client, start, setError],
  );
  const onTryAlternatives = useCallback((nodeId: string) => void tryAlternatives(nodeId), [tryAlternatives]);
  const closeAlternatives = useCallback(() => setAlternatives(null), []);
  /** A card's click: while a range is being picked it picks the end, else it shows the
   * step. Every card is handed it: one function whether picking or not, and whatever
   * the graph (`pickEnd` reads it), so neither a pick begun nor a new step renders them. */
  const onStep = useStableCallback((nodeId: string) => (picking ? pickEnd : onFocusStep)(nodeId));

  return {
    range,
    picking,
    label,
    beginRange,
    pickEnd,
    repick,
    closeRange,
    onStep,
    /** the step menu's replay action: "Replay from here…", or "to here" while picking */
    onReplay: picking ? pickEnd : beginRange,
    alternatives,
    onTryAlternatives,
    closeAlternatives,
  };
}
