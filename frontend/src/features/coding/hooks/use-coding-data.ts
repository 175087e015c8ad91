"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback } from "react";
import { splitNode } from "@/features/ledger/hooks/use-ledger";
import { useApi } from "@/hooks/use-api";
import { toApiError, unwrap, type Schemas } from "@/lib/api/client";
import { every, keys } from "@/lib/query-keys";
import type { CodingField } from "@/features/coding/lib/codings";

/** The codebooks a family's codings draw on (its owner's), for any reader of it; with
 * `thread` null, the caller's own codebooks (the ones they manage). */
export function useCodebooks(thread: string | null, enabled = true) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.codebooks(thread ?? ""),
    enabled,
    queryFn: async () =>
      unwrap(await client.GET("/api/codebooks", { params: { query: thread ? { thread_id: thread } : {} } })),
  });
}

/** The family's codings the caller sees: their own while blind, every coder's once
 * revealed (the owner always sees all); asked again when `revealed` changes. */
export function useCodings(thread: string | null, revealed = false) {
  const { client } = useApi();
  return useQuery({
    queryKey: [...keys.codings(thread ?? ""), revealed ? "revealed" : "blind"],
    enabled: thread !== null,
    // (a reveal changes the key: what was shown stays until the new answer comes)
    placeholderData: (previous, query) => (query?.queryKey[2] === thread ? previous : undefined),
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/codings", { params: { path: { thread_id: thread ?? "" } } }),
      ),
  });
}

/** Agreement among `coders` (all the family's coders when empty). */
export function useAgreement(thread: string | null, coders: readonly string[], enabled: boolean) {
  const { client } = useApi();
  const list = coders.join(",");
  return useQuery({
    queryKey: keys.agreement(thread ?? "", list),
    enabled: thread !== null && enabled,
    retry: false,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/agreement", {
          params: { path: { thread_id: thread ?? "" }, query: list ? { coders: list } : {} },
        }),
      ),
  });
}

export function useJudgments(thread: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.judgments(thread ?? ""),
    enabled: thread !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/judgments", {
          params: { path: { thread_id: thread ?? "" } },
        }),
      ),
  });
}

export interface NewCoding {
  nodeId: string;
  codeId: number;
  span: { field: CodingField; start: number; end: number } | null;
  memo: string;
}

/** Every write of coding: a coding made or deleted, the family's codings revealed (on
 * a study's family, the study's), codebooks made and changed, a judgment. Each
 * refreshes what it changes (a reveal the conversations too: it is a flag of the
 * family, or of its study). */
export function useCodingActions() {
  const { client } = useApi();
  const qc = useQueryClient();
  const refresh = useCallback(() => qc.invalidateQueries({ queryKey: every.coding }), [qc]);
  const code = useMutation({
    mutationFn: async (v: NewCoding) => {
      const [thread, k] = splitNode(v.nodeId);
      return unwrap(
        await client.POST("/api/conversations/{thread_id}/nodes/{k}/codings", {
          params: { path: { thread_id: thread, k } },
          body: { code_id: v.codeId, ...(v.span ? { span: v.span } : {}), ...(v.memo ? { memo: v.memo } : {}) },
        }),
      );
    },
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async (codingId: number) => {
      const res = await client.DELETE("/api/codings/{coding_id}", { params: { path: { coding_id: codingId } } });
      if (!res.response.ok) throw toApiError(res.response.status, res.error);
    },
    onSuccess: refresh,
  });
  const reveal = useMutation({
    mutationFn: async (v: { thread: string; reveal: boolean }) =>
      unwrap(
        await client.PATCH("/api/conversations/{thread_id}", {
          params: { path: { thread_id: v.thread } },
          body: { reveal_codings: v.reveal },
        }),
      ),
    onSuccess: () =>
      Promise.all([
        refresh(),
        qc.invalidateQueries({ queryKey: every.conversations }),
        // a study's family shows its study's flag (read alone)
        qc.invalidateQueries({ queryKey: keys.studyFamilies }),
      ]).then(() => undefined),
  });
  const createBook = useMutation({
    mutationFn: async (body: Schemas["CodebookIn"]) => unwrap(await client.POST("/api/codebooks", { body })),
    onSuccess: refresh,
  });
  const patchBook = useMutation({
    mutationFn: async (v: { id: number; patch: Schemas["CodebookPatch"] }) =>
      unwrap(
        await client.PATCH("/api/codebooks/{codebook_id}", {
          params: { path: { codebook_id: v.id } },
          body: v.patch,
        }),
      ),
    onSuccess: refresh,
  });
  const judge = useMutation({
    mutationFn: async (v: { thread: string; body: Schemas["JudgmentIn"] }) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/judgments", {
          params: { path: { thread_id: v.thread } },
          body: v.body,
        }),
      ),
    onSuccess: refresh,
  });
  return {
    code: code.mutateAsync,
    coding: code.isPending,
    remove: remove.mutateAsync,
    reveal: reveal.mutateAsync,
    revealing: reveal.isPending,
    createBook: createBook.mutateAsync,
    patchBook: patchBook.mutateAsync,
    judge: judge.mutateAsync,
    judging: judge.isPending,
  };
}
