"use client";
import { useLayoutEffect, useMemo, useState, type RefObject } from "react";
import { openingView, type Framing, type Room, type View } from "@/features/graph/lib/opening-view";
import { CARD_SIZE } from "./use-flow-nodes";

export interface OpeningInput {
  canvas: RefObject<HTMLDivElement | null>;
  /** the flow is (about to be) mounted: the canvas shows cards */
  drawn: boolean;
  /** the px at the canvas's bottom left to the minimap and the zoom buttons */
  strip: number;
  nodes: readonly { id: string; position: { x: number; y: number } }[];
  focus: readonly string[];
  /** FitOnChange's framing (a stable object: a new one works the view out again) */
  framing: Framing;
}

/**
 * The canvas's size, measured before the flow mounts (a layout effect: before the
 * browser paints), and the view the flow opens at (lib/opening-view): on the displayed
 * path, so that the first cards it draws are the path's, not those at the layout's
 * origin. Null and undefined until the canvas is measured.
 */
export function useOpeningView({ canvas, drawn, strip, nodes, focus, framing }: OpeningInput): {
  room: Room | null;
  openAt: View | undefined;
} {
  const [room, setRoom] = useState<Room | null>(null);
  useLayoutEffect(() => {
    const el = canvas.current;
    if (!drawn || el === null) setRoom(null);
    else if (room === null) setRoom({ width: el.clientWidth, height: el.clientHeight - strip });
  }, [canvas, drawn, room, strip]);
  const openAt = useMemo(() => {
    if (room === null) return undefined;
    const byId = new Map(nodes.map((n) => [n.id, n] as const));
    const boxOf = (id: string) => {
      const n = byId.get(id);
      return n && { x: n.position.x, y: n.position.y, width: CARD_SIZE.initialWidth, height: CARD_SIZE.initialHeight };
    };
    return openingView(boxOf, focus, room, framing) ?? undefined;
  }, [room, nodes, focus, framing]);
  return { room, openAt };
}
