"use client";
import { useCallback, useMemo, useState } from "react";
import { useArchive } from "./use-big-trees";
import { useLatest } from "@/hooks/use-stable-callback";
import {
  breadcrumbs,
  choiceMap,
  descend,
  foldFlow,
  isFolded,
  siblingsOf,
  treeIndex,
  type Siblings,
} from "@/features/graph/lib/big-trees";
import type { ChosenPath } from "@/lib/api/client";
import type { Graph } from "@/features/graph/lib/graph";
import type { useStudioView } from "@/hooks/use-studio-view";

type StudioView = ReturnType<typeof useStudioView>;

interface Options {
  /** The family's graph and the flow laid out from it (null while loading). */
  graph: Graph | undefined;
  flow: StudioView["flow"];
  /** The displayed path, step by step (`useStudioView`'s guide). */
  guide: StudioView["guide"];
  /** The path this user chose, as the server remembers it (useChosenOpening). */
  chosen: ChosenPath | undefined;
  onFocusStep: (nodeId: string) => void;
  openThread: (threadId: string) => Promise<void>;
  setError: (message: string) => void;
}

/**
 * Finding one's way in a big family: folded branches, the chosen path remembered on the
 * server, breadcrumbs, switching between sibling steps, centring the graph on a jump,
 * archive, and the name each branch goes by in the path bar.
 */
export function useTreeNavigation({ graph, flow, guide, chosen, onFocusStep, openThread, setError }: Options) {
  // Folded branches hide their cards: the keyboard selection moves over what is shown.
  const [folds, setFolds] = useState<ReadonlyMap<string, boolean>>(new Map());
  const shownFlow = useMemo(() => (graph && flow ? foldFlow(graph, flow, folds) : null), [graph, flow, folds]);
  const [centre, setCentre] = useState<{ nodeId: string; tick: number } | null>(null);
  const graphRef = useLatest<Graph | undefined>(graph);
  const onFold = useCallback(
    (threadId: string) => {
      setFolds((prev) => {
        const thread = graphRef.current?.threads.find((t) => t.thread_id === threadId);
        if (thread === undefined) return prev;
        return new Map(prev).set(threadId, !isFolded(thread, prev));
      });
    },
    [graphRef],
  );
  const tree = useMemo(() => (graph ? treeIndex(graph) : null), [graph]);
  const siblings = useMemo(() => {
    const out = new Map<string, Siblings>();
    if (tree === null) return out;
    for (const step of guide.values()) {
      const found = siblingsOf(tree, step.nodeId);
      if (found !== null) out.set(step.nodeId, found);
    }
    return out;
  }, [tree, guide]);
  const crumbs = useMemo(() => breadcrumbs(guide), [guide]);
  const choices = useMemo(() => choiceMap(chosen?.choices), [chosen]);
  const onJump = useCallback(
    (nodeId: string) => {
      onFocusStep(nodeId);
      setCentre({ nodeId, tick: Date.now() });
    },
    [onFocusStep],
  );
  const onSwitch = useCallback(
    (nodeId: string) => {
      if (tree === null) return;
      const leaf = descend(tree, nodeId, choices);
      setCentre({ nodeId, tick: Date.now() });
      void openThread(leaf.slice(0, leaf.lastIndexOf(":")));
    },
    [tree, choices, openThread],
  );
  const threadNames = useMemo(() => {
    const names = new Map<string, string>();
    const firsts = new Map<string, string>();
    for (const c of flow?.cards ?? []) if (c.firstOfThread && !firsts.has(c.threadId)) firsts.set(c.threadId, c.label);
    for (const t of graph?.threads ?? []) names.set(t.thread_id, branchTitle(t, firsts.get(t.thread_id)));
    return names;
  }, [graph, flow]);
  // Archiving a branch (from any list) shows a toast with its undo, until the next
  // archive, the undo, its ✕ or a few seconds.
  const archiveThread = useArchive(setError);
  const namesRef = useLatest(threadNames);
  const [archived, setArchived] = useState<{ threadId: string; name: string } | null>(null);
  const archive = useCallback(
    async (thread: string, on: boolean): Promise<boolean> => {
      const ok = await archiveThread(thread, on);
      if (ok) setArchived(on ? { threadId: thread, name: namesRef.current.get(thread) ?? "a branch" } : null);
      return ok;
    },
    [archiveThread, namesRef],
  );
  const undoArchive = useCallback(async () => {
    if (archived !== null) await archive(archived.threadId, false);
  }, [archived, archive]);
  const dismissArchived = useCallback(() => setArchived(null), []);
  return {
    shownFlow,
    onFold,
    centre,
    siblings,
    crumbs,
    onJump,
    onSwitch,
    archive,
    archived,
    undoArchive,
    dismissArchived,
    threadNames,
  };
}

/** What a branch is called where branches are listed side by side (Tidy up, the
 * archive toast): the label of its first step, then its name, else the reason given
 * when it was made, else its summary; the main path by its name or title. */
export function branchTitle(
  t: {
    parent_thread_id?: string | null;
    name: string | null;
    reason?: string | null;
    summary?: string | null;
    title: string;
  },
  first: string | undefined,
): string {
  if (!t.parent_thread_id) return t.name ?? t.title;
  const what = t.name ?? t.reason ?? t.summary ?? null;
  if (first === undefined) return what ?? t.title;
  return what === null ? `the path from step ${first}` : `${first} · ${what}`;
}
