"use client";
import { useCallback, useReducer } from "react";
import { draftStore } from "@/lib/drafts";

const drafts = draftStore(typeof window === "undefined" ? null : window.sessionStorage);

/** The composer's draft for `thread` (see `draftStore`), and its update: `update(t, f)`
 * sets thread t's draft to f(its draft now), so a send that fails after the user
 * moved on still gives the text back to the conversation it was meant for. */
export function useDraft(thread: string) {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const update = useCallback((t: string, next: (now: string) => string) => {
    drafts.set(t, next(drafts.get(t)));
    rerender();
  }, []);
  return [drafts.get(thread), update] as const;
}
