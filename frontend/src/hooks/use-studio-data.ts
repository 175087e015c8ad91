"use client";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "./use-api";
import { unwrap } from "@/lib/api/client";

/** Query keys: one place, so the event stream can invalidate exactly what it names. */
export const keys = {
  conversations: ["conversations"] as const,
  history: (anchor: string) => ["history", anchor] as const,
  graph: (thread: string) => ["graph", thread] as const,
  messages: (thread: string) => ["messages", thread] as const,
  workspace: (thread: string) => ["workspace", thread] as const,
  artifact: (thread: string, id: number) => ["artifact", thread, id] as const,
  compare: (a: string, b: string) => ["compare", a, b] as const,
};

export function useConversations() {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.conversations,
    queryFn: async () => unwrap(await client.GET("/api/conversations")),
  });
}

export function useHistory(anchor: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.history(anchor ?? ""),
    enabled: anchor !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/history", { params: { path: { thread_id: anchor ?? "" } } }),
      ),
  });
}

export function useGraph(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.graph(thread ?? ""),
    enabled: thread !== null,
    placeholderData: (previous) => previous,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/graph", { params: { path: { thread_id: thread ?? "" } } }),
      ),
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

/** Refetch everything the studio shows of a family (after a turn or a checkout). */
export function useRefreshAll() {
  const qc = useQueryClient();
  return () =>
    Promise.all(
      ["history", "graph", "messages", "workspace", "conversations", "compare"].map((k) =>
        qc.invalidateQueries({ queryKey: [k] }),
      ),
    );
}
