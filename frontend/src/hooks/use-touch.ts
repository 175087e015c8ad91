"use client";
import { useCallback, useSyncExternalStore } from "react";

/** Whether a media query matches now (false while rendered on the server). */
export function useMedia(query: string): boolean {
  const subscribe = useCallback(
    (onChange: () => void) => {
      const list = window.matchMedia(query);
      list.addEventListener("change", onChange);
      return () => list.removeEventListener("change", onChange);
    },
    [query],
  );
  return useSyncExternalStore(
    subscribe,
    () => window.matchMedia(query).matches,
    () => false,
  );
}

/** Whether the main pointer is a finger: hints then speak of taps and long presses. */
export function useTouch(): boolean {
  return useMedia("(pointer: coarse)");
}

/** A phone-sized window (the stylesheets' narrow layout). */
export function useNarrow(): boolean {
  return useMedia("(max-width: 760px)");
}
