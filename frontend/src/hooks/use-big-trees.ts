"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef } from "react";
import { useApi } from "./use-api";
import { useRefreshAll } from "./use-studio-data";
import { unwrap } from "@/lib/api/client";
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
 * The path this user last looked at in the family of `thread` (any of its threads: the
 * server finds the family), remembered on the server: the node at its end and the child
 * chosen at each fork. `end`, the end of the path shown, is recorded every time it
 * changes, once per value (null: nothing to record yet).
 */
export function useChosenPath(thread: string | null, end: string | null) {
  const { client } = useApi();
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: keys.chosenPath(thread ?? ""),
    enabled: thread !== null,
    staleTime: Number.POSITIVE_INFINITY,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/chosen-path", {
          params: { path: { thread_id: thread ?? "" } },
        }),
      ),
  });
  const { mutate } = useMutation({
    // One at a time, in order: the last answer holds every choice made before it.
    scope: { id: "chosen-path" },
    mutationFn: async (v: { thread: string; node: string }) =>
      unwrap(
        await client.PUT("/api/conversations/{thread_id}/chosen-path", {
          params: { path: { thread_id: v.thread } },
          body: { node_id: v.node },
        }),
      ),
    onSuccess: (data, v) => qc.setQueryData(keys.chosenPath(v.thread), data),
  });
  const recorded = useRef<string | null>(null);
  // What was last asked for on this thread: compared with the last answer instead, a
  // choice made while earlier ones were still on their way could look recorded already,
  // and an earlier one would land last.
  const requested = useRef<{ thread: string; node: string | null } | null>(null);
  const known = query.data?.node_id ?? null;
  const ready = query.isSuccess;
  useEffect(() => {
    if (thread === null || end === null || !ready) return;
    const key = `${thread}|${end}`;
    if (recorded.current === key) return;
    recorded.current = key;
    const last = requested.current?.thread === thread ? requested.current.node : known;
    if (last === end) return;
    requested.current = { thread, node: end };
    mutate({ thread, node: end });
  }, [thread, end, ready, known, mutate]);
  return query.data;
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
