"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useRef } from "react";
import { invalidate } from "@/hooks/use-studio-data";
import type { Conversation } from "@/lib/api/client";
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

/** Runs a write to the conversation on screen; `create` says whether the write must
 * create it (`?create=true`). */
export type FirstWrite = <T>(write: (create: boolean) => Promise<T>) => Promise<T>;

/**
 * A conversation is created by its first send or edit, never empty. "New
 * conversation" opens `/?thread=<a fresh id>&new=1`: the studio shows an empty
 * conversation under that id. The first send creates it with its first turn, in one
 * request (`POST …/turns?create=true`), and the first edit with the edit
 * (`PUT …/objective?create=true`, the document, a preference or todo added): a send or
 * an edit that fails creates nothing, and the studio keeps what was typed. Once the
 * server lists it, the address loses `new=1` (`settle`). `pending` is true while the
 * id is not created.
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
  const qc = useQueryClient();
  const created = conversations?.some((c) => c.thread_id === anchor) ?? false;
  const pending = requested && anchor !== null && !created;
  // The edits of a conversation not created yet, one after another: two at once would
  // both try to create it.
  const writes = useRef<Promise<unknown>>(Promise.resolve());

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

  /** Runs an edit of the conversation on screen: while it is not created, with
   * `create` (each in turn: the first that goes through creates it, the next ones find
   * it), then the list is read again, which ends `pending`. */
  const firstWrite: FirstWrite = useCallback(
    async <T>(write: (create: boolean) => Promise<T>): Promise<T> => {
      if (!pending) return write(false);
      const done = writes.current.catch(() => undefined).then(() => write(true));
      writes.current = done;
      const out = await done;
      await invalidate(qc, [every.conversations]);
      return out;
    },
    [pending, qc],
  );

  return { pending, firstWrite, settle };
}
