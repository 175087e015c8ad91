"use client";
import { useEffect, useState } from "react";

/**
 * False until the browser has painted once with `ready` true, then true for good: for
 * what a first paint need not wait for (the trajectory's minimap, which draws every
 * card of the family again), mounted in a task of its own after the frame that shows
 * the cards. An animation frame runs before that paint, a timeout queued from it after.
 */
export function useAfterPaint(ready: boolean): boolean {
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (done || !ready) return;
    let timer: number | undefined;
    const frame = requestAnimationFrame(() => {
      timer = window.setTimeout(() => setDone(true), 0);
    });
    return () => {
      cancelAnimationFrame(frame);
      window.clearTimeout(timer);
    };
  }, [done, ready]);
  return done;
}
