"use client";
import { useEffect, type RefObject } from "react";

/** While `active`, a mouse press outside `ref`'s element calls `onOutside` (a menu or a
 * result list closing itself). Pass a stable `onOutside`, or it re-subscribes each render. */
export function useClickOutside(ref: RefObject<HTMLElement | null>, active: boolean, onOutside: () => void): void {
  useEffect(() => {
    if (!active) return;
    const press = (e: MouseEvent) => {
      if (ref.current && !ref.current.contains(e.target as Node)) onOutside();
    };
    document.addEventListener("mousedown", press);
    return () => document.removeEventListener("mousedown", press);
  }, [ref, active, onOutside]);
}
