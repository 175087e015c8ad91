"use client";
import { useCallback, useLayoutEffect, useRef } from "react";

/**
 * `fn` behind a function that is the same on every render and calls the `fn` of the
 * latest committed render: what it reads (the head, the graph) is read at call time.
 * For a callback handed to the graph's cards, which a new identity would all render
 * again (a head move at every turn's end). Not to be called during render.
 */
export function useStableCallback<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const latest = useRef(fn);
  useLayoutEffect(() => {
    latest.current = fn;
  });
  return useCallback((...args: A) => latest.current(...args), []);
}
