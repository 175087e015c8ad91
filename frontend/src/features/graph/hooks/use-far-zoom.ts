"use client";
import { useCallback, useRef, useState } from "react";
import type { Viewport } from "@xyflow/react";

// Zoomed out this far, nearly every card is in view anyway: culling would only mount
// and unmount cards at the view's edges as it moves (a card added just below the view
// would wait for a hundred others to mount). It is back on past the second zoom.
const CULL_OFF_BELOW = 0.08;
const CULL_ON_ABOVE = 0.12;

/** Whether the view is zoomed out far enough that the whole family is in view (culling
 * off, no minimap), and the flow's `onMove` that tells. State is set only when it
 * changes: the view moves at every frame of a pan. */
export function useFarZoom(): { far: boolean; onMove: (event: unknown, viewport: Viewport) => void } {
  const [far, setFar] = useState(false);
  const farRef = useRef(false);
  const onMove = useCallback((_: unknown, viewport: Viewport) => {
    const next = farRef.current ? viewport.zoom < CULL_ON_ABOVE : viewport.zoom < CULL_OFF_BELOW;
    if (next === farRef.current) return;
    farRef.current = next;
    setFar(next);
  }, []);
  return { far, onMove };
}
