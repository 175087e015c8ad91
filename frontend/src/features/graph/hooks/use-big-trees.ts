"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { useLatest } from "@/hooks/use-stable-callback";
import { useRefreshAll } from "@/hooks/use-studio-data";
import { unwrap } from "@/lib/api/client";
import { ChosenRecorder, moveRecorded } from "@/features/graph/lib/chosen-recorder";
import { keys } from "@/lib/query-keys";

/** The family's pruning suggestions, fetched only while `enabled` (the list is open). */
export function useSuggestions(thread: string | null, enabled: boolean) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.suggestions(thread ?? ""),
    enabled: thread !== null && enabled,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/suggestions", {
          params: { path: { thread_id: thread ?? "" } },
        }),
      ),
  });
}

/**
 * The path this user last looked at in the family `family` (its root thread), remembered
 * on the server: the node at its end and the child chosen at each fork. `thread`, any
 * thread of the family (the one the address names), is what the requests go through.
 * One answer per family, whichever thread asked: a family opened through another of its
 * threads reads what was recorded through the first. `end`, the end of the path shown,
 * is recorded as it changes (lib/chosen-recorder says which ends); `moveTo(node, move)`
 * records a move the page makes to `node` before making it (`move`, which resolves to
 * whether it happened; if not, the end on screen is recorded again).
 */
export function useChosenPath(thread: string | null, family: string | null, end: string | null) {
  const { client } = useApi();
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: keys.chosenPath(family ?? ""),
    enabled: thread !== null && family !== null,
    staleTime: Number.POSITIVE_INFINITY,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/chosen-path", {
          params: { path: { thread_id: thread ?? "" } },
        }),
      ),
  });
  const { mutate, mutateAsync } = useMutation({
    // One at a time, in order: the last answer holds every choice made before it.
    scope: { id: "chosen-path" },
    mutationFn: async (v: { thread: string; family: string; node: string }) =>
      unwrap(
        await client.PUT("/api/conversations/{thread_id}/chosen-path", {
          params: { path: { thread_id: v.thread } },
          body: { node_id: v.node },
        }),
      ),
    onSuccess: (data, v) => qc.setQueryData(keys.chosenPath(v.family), data),
  });
  const [recorder] = useState(() => new ChosenRecorder());
  const onScreen = useLatest({ thread, family, end });
  const known = query.data?.node_id ?? null;
  const ready = query.isSuccess;
  useEffect(() => {
    if (thread === null || family === null || end === null || !ready) return;
    const node = recorder.shown(family, end, known);
    if (node !== null) mutate({ thread, family, node });
  }, [thread, family, end, ready, known, mutate, recorder]);
  const moveTo = useCallback(
    async (node: string, move: () => Promise<boolean>): Promise<boolean> => {
      if (thread === null || family === null) return move();
      return moveRecorded(recorder, family, node, {
        record: (n) => mutateAsync({ thread, family, node: n }),
        recordLater: (n) => {
          const now = onScreen.current;
          if (now.thread !== null && now.family !== null) mutate({ thread: now.thread, family: now.family, node: n });
        },
        onScreen: () => onScreen.current,
        move,
      });
    },
    [thread, family, mutate, mutateAsync, recorder, onScreen],
  );
  return { data: query.data, moveTo };
}

/** Archive or unarchive a thread; resolves to whether it went through. */
export function useArchive(onError: (message: string) => void) {
  const { client } = useApi();
  const refreshAll = useRefreshAll();
  const { mutateAsync } = useMutation({
    mutationFn: async (v: { thread: string; archived: boolean }) =>
      unwrap(
        await client.PATCH("/api/conversations/{thread_id}", {
          params: { path: { thread_id: v.thread } },
          body: { archived: v.archived },
        }),
      ),
    onSuccess: () => refreshAll(),
  });
  return useCallback(
    async (thread: string, archived: boolean): Promise<boolean> => {
      try {
        await mutateAsync({ thread, archived });
        return true;
      } catch (e) {
        onError(e instanceof Error ? e.message : "Could not archive.");
        return false;
      }
    },
    [mutateAsync, onError],
  );
}
