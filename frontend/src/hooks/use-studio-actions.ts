"use client";
import { useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useCallback } from "react";
import { useApi } from "./use-api";
import { DISCARD_REFUSED } from "./use-confirm-discard";
import { invalidate, useRefreshAll } from "./use-studio-data";
import { useTransfer } from "@/features/conversations/hooks/use-transfer";
import { newThreadId, pendingUrl } from "@/features/conversations/hooks/use-new-conversation";
import { useTurn } from "@/features/chat/hooks/use-turn";
import { ApiError, messageOf, unwrap, type Conversation } from "@/lib/api/client";
import { every, keys } from "@/lib/query-keys";
import type { Dataset } from "@/features/coding/lib/exports";
import type { ExportFormat } from "@/lib/research";

export interface StudioActionsInput {
  /** the thread the URL names */
  anchor: string | null;
  /** the thread on screen: checkouts, sends and stops go through it */
  displayed: string | null;
  /** the root of the family on screen: deleting it leaves the page */
  familyRoot: string | null;
  /** shows a message in the error banner, or clears it (null) */
  setError: (message: string | null) => void;
  /** asks whether to discard unsaved edits (useConfirmDiscard) */
  ask: (message: string) => Promise<boolean>;
  /** a checkout went through: the page shows the working thread again */
  onCheckedOut: () => void;
}

/** Drops (and stops fetching) every cached answer about one thread. */
function forgetThread(qc: QueryClient, thread: string): void {
  for (const key of [keys.graph(thread), keys.messages(thread), keys.workspace(thread), keys.suggestions(thread)]) {
    void qc.cancelQueries({ queryKey: key, exact: true });
    qc.removeQueries({ queryKey: key, exact: true });
  }
}

export function codeOf(error: unknown): string | null {
  return error instanceof ApiError ? error.code : null;
}

/**
 * Every write the studio page makes, each on a TanStack mutation: checkout (with the
 * discard question), send and stop a turn, create, rename (title or path name), delete,
 * export and import. What comes back is the same function on every render as long as
 * the page's thread is the same, so a card handed one is not re-rendered by a streamed
 * token. Failures go to the error banner; each action resolves to whether it went through.
 */
