"use client";
import { useCallback, useEffect, useState } from "react";
import type { StudioFamily } from "@/hooks/use-studio-family";
import { ownsNoTurn, tipNodeId } from "@/features/graph/lib/graph";
import { useChosenOpening } from "./use-chosen-opening";
import { usePanelSize } from "./use-panel-size";
import { useTrajectoryFocus } from "./use-trajectory-focus";
import { useTreeNavigation } from "./use-tree-navigation";
import { useWayBack } from "./use-way-back";

export interface TrajectoryInput {
  family: StudioFamily;
  /** the caller may write to the family (restore, the way back) */
  canEdit: boolean;
  /** checks a step out (useStudioActions), resolving to whether it went through */
  checkout: (nodeId: string) => Promise<boolean>;
  setError: (message: string | null) => void;
}

export type Trajectory = ReturnType<typeof useTrajectory>;

/**
 * Moving about the family's graph: opening a path (its latest step checked out, or
 * shown only, for a path that owns no turn yet or for a reader), restoring a step and
 * the way back, the opening on the path last looked at, what the trajectory points at
 * (useTrajectoryFocus), the step whose details are open, and the big tree's navigation.
 */
export function useTrajectory({ family, canEdit, checkout, setError }: TrajectoryInput) {
  const { familyRoot, head, working, displayed, view, navigate, showThread } = family;
  const { restoredAt } = view;
  const familyGraph = view.graph;
  // The family opens on the path this user last looked at. Recorded from fresh answers
  // only: a cached history shown while it refetches may hold a head that has moved since.
  const { chosen, moveTo } = useChosenOpening({
    anchor: family.fresh.pending ? null : family.anchor,
    familyRoot,
    working,
    head,
    fresh: !family.history.isFetching,
    displayed,
    graph: familyGraph,
    showThread,
  });
  // A restore and the way back are moves the page makes itself: the step they check out
  // is recorded as the chosen path first, so that a reload right after one opens on it.
  const checkoutRecorded = useCallback((nodeId: string) => moveTo(nodeId, () => checkout(nodeId)), [moveTo, checkout]);
  const wayBack = useWayBack({
    familyRoot,
    head,
    restored: restoredAt !== null,
    graph: familyGraph,
    displayed,
    working,
    checkout: checkoutRecorded,
  });
  const { restore } = wayBack;
  const focus = useTrajectoryFocus({ flow: view.flow, familyRoot, head, navigate, checkout: restore });

  const openThread = useCallback(
    async (threadId: string) => {
      const inFamily = familyGraph?.threads.find((t) => t.thread_id === threadId);
      if (familyGraph && inFamily) {
        if ((inFamily.parent_thread_id !== null && ownsNoTurn(inFamily)) || (!canEdit && working !== threadId)) {
          showThread(threadId);
        } else if (working !== threadId) {
          const tip = tipNodeId(familyGraph, threadId);
          if (tip !== null && !(await checkoutRecorded(tip))) return;
        } else showThread(null);
      }
      navigate(threadId);
    },
    [familyGraph, working, checkoutRecorded, navigate, canEdit, showThread],
  );
  const onOpenThread = useCallback((threadId: string) => void openThread(threadId), [openThread]);
  // The step whose details are open (the ledger's drawer): opened only on an explicit
  // action (a card's details button, the step menu), never by a click, which selects.
  // A restore closes them unless they name the step restored: they never describe a
  // step the page has just left.
  const [detailsNode, setDetailsNode] = useState<string | null>(null);
  useEffect(() => setDetailsNode(null), [familyRoot]);
  const onRestore = useCallback(
    (nodeId: string) => {
      if (!canEdit) return;
      setDetailsNode((open) => (open === nodeId ? open : null));
      void restore(nodeId);
    },
    [restore, canEdit],
  );
  // A card's click shows its step in the chat (when it is on the path shown).
  const onFocusStep = focus.onFocusStep;
  const onDetails = useCallback((nodeId: string) => setDetailsNode(nodeId), []);
  const closeDetails = useCallback(() => setDetailsNode(null), []);
  // The graph panel's size and its maximised state (Escape leaves it: useStudioKeys).
  const size = usePanelSize();
  const nav = useTreeNavigation({
    graph: familyGraph,
    flow: view.flow,
    guide: view.guide,
    chosen,
    onFocusStep,
    openThread,
    setError,
  });
  const restoreFound = focus.onRestoreFound;
  const onRestoreFound = useCallback(() => void restoreFound(), [restoreFound]);

  return {
    wayBack,
    focus,
    nav,
    openThread,
    onOpenThread,
    onRestore,
    onFocusStep,
    onRestoreFound,
    detailsNode,
    onDetails,
    closeDetails,
    size,
  };
}
