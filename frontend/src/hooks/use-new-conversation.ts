"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useRef } from "react";
import { useApi } from "./use-api";
import { invalidate } from "./use-studio-data";
import { unwrap, type Conversation } from "@/lib/api/client";
import { every } from "@/lib/query-keys";

/** A fresh thread id, as the server makes them (`th_` and 32 hex digits). */
export function newThreadId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return `th_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The address of a conversation not created yet. */
export function pendingUrl(threadId: string): string {
  return `/?thread=${threadId}&new=1`;
}

/**
 * A conversation is created by its first send or edit, never empty. "New
 * conversation" opens `/?thread=<a fresh id>&new=1`: the studio shows an empty
 * conversation under that id. The first send creates it with its first turn, in one
 * request (`POST …/turns?create=true`: a send that fails creates nothing); the first
 * edit calls `ensure`, which creates it (`POST /api/conversations` with the id) just
 * before the edit. Once the server lists it, the address loses `new=1` (`settle`).
 * `pending` is true while the id is not created.
 */
export function useNewConversation({
  anchor,
  requested,
  conversations,
}: {
  anchor: string | null;
  /** the address says `new=1` */
  requested: boolean;
  conversations: Conversation[] | undefined;
}) {
  const { client } = useApi();
  const qc = useQueryClient();
  const created = conversations?.some((c) => c.thread_id === anchor) ?? false;
  const pending = requested && anchor !== null && !created;
  const creating = useRef<{ id: string; done: Promise<boolean> } | null>(null);

  /** Once the conversation is created and `loaded` (its history read), the address
   * drops `new=1`; until then the page keeps showing it under its id. */
  const settle = useCallback(
    (loaded: boolean) => {
      // The history API, not the router: the address changes without a request, so a
      // server that went away meanwhile cannot turn it into a failed page load.
      if (requested && anchor !== null && created && loaded)
        window.history.replaceState(null, "", `/?thread=${anchor}`);
    },
    [requested, anchor, created],
  );

  /** Creates the pending conversation (once, however many writes ask); resolves to
   * whether it exists now. Not pending: resolves true at once. */
  const ensure = useCallback(async (): Promise<boolean> => {
    if (!pending || anchor === null) return true;
    if (creating.current?.id !== anchor) {
      const done = (async () => {
        try {
          const body = { objective: null, new_id: anchor };
          unwrap(await client.POST("/api/conversations", { body }));
          await invalidate(qc, [every.conversations]);
          return true;
        } catch (e) {
          creating.current = null;
          throw e;
        }
      })();
      creating.current = { id: anchor, done };
    }
    return creating.current.done;
  }, [pending, anchor, client, qc]);

  return { pending, ensure, settle };
}
