"use client";
import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from "react";
import type { FlowGraph } from "@/features/graph/lib/graph";
import { actionOf, initialSelection, neighbour } from "@/lib/keymap";

/**
 * The trajectory's keyboard selection and keys (lib/keymap, scope "graph"): arrows move
 * the selection along and across paths, Enter (or Space) opens the step's menu, `r`
 * restores the step, `x` picks it for a comparison, `b` opens bringing it into the
 * current path (the merge dialog). The selection starts on the head
 * and returns there when the family's cards change under it. The step menu (`menu`)
 * is also what a long press on a card opens.
 */
export function useGraphKeys({
  flow,
  onRestore,
  onCompare,
  onBringIn,
}: {
  flow: FlowGraph | null;
  onRestore: (nodeId: string) => void;
  onCompare: (nodeId: string) => void;
  /** useMerge().open */
  onBringIn: (nodeId: string) => void;
}) {
  const [selection, setSelection] = useState<{ nodeId: string | null; tick: number }>({ nodeId: null, tick: 0 });
  const [menu, setMenu] = useState<string | null>(null);

  // The selection goes to the head whenever the head moves (a new step, a restore, the
  // way back), and when the graph no longer has the step selected (another family).
  const head = initialSelection(flow);
  const lastHead = useRef<string | null>(null);
  // (state set only when it changes: a state set to itself still renders the page once
  // more, which a node added to a big family would wait for)
  const selected = selection.nodeId;
  useEffect(() => {
    // (a graph on its way, with no card yet, is not a move)
    const moved = head !== null && head !== lastHead.current;
    if (head !== null) lastHead.current = head;
    if (moved || selected === null || !flow?.labels.has(selected)) {
      setSelection((s) => (s.nodeId === head && s.tick === 0 ? s : { nodeId: head, tick: 0 }));
    }
    if (menu !== null && !flow?.labels.has(menu)) setMenu(null);
  }, [flow, head, selected, menu]);

  const onGraphKey = useCallback(
    (e: KeyboardEvent<HTMLElement>) => {
      if (e.target !== e.currentTarget) return; // a card's own button or the name editor
      const action = actionOf(e, "graph");
      if (action === null || flow === null) return;
      const current = selection.nodeId ?? initialSelection(flow);
      if (current === null) return;
      e.preventDefault();
      e.stopPropagation();
      const card = flow.cards.find((c) => c.id === current);
      switch (action) {
        case "parent":
        case "child":
        case "up":
        case "down": {
          const next = neighbour(flow, current, action);
          if (next !== null) setSelection((s) => ({ nodeId: next, tick: s.tick + 1 }));
          break;
        }
        case "open":
          if (card?.kind === "turn") setMenu(current);
          break;
        case "restore":
          if (card?.kind === "turn") onRestore(current);
          break;
        case "compare":
          if (card?.kind === "turn") onCompare(current);
          break;
        case "bring": // (the head is the current path's own end: nothing to bring)
          if (card?.kind === "turn" && !card.head) onBringIn(current);
          break;
        default:
          break;
      }
    },
    [flow, selection.nodeId, onRestore, onCompare, onBringIn],
  );

  const openMenu = useCallback((nodeId: string) => {
    setSelection((s) => ({ nodeId, tick: s.tick }));
    setMenu(nodeId);
  }, []);
  const closeMenu = useCallback(() => setMenu(null), []);
  // A card's click selects its step; the view stays where it is (tick 0: FollowSelection
  // does not move it), so that the second click of a double-click lands on the same card.
  const select = useCallback(
    (nodeId: string) => setSelection((s) => (s.nodeId === nodeId ? s : { nodeId, tick: 0 })),
    [],
  );

  return { selection, onGraphKey, menu, openMenu, closeMenu, select };
}
