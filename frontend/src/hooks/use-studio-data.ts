"use client";
import { useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useCallback } from "react";
import { useApi } from "./use-api";
import { unwrap, type History, type Schemas } from "@/lib/api/client";
import { earlyGraph, earlyHistory, takeEarlyAnswers } from "@/lib/api/early";
import { FAMILY_STALE, keys, type QueryKey } from "@/lib/query-keys";

export function useConversations() {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.conversations,
    queryFn: async () => unwrap(await client.GET("/api/conversations")),
  });
}

/** The server's event-log position when a history was read (`X-Haico-Server-Seq`). */
export const SERVER_SEQ_HEADER = "X-Haico-Server-Seq";

/** The family's history; `server_seq` is where its event stream should start (absent
 * on a history a checkout answered). */
export function useHistory(anchor: string | null) {
  const { client } = useApi();
  const qc = useQueryClient();
  return useQuery({
    queryKey: keys.history(anchor ?? ""),
    enabled: anchor !== null,
    queryFn: async (): Promise<History & { server_seq?: number }> => {
      // A cold visit's history and graph were asked for before the bundle ran
      // (lib/api/early): both are taken together, the graph put in the cache before the
      // history is answered, so that the render the history brings draws the family
      // (its graph query finds its answer), where the graph would be asked for then.
      const answers = await takeEarlyAnswers(anchor ?? "");
      if (answers !== null) {
        qc.setQueryData(keys.graph(answers.thread), answers.graph);
        return answers.history;
      }
      const early = await earlyHistory(anchor ?? "");
      if (early !== null) {
        const seq = Number(early.headers.get(SERVER_SEQ_HEADER) ?? "0");
        return { ...((await early.json()) as History), server_seq: Number.isFinite(seq) ? seq : 0 };
      }
      const result = await client.GET("/api/conversations/{thread_id}/history", {
        params: { path: { thread_id: anchor ?? "" } },
      });
      const seq = Number(result.response.headers.get(SERVER_SEQ_HEADER) ?? "0");
      return { ...unwrap(result), server_seq: Number.isFinite(seq) ? seq : 0 };
    },
  });
}

export function useGraph(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.graph(thread ?? ""),
    enabled: thread !== null,
    placeholderData: (previous) => previous,
    queryFn: async (): Promise<Schemas["GraphOut"]> => {
      const early = await earlyGraph(thread ?? "");
      if (early !== null) return (await early.json()) as Schemas["GraphOut"];
      return unwrap(
        await client.GET("/api/conversations/{thread_id}/graph", { params: { path: { thread_id: thread ?? "" } } }),
      );
    },
  });
}

export function useMessages(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.messages(thread ?? ""),
    enabled: thread !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/messages", { params: { path: { thread_id: thread ?? "" } } }),
      ),
  });
}

export function useWorkspace(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.workspace(thread ?? ""),
    enabled: thread !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/workspace", { params: { path: { thread_id: thread ?? "" } } }),
      ),
  });
}

export function useArtifact(thread: string, id: number | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.artifact(thread, id ?? -1),
    enabled: id !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/artifacts/{artifact_id}", {
          params: { path: { thread_id: thread, artifact_id: id ?? -1 } },
        }),
      ),
  });
}

/** The comparison of two nodes (`b` against `a`), asked through `thread`. */
export function useComparison(thread: string | null, a: string | null, b: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.compare(a ?? "", b ?? ""),
    enabled: thread !== null && a !== null && b !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/compare", {
          params: { path: { thread_id: thread ?? "" }, query: { a: a ?? "", b: b ?? "" } },
        }),
      ),
  });
}

/** Marks `stale` queries stale (those on screen refetch at once). */
export function invalidate(qc: QueryClient, stale: readonly QueryKey[]): Promise<void[]> {
  return Promise.all(stale.map((queryKey) => qc.invalidateQueries({ queryKey })));
}

/** Refetch everything the studio shows of a family (after a checkout or a write). The
 * function is the same object on every render: callbacks built on it stay stable. */
export function useRefreshAll(): () => Promise<void[]> {
  const qc = useQueryClient();
  return useCallback(() => invalidate(qc, FAMILY_STALE), [qc]);
}
