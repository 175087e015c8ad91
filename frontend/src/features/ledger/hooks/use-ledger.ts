"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useMemo } from "react";
import { useApi } from "@/hooks/use-api";
import { toApiError, unwrap } from "@/lib/api/client";
import { saveFile } from "@/lib/save-file";
import type { Graph, GuideStep } from "@/features/graph/lib/graph";
import { branchLabels, handEditsAlongPath, handEditsByNode, pathFileName } from "@/features/ledger/lib/ledger";
import { every, keys } from "@/lib/query-keys";

/** A node's details (provenance, edits, notes): `nodeId` is "th_…:k". */
export function useNodeDetails(nodeId: string | null) {
  const { client } = useApi();
  const [thread, k] = splitNode(nodeId);
  return useQuery({
    queryKey: keys.node(thread, k),
    enabled: nodeId !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/nodes/{k}", {
          params: { path: { thread_id: thread, k } },
        }),
      ),
  });
}

/** Tokens and cost per branch of the family of `thread`. */
export function useFamilyUsage(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.usage(thread ?? ""),
    enabled: thread !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/usage", { params: { path: { thread_id: thread ?? "" } } }),
      ),
  });
}

/** The family's hand edits (origin "user"), for the chat's "You changed …" entries. */
export function useHandEdits(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.edits(thread ?? ""),
    enabled: thread !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/edits", {
          params: { path: { thread_id: thread ?? "" }, query: { origin: "user" } },
        }),
      ),
  });
}

/** The family's hand edits by node, along the displayed path (`guide`): the chat's
 * "You changed …" entries. */
export function useHandEditsAlongPath(familyRoot: string | null, guide: ReadonlyMap<number, GuideStep>) {
  const handEdits = useHandEdits(familyRoot);
  return useMemo(
    () =>
      handEditsAlongPath(
        [...guide.values()].sort((a, b) => a.turn - b.turn),
        handEditsByNode(handEdits.data ?? []),
      ),
    [guide, handEdits.data],
  );
}

/** Thread id → the label of its lane ("main", a branch name, or its first step). */
export function useBranchLabels(graph: Graph | undefined, labels: ReadonlyMap<string, string>) {
  return useMemo(() => branchLabels(graph?.threads ?? [], labels, graph?.nodes ?? []), [graph, labels]);
}

export function splitNode(nodeId: string | null): [string, number] {
  if (nodeId === null) return ["", 0];
  const at = nodeId.lastIndexOf(":");
  return [nodeId.slice(0, at), Number(nodeId.slice(at + 1))];
}

/** Add and delete notes; both refresh the ledger and the graph (codes on cards). */
export function useNoteActions() {
  const { client } = useApi();
  const qc = useQueryClient();
  const refresh = useCallback(async () => {
    await Promise.all([
      qc.invalidateQueries({ queryKey: every.ledger }),
      qc.invalidateQueries({ queryKey: every.graph }),
    ]);
  }, [qc]);
  const add = useMutation({
    mutationFn: async (v: { nodeId: string; text: string; codes: string[] }) => {
      const [thread, k] = splitNode(v.nodeId);
      return unwrap(
        await client.POST("/api/conversations/{thread_id}/nodes/{k}/notes", {
          params: { path: { thread_id: thread, k } },
          body: { text: v.text, codes: v.codes },
        }),
      );
    },
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async (noteId: number) => {
      const res = await client.DELETE("/api/notes/{note_id}", { params: { path: { note_id: noteId } } });
      if (!res.response.ok) throw toApiError(res.response.status, res.error);
    },
    onSuccess: refresh,
  });
  return { addNote: add.mutateAsync, deleteNote: remove.mutateAsync, saving: add.isPending };
}

/** Download the path to a node as a document (`GET …/path`). */
export function usePathDownload() {
  const { client } = useApi();
  return useCallback(
    async (nodeId: string, format: "md" | "html", title: string, label: string): Promise<void> => {
      const [thread] = splitNode(nodeId);
      const blob = unwrap(
        await client.GET("/api/conversations/{thread_id}/path", {
          params: { path: { thread_id: thread }, query: { node: nodeId, format, notes: true } },
          parseAs: "blob",
        }),
      );
      saveFile(blob, pathFileName(title, label, format));
    },
    [client],
  );
}
