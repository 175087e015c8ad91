"use client";
import { useRef, type MouseEvent as ReactMouseEvent, type PointerEvent as ReactPointerEvent } from "react";

const LONG_PRESS_MS = 500;

/** A long press (a finger held still for half a second) opens the step's menu; the
 * click that ends it does nothing else. */
export function useLongPress(nodeId: string, onMenu: ((nodeId: string) => void) | undefined) {
  const timer = useRef<number | null>(null);
  const start = useRef<{ x: number; y: number } | null>(null);
  const done = useRef(false);
  const cancel = () => {
    if (timer.current !== null) window.clearTimeout(timer.current);
    timer.current = null;
  };
  return {
    fired: () => {
      const was = done.current;
      done.current = false;
      return was;
    },
    handlers: {
      onPointerDown: (e: ReactPointerEvent) => {
        if (!onMenu || e.button !== 0) return;
        done.current = false;
        start.current = { x: e.clientX, y: e.clientY };
        cancel();
        timer.current = window.setTimeout(() => {
          done.current = true;
          onMenu(nodeId);
        }, LONG_PRESS_MS);
      },
      onPointerMove: (e: ReactPointerEvent) => {
        const s = start.current;
        if (s && Math.hypot(e.clientX - s.x, e.clientY - s.y) > 8) cancel();
      },
      onPointerUp: cancel,
      onPointerCancel: cancel,
      onPointerLeave: cancel,
      onContextMenu: (e: ReactMouseEvent) => {
        // a long press on a touch screen also raises the context menu: the step's menu replaces it
        if (onMenu && (done.current || timer.current !== null)) e.preventDefault();
      },
    },
  };
}
