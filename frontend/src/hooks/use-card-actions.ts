"use client";
import { useCallback, useMemo } from "react";
import type { Trajectory } from "@/features/graph/hooks/use-trajectory";
import { useGraphKeys } from "@/features/graph/hooks/use-graph-keys";
import type { CardActions } from "@/features/graph/types";
import { useMerge } from "@/features/merge/hooks/use-merge";
import { useGraphWhatIf } from "@/features/whatif/hooks/use-graph-whatif";
import { useFeatures } from "@/features/studies/hooks/use-features";
import type { StudioFamily } from "./use-studio-family";

const EMPTY_LABELS: ReadonlyMap<string, string> = new Map();

export interface CardActionsInput {
  family: StudioFamily;
  trajectory: Trajectory;
  renameThread: CardActions["onRename"];
  setError: (message: string | null) => void;
  /** asks whether to discard unsaved edits (useConfirmDiscard) */
  ask: (message: string) => Promise<boolean>;
}

/**
 * What a card of the graph offers, from every feature that acts on a step: restore and
 * compare (the trajectory), bring into the current path (the merge dialog), replay and
 * try alternatives (what if), rename, and the step menu with the graph's keys. Each is
 * offered only to whom the server would allow it. `cards` is the same object as long
 * as none of them changes, so a streamed token renders no card.
 */
export function useCardActions({ family, trajectory, renameThread, setError, ask }: CardActionsInput) {
  const { access, sharing, view, familyRoot, displayed } = family;
  const features = useFeatures();
  const canEdit = access.edit;
  // (a study's condition may turn merging or the alternatives off)
  const canMerge = canEdit && features.merge;
  const labels = view.flow?.labels ?? EMPTY_LABELS;
  const { onRestore, onFocusStep } = trajectory;
  const { onCompare } = trajectory.focus;
  const merging = useMerge({ target: displayed, labels, setError, ask });
  const bringIn = merging.open;
  const onBringIn = useCallback(
    (nodeId: string) => {
      if (canMerge) bringIn(nodeId);
    },
    [bringIn, canMerge],
  );
  const keys = useGraphKeys({ flow: trajectory.nav.shownFlow, onRestore, onCompare, onBringIn });
  const { openMenu } = keys;
  // What if on the graph: a replay's range picked there (a card's click picks its end), try N alternatives
  const whatif = useGraphWhatIf({ graph: view.graph, labels, familyRoot, onFocusStep, setError });
  const { onStep } = whatif;
  const { select } = keys;
  // A click selects the step (and shows it in the chat); its details wait for an explicit action.
  const onSelectStep = useCallback(
    (nodeId: string) => {
      select(nodeId);
      onStep(nodeId);
    },
    [select, onStep],
  );
  const onDetails = trajectory.onDetails;
  // (a viewer, who may not replay, sees no ⋔ on the cards)
  const onTryAlternatives = sharing.canSend && canEdit && features.whatif ? whatif.onTryAlternatives : undefined;
  const cards: CardActions = useMemo(
    () => ({
      onRestore,
      onFocusStep: onSelectStep,
      onDetails,
      onCompare,
      onBringIn,
      onRename: renameThread,
      onMenu: openMenu,
      onTryAlternatives,
    }),
    [onRestore, onSelectStep, onDetails, onCompare, onBringIn, renameThread, openMenu, onTryAlternatives],
  );
  return { cards, merging, keys, whatif, onBringIn, labels };
}
