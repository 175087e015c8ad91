"use client";
import { useMutation } from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { DISCARD_REFUSED } from "@/hooks/use-confirm-discard";
import { useLatest } from "@/hooks/use-stable-callback";
import { useRefreshAll } from "@/hooks/use-studio-data";
import { ApiError, messageOf, unwrap } from "@/lib/api/client";
import {
  resolutionsFor,
  type MergeMode,
  type MergeOut,
  type MergePlan,
  type Resolution,
  type RevertOut,
  type Resolutions,
} from "@/features/merge/lib/merge";

export interface MergeState {
  /** the node whose work is brought in */
  source: string;
  /** how the studio labels it (`3.1`) */
  label: string;
  mode: MergeMode;
  plan: MergePlan | null;
  loading: boolean;
  resolutions: Resolutions;
  /** what the apply brought (the merge node) */
  result: MergeOut | null;
  applying: boolean;
  /** the step that undid the bring-in (a revert step after the merge step) */
  undone: RevertOut | null;
  undoing: boolean;
  /** why the undo was refused (shown in the dialog) */
  undoError: string | null;
}

export interface MergeInput {
  /** the thread on screen: the current path, where the work is brought */
  target: string | null;
  labels: ReadonlyMap<string, string>;
  setError: (message: string | null) => void;
  /** asks whether to discard unsaved edits (useConfirmDiscard) */
  ask: (message: string) => Promise<boolean>;
}

/**
 * "Bring into current path…": the preview of a merge or pick of a step into the thread
 * on screen, the user's choice for each conflict, and the apply (with the discard
 * question, as a checkout has it). `open(nodeId)` is what a card's action, a drop on
 * the head, or a key binding calls.
 */
export function useMerge({ target, labels, setError, ask }: MergeInput) {
  const { client } = useApi();
  const refreshAll = useRefreshAll();
  const [state, setState] = useState<MergeState | null>(null);
  // The newest preview asked for: an older answer that arrives later is dropped.
  const asked = useRef(0);
  // Read when a preview opens, so that `open` stays the same function for the cards.
  const labelsRef = useLatest(labels);

  const { mutateAsync: post } = useMutation({
    mutationFn: async (v: {
      thread: string;
      source: string;
      mode: MergeMode;
      preview: boolean;
      resolutions?: Record<string, Resolution>;
      label?: string;
      force?: boolean;
    }) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/merge", {
          params: { path: { thread_id: v.thread } },
          body: {
            source: v.source,
            mode: v.mode,
            preview: v.preview,
            resolutions: v.resolutions,
            label: v.label,
            force: v.force ?? false,
          },
        }),
      ),
  });

  const preview = useCallback(
    async (source: string, mode: MergeMode) => {
      if (target === null) return;
      const ticket = ++asked.current;
      try {
        const plan = (await post({ thread: target, source, mode, preview: true })) as MergePlan;
        if (ticket !== asked.current) return;
        setState((s) => (s && s.source === source ? { ...s, plan, loading: false } : s));
      } catch (e) {
        if (ticket !== asked.current) return;
        setError(messageOf(e));
        setState(null);
      }
    },
    [target, post, setError],
  );

  const open = useCallback(
    (source: string) => {
      setError(null);
      const label = labelsRef.current.get(source) ?? source.slice(source.lastIndexOf(":") + 1);
      setState({
        source,
        label,
        mode: "merge",
        plan: null,
        loading: true,
        resolutions: {},
        result: null,
        applying: false,
        undone: null,
        undoing: false,
        undoError: null,
      });
      void preview(source, "merge");
    },
    [preview, setError, labelsRef],
  );

  const setMode = useCallback(
    (mode: MergeMode) => {
      setState((s) => (s ? { ...s, mode, plan: null, loading: true, resolutions: {} } : s));
      if (state) void preview(state.source, mode);
    },
    [preview, state],
  );

  const choose = useCallback((changeId: string, resolution: Resolution | null) => {
    setState((s) => {
      if (s === null) return s;
      const resolutions = { ...s.resolutions };
      if (resolution === null) delete resolutions[changeId];
      else resolutions[changeId] = resolution;
      return { ...s, resolutions };
    });
  }, []);

  const apply = useCallback(async () => {
    if (state === null || target === null) return;
    const attempt = async (force: boolean): Promise<void> => {
      setState((s) => (s ? { ...s, applying: true } : s));
      try {
        const result = (await post({
          thread: target,
          source: state.source,
          mode: state.mode,
          preview: false,
          resolutions: resolutionsFor(state.plan, state.resolutions),
          label: state.label,
          force,
        })) as MergeOut;
        setState((s) => (s ? { ...s, result, applying: false } : s));
        setError(null);
        await refreshAll();
      } catch (e) {
        setState((s) => (s ? { ...s, applying: false } : s));
        if (e instanceof ApiError && e.code === DISCARD_REFUSED) {
          if (await ask(e.message)) await attempt(true);
          return;
        }
        setError(messageOf(e));
        if (e instanceof ApiError && (e.code === "merge_conflict" || e.code === "nothing_to_merge")) {
          void preview(state.source, state.mode); // the path moved on: show the new plan
        }
      }
    };
    await attempt(false);
  }, [state, target, post, setError, ask, refreshAll, preview]);

  const { mutateAsync: revert } = useMutation({
    mutationFn: async (node: string) => {
      const at = node.lastIndexOf(":");
      return unwrap(
        await client.POST("/api/conversations/{thread_id}/merge/{k}/revert", {
          params: { path: { thread_id: node.slice(0, at), k: Number(node.slice(at + 1)) } },
          body: { expected_head_turn_id: node },
        }),
      );
    },
  });

  /** Undo the bring-in just applied: a new step with the workspace from before it. */
  const undo = useCallback(async () => {
    const node = state?.result?.node_id;
    if (node === undefined) return;
    setState((s) => (s ? { ...s, undoing: true, undoError: null } : s));
    try {
      const undone = await revert(node);
      setState((s) => (s ? { ...s, undone, undoing: false } : s));
      await refreshAll();
    } catch (e) {
      setState((s) => (s ? { ...s, undoing: false, undoError: messageOf(e) } : s));
    }
  }, [state, revert, refreshAll]);

  const close = useCallback(() => setState(null), []);

  return { merge: state, open, setMode, choose, apply, undo, close };
}
