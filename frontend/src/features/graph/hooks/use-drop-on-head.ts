"use client";
import { useCallback, useEffect, useRef } from "react";
import { carryMeasured } from "@/features/graph/lib/flow-identity";
import type { FlowStore, TrajectoryNode } from "@/features/graph/types";

// How close (px, flow coordinates) a dropped card's centre must come to the head's.
const DROP_RADIUS = 90;

function centre(n: TrajectoryNode): { x: number; y: number } {
  return { x: n.position.x + (n.measured?.width ?? 0) / 2, y: n.position.y + (n.measured?.height ?? 0) / 2 };
}

/** Whether a dragged card was let go over (near) another card. */
function nearEnough(a: TrajectoryNode, b: TrajectoryNode): boolean {
  const p = centre(a);
  const q = centre(b);
  return Math.hypot(p.x - q.x, p.y - q.y) <= DROP_RADIUS;
}

/**
 * Cards stay where the layout puts them: a mouse drag only serves dropping a card on
 * the head, which brings its work into the current path (`onBringIn`); the card goes
 * back to its place either way. `flowStore` receives React Flow's store (SyncStore),
 * which holds the cards with the sizes it measured; `onNodeDragStop` is the same
 * function while the panel lives (a new one would be set in React Flow's store, every
 * card's subscription running, at each new layout).
 */
export function useDropOnHead(nodes: TrajectoryNode[], onBringIn: (nodeId: string) => void) {
  const flowStore = useRef<FlowStore | null>(null);
  const laidOut = useRef(nodes);
  useEffect(() => {
    laidOut.current = nodes;
  }, [nodes]);
  const onNodeDragStop = useCallback(
    (_: unknown, dragged: TrajectoryNode) => {
      const store = flowStore.current?.getState();
      if (!store) return;
      const held = store.nodes as TrajectoryNode[];
      const headCard = held.find((n) => n.type === "commit" && n.data.card.head);
      if (headCard && headCard.id !== dragged.id && dragged.type === "commit" && nearEnough(dragged, headCard)) {
        onBringIn(dragged.id);
      }
      store.setNodes(carryMeasured(held, laidOut.current));
    },
    [onBringIn],
  );
  return { flowStore, onNodeDragStop };
}
