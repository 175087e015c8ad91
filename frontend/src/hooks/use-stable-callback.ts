"use client";
import { useCallback, useLayoutEffect, useRef, type RefObject } from "react";

/**
 * A ref holding `value` as of the latest committed render (set in a layout effect, not
 * during render): for a callback or an effect that must read the newest value without
 * changing identity when it changes. Not to be read during render.
 */
export function useLatest<T>(value: T): RefObject<T> {
  const latest = useRef(value);
  useLayoutEffect(() => {
    latest.current = value;
  });
  return latest;
}

/**
 * `fn` behind a function that is the same on every render and calls the `fn` of the
 * latest committed render: what it reads (the head, the graph) is read at call time.
 * For a callback handed to the graph's cards, which a new identity would all render
 * again (a head move at every turn's end). Not to be called during render.
 */
export function useStableCallback<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const latest = useLatest(fn);
  return useCallback((...args: A) => latest.current(...args), [latest]);
}