export function useStudioActions({ anchor, displayed, familyRoot, setError, ask, onCheckedOut }: StudioActionsInput) {
  const { client } = useApi();
  const qc = useQueryClient();
  const router = useRouter();
  const refreshAll = useRefreshAll();
  const { running, send } = useTurn();
  const { exportFamily, importFile, progress: importing } = useTransfer();

  const { mutateAsync: postCheckout } = useMutation({
    mutationFn: async (v: { via: string; turnId: string; force: boolean }) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/checkout", {
          params: { path: { thread_id: v.via } },
          body: { turn_id: v.turnId, force: v.force },
        }),
      ),
  });
  const { mutateAsync: postCancel } = useMutation({
    mutationFn: async (thread: string) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/turns/cancel", { params: { path: { thread_id: thread } } }),
      ),
    onSettled: () => refreshAll(),
  });
  const { mutateAsync: patchConversation } = useMutation({
    mutationFn: async (v: { thread: string; body: { name: string | null } | { title: string } }) =>
      unwrap(
        await client.PATCH("/api/conversations/{thread_id}", {
          params: { path: { thread_id: v.thread } },
          body: v.body,
        }),
      ),
    onSuccess: () => refreshAll(),
  });
  const { mutateAsync: deleteThread } = useMutation({
    mutationFn: async (thread: string) =>
      unwrap(await client.DELETE("/api/conversations/{thread_id}", { params: { path: { thread_id: thread } } })),
  });

  /** Checks out `turnId` (restore a step, open a path); resolves to whether it went through. */
  const checkout = useCallback(
    async (turnId: string): Promise<boolean> => {
      const via = displayed ?? anchor;
      if (via === null) return false;
      const attempt = async (force: boolean): Promise<boolean> => {
        try {
          const history = await postCheckout({ via, turnId, force });
          // The thread left is no longer the one shown: a restored step's draft is gone
          // from the server (a checkout elsewhere discards it). Its cached answers are
          // dropped, not refetched: asking for them would only answer 404.
          if (history.working_thread_id !== via) forgetThread(qc, via);
          if (anchor) qc.setQueryData(keys.history(anchor), history);
        } catch (e) {
          if (codeOf(e) === DISCARD_REFUSED) return (await ask(messageOf(e))) && attempt(true);
          setError(messageOf(e));
          return false;
        }
        onCheckedOut();
        setError(null);
        await refreshAll();
        return true;
      };
      return attempt(false);
    },
    [displayed, anchor, postCheckout, qc, ask, setError, onCheckedOut, refreshAll],
  );

  /** Sends `text` on the displayed thread (`create`: a conversation not created yet,
   * which this send creates); resolves to whether the server took it, so the composer
   * can give back a message that was not sent. */
  const sendMessage = useCallback(
    async (text: string, create = false): Promise<boolean> => {
      if (displayed === null) return false;
      setError(null);
      const attempt = async (force: boolean): Promise<boolean> => {
        const { accepted, error } = await send(displayed, text, force, create);
        if (error === null) return accepted;
        if (!accepted && error.code === DISCARD_REFUSED) return (await ask(error.message)) && attempt(true);
        setError(error.message);
        return accepted;
      };
      return attempt(false);
    },
    [displayed, send, ask, setError],
  );

  const stop = useCallback(async () => {
    if (displayed === null) return;
    await postCancel(displayed).catch((e: unknown) => setError(messageOf(e)));
  }, [displayed, postCancel, setError]);

  // Nothing is created yet: the first send or edit creates it (useNewConversation).
  const newConversation = useCallback(async () => {
    setError(null);
    router.push(pendingUrl(newThreadId()));
  }, [router, setError]);

  /** Saves a path's name (null clears it); rejects with the server's error, which the
   * banner shows, so the name's editor keeps the text. */
  const renameThread = useCallback(
    async (threadId: string, name: string | null) => {
      try {
        await patchConversation({ thread: threadId, body: { name } });
        setError(null);
      } catch (e) {
        setError(messageOf(e));
        throw e;
      }
    },
    [patchConversation, setError],
  );

  /** Saves a conversation's title; resolves to whether it was saved. */
  const renameConversation = useCallback(
    async (c: Conversation, title: string): Promise<boolean> => {
      try {
        await patchConversation({ thread: c.thread_id, body: { title } });
        return true;
      } catch (e) {
        setError(messageOf(e));
        return false;
      }
    },
    [patchConversation, setError],
  );

  const deleteConversation = useCallback(
    async (c: Conversation) => {
      try {
        await deleteThread(c.thread_id);
        if (c.parent_thread_id === null && c.root_thread_id === familyRoot) router.push("/");
        else if (c.thread_id === anchor) router.push(`/?thread=${c.root_thread_id}`);
        await refreshAll();
      } catch (e) {
        setError(messageOf(e));
      }
    },
    [deleteThread, familyRoot, anchor, router, refreshAll, setError],
  );

  const exportConversation = useCallback(
    async (c: Conversation, format: ExportFormat | Dataset = "json") => {
      try {
        await exportFamily(c.thread_id, c.title, format);
      } catch (e) {
        setError(messageOf(e));
      }
    },
    [exportFamily, setError],
  );

  const importConversation = useCallback(
    async (file: File) => {
      setError(null);
      try {
        const c = await importFile(file);
        await invalidate(qc, [every.conversations]);
        router.push(`/?thread=${c.thread_id}`);
      } catch (e) {
        setError(`Could not import “${file.name}”: ${messageOf(e)}`);
      }
    },
    [importFile, qc, router, setError],
  );

  return {
    running,
    importing,
    checkout,
    sendMessage,
    stop,
    newConversation,
    renameThread,
    renameConversation,
    deleteConversation,
    exportConversation,
    importConversation,
  };
}
