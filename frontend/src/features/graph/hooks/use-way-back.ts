"use client";
import { useCallback, useEffect, useRef, useState } from "react";
import { tipNodeId, type Graph } from "@/features/graph/lib/graph";
import { stepLeft } from "@/features/graph/lib/way-back";
import { useStableCallback } from "@/hooks/use-stable-callback";

const KEY = "haico:way-back:";

function read(root: string | null): string | null {
  if (root === null || typeof window === "undefined") return null;
  try {
    return window.localStorage.getItem(KEY + root);
  } catch {
    return null;
  }
}

function write(root: string, nodeId: string | null): void {
  try {
    if (nodeId === null) window.localStorage.removeItem(KEY + root);
    else window.localStorage.setItem(KEY + root, nodeId);
  } catch {
    // storage full or denied: the way back falls back to the restored path's tip
  }
}

/**
 * The way back from a restore. Restoring a step remembers the step you were at (the
 * end of the path you left: the head, or the newest step of a path opened as a view), per family and in local storage, so that it survives a reload as the
 * restore itself does (the server holds the restored draft). `back` checks that step
 * out again; without a remembered one (a restore made in another browser) it returns
 * to the newest step of the path the restore branched from.
 */
export function useWayBack({
  familyRoot,
  head,
  restored,
  graph,
  displayed,
  working,
  checkout,
}: {
  familyRoot: string | null;
  head: string | null;
  /** the family's working thread (the head's): another thread shown is a view */
  working: string | null;
  /** whether the page shows a restored step (a draft) */
  restored: boolean;
  graph: Graph | undefined;
  displayed: string | null;
  checkout: (nodeId: string) => Promise<boolean>;
}) {
  const [left, setLeft] = useState<string | null>(null);
  useEffect(() => setLeft(read(familyRoot)), [familyRoot]);

  // Once the page stops showing a restore (a send from it, or the way back), forget
  // it; judged only on a graph that knows the thread shown (not while one loads).
  const settled = graph?.threads.some((t) => t.thread_id === displayed) ?? false;
  const was = useRef<boolean | null>(null);
  useEffect(() => {
    if (!settled) return;
    if (was.current === true && !restored && familyRoot !== null) {
      write(familyRoot, null);
      setLeft(null);
    }
    was.current = restored;
  }, [settled, restored, familyRoot]);

  // Every card is handed `restore`: the same function whatever the head, which it reads
  // when called (the head of the click's time), so that a turn's end, which moves the
  // head, does not render every card again.
  const restore = useStableCallback(async (nodeId: string): Promise<boolean> => {
    // where you were: the end of the path on screen, which is the head only when the
    // working thread is shown (a path opened as a view ends at its own newest step)
    const shownEnd = displayed === null || displayed === working || !graph ? head : tipNodeId(graph, displayed);
    const from = stepLeft({ restored, left, head: shownEnd }, nodeId);
    const ok = await checkout(nodeId);
    if (ok && familyRoot !== null && from !== null) {
      write(familyRoot, from);
      setLeft(from);
    }
    return ok;
  });

  const fallback = (() => {
    if (!graph || displayed === null) return null;
    const parent = graph.threads.find((t) => t.thread_id === displayed)?.parent_thread_id ?? null;
    return parent === null ? null : tipNodeId(graph, parent);
  })();
  const target = left ?? fallback;

  const back = useCallback(async (): Promise<boolean> => {
    if (target === null) return false;
    const ok = await checkout(target);
    if (ok && familyRoot !== null) {
      write(familyRoot, null);
      setLeft(null);
    }
    return ok;
  }, [target, checkout, familyRoot]);

  return { restore, back, target };
}
