"use client";
import { useMemo } from "react";
import { useAfterPaint } from "@/hooks/use-after-paint";
import { cardsInView, type Box, type Room, type View } from "@/features/graph/lib/opening-view";

// How far past the opening view (a fraction of the canvas, each side) the first cards
// reach: a short pan in the first moments still finds cards there.
const MARGIN = 0.5;

interface NodeLike {
  id: string;
  position: { x: number; y: number };
  initialWidth?: number;
  initialHeight?: number;
}

interface EdgeLike {
  source: string;
  target: string;
}

export interface FirstWindowInput<N extends NodeLike, E extends EdgeLike> {
  nodes: N[];
  edges: E[];
  /** the view the flow opens at, and the canvas's size (null until measured) */
  openAt: View | undefined;
  room: Room | null;
  /** cards the first frame needs whatever the view (the focus, a card an effect frames) */
  keep: readonly string[];
  /** only the cards in view are drawn (a big family): otherwise all are handed at once */
  culled: boolean;
}

/**
 * The nodes and edges to hand the trajectory's React Flow. React Flow draws each card
 * it holds until it has measured it, out of view too: a 2,000-step family's first frame
 * drew every card, and the first paint waited for all of them. On a family whose cards
 * are culled, the flow is handed only the cards around the view it opens at
 * (lib/opening-view's cardsInView) until the browser has painted once; the whole family
 * follows in a task after that paint. A small family is handed whole at once.
 */
export function useFirstWindow<N extends NodeLike, E extends EdgeLike>({
  nodes,
  edges,
  openAt,
  room,
  keep,
  culled,
}: FirstWindowInput<N, E>): { nodes: N[]; edges: E[] } {
  const painted = useAfterPaint(room !== null && nodes.length > 0);
  return useMemo(() => {
    if (painted || !culled || openAt === undefined || room === null) return { nodes, edges };
    const boxes = nodes.map((n): readonly [string, Box] => [
      n.id,
      { x: n.position.x, y: n.position.y, width: n.initialWidth ?? 0, height: n.initialHeight ?? 0 },
    ]);
    const ids = cardsInView(boxes, openAt, room, MARGIN, keep);
    return {
      nodes: nodes.filter((n) => ids.has(n.id)),
      edges: edges.filter((e) => ids.has(e.source) && ids.has(e.target)),
    };
  }, [painted, culled, openAt, room, nodes, edges, keep]);
}
