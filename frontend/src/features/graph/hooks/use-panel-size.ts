"use client";
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent, type PointerEvent } from "react";

const KEY = "haico.graph-panel";
const MIN = 160;
const STEP = 40;

interface Saved {
  height: number | null;
  maximised: boolean;
}

function clamp(h: number): number {
  return Math.max(MIN, Math.min(h, window.innerHeight - 120));
}

function load(): Saved {
  try {
    const raw = window.localStorage.getItem(KEY);
    const v = raw ? (JSON.parse(raw) as Partial<Saved>) : {};
    return {
      height: typeof v.height === "number" && v.height >= MIN ? v.height : null,
      maximised: v.maximised === true,
    };
  } catch {
    return { height: null, maximised: false };
  }
}

export type PanelSize = ReturnType<typeof usePanelSize>;

/**
 * The trajectory panel's size: a height the user drags (or sets with the arrow keys
 * on the handle), and a maximised state; both remembered in this browser.
 */
export function usePanelSize() {
  const [saved, setSaved] = useState<Saved>({ height: null, maximised: false });
  const panel = useRef<HTMLElement>(null);
  useEffect(() => setSaved(load()), []);
  const save = useCallback((next: Saved) => {
    setSaved(next);
    try {
      window.localStorage.setItem(KEY, JSON.stringify(next));
    } catch {
      // storage full or disabled: the size lasts for this page only
    }
  }, []);

  const startDrag = useCallback(
    (e: PointerEvent<HTMLDivElement>) => {
      const top = panel.current?.getBoundingClientRect().top ?? 0;
      const target = e.currentTarget;
      target.setPointerCapture(e.pointerId);
      let height = saved.height;
      const move = (ev: globalThis.PointerEvent) => {
        height = clamp(ev.clientY - top);
        if (panel.current) panel.current.style.flexBasis = `${height}px`;
      };
      const up = () => {
        target.removeEventListener("pointermove", move);
        target.removeEventListener("pointerup", up);
        if (height !== null) save({ ...saved, height });
      };
      target.addEventListener("pointermove", move);
      target.addEventListener("pointerup", up);
    },
    [saved, save],
  );
  const onKey = useCallback(
    (e: KeyboardEvent<HTMLDivElement>) => {
      if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
      e.preventDefault();
      const now = saved.height ?? panel.current?.getBoundingClientRect().height ?? 300;
      save({ ...saved, height: clamp(now + (e.key === "ArrowDown" ? STEP : -STEP)) });
    },
    [saved, save],
  );
  const toggleMaximised = useCallback(() => save({ ...saved, maximised: !saved.maximised }), [saved, save]);
  // (one object while nothing changes: the memoised trajectory panel receives it)
  return useMemo(
    () => ({ panel, height: saved.height, maximised: saved.maximised, startDrag, onKey, toggleMaximised }),
    [saved, startDrag, onKey, toggleMaximised],
  );
}
