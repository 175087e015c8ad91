"use client";
import { useCallback, useEffect, useRef, useState } from "react";
import type { SearchHit } from "@/lib/api/client";
import type { FlowGraph } from "@/features/graph/lib/graph";
import { NO_PICK, pickForCompare, type ComparePick } from "@/lib/research";

export interface FoundStep {
  nodeId: string;
  tick: number;
  hit: SearchHit;
}

/**
 * What the trajectory points at besides the head: the two steps picked for a comparison,
 * the step a search hit found, the chat message flashed for a clicked step, and whether
 * the panel is collapsed. Every callback is stable while the family's graph is the same.
 * `navigate` opens another family (a search hit in it); `checkout` restores a found step.
 */
export function useTrajectoryFocus({
  flow,
  familyRoot,
  head,
  navigate,
  checkout,
}: {
  flow: FlowGraph | null;
  familyRoot: string | null;
  head: string | null;
  navigate: (thread: string) => void;
  checkout: (nodeId: string) => Promise<boolean>;
}) {
  const [pick, setPick] = useState<ComparePick>(NO_PICK);
  const [found, setFound] = useState<FoundStep | null>(null);
  const [flash, setFlash] = useState<{ nodeId: string; tick: number } | null>(null);
  const [collapsed, setCollapsed] = useState(false);

  useEffect(() => {
    setPick(NO_PICK);
    // a search hit belongs to its family: opening another family drops it
    if (familyRoot !== null) setFound((f) => (f !== null && f.hit.root_thread_id !== familyRoot ? null : f));
  }, [familyRoot]);

  const onCompare = useCallback((nodeId: string) => setPick((p) => pickForCompare(p, nodeId)), []);
  const onCompareWithHead = useCallback(() => {
    if (head !== null) setPick((p) => (p.a !== null ? { a: p.a, b: head } : p));
  }, [head]);
  const onSwap = useCallback(() => setPick((p) => ({ a: p.b, b: p.a })), []);
  const onCancelCompare = useCallback(() => setPick(NO_PICK), []);
  const onToggle = useCallback(() => setCollapsed((c) => !c), []);

  /** A click on a card of the displayed path scrolls the chat to its message. The same
   * function whatever the graph: every card is handed it, and a new node must not
   * render every card again. */
  const flowRef = useRef(flow);
  useEffect(() => {
    flowRef.current = flow;
  }, [flow]);
  const onFocusStep = useCallback((nodeId: string) => {
    const card = flowRef.current?.cards.find((c) => c.id === nodeId);
    if (card?.active) setFlash({ nodeId, tick: Date.now() });
  }, []);

  // A search hit: open its family if it is another one, frame and mark its card, and
  // flash its message when it is on the displayed path; restoring it is one click more.
  const onSearchHit = useCallback(
    (hit: SearchHit) => {
      setFound({ nodeId: hit.node_id, tick: Date.now(), hit });
      setCollapsed(false);
      if (hit.root_thread_id !== familyRoot) {
        setPick(NO_PICK);
        navigate(hit.root_thread_id);
      } else onFocusStep(hit.node_id);
    },
    [familyRoot, navigate, onFocusStep],
  );
  const onRestoreFound = useCallback(async () => {
    if (found === null) return;
    if (await checkout(found.nodeId)) setFound(null);
  }, [found, checkout]);
  const onDismissFound = useCallback(() => setFound(null), []);

  return {
    pick,
    found,
    flash,
    collapsed,
    comparing: pick.a !== null && pick.b !== null,
    onCompare,
    onCompareWithHead,
    onSwap,
    onCancelCompare,
    onToggle,
    onFocusStep,
    onSearchHit,
    onRestoreFound,
    onDismissFound,
  };
}
