"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback } from "react";
import { useApi } from "@/hooks/use-api";
import { unwrap, type Schemas } from "@/lib/api/client";
import { keys } from "@/lib/query-keys";
import { canSend, isLinkToken, type ShareRole } from "@/features/sharing/lib/share-link";

export type Share = Schemas["ShareOut"];

export interface Sharing {
  /** the caller's role on the family shown; null: the caller owns it (or it is loading) */
  role: ShareRole | null;
  /** the family owner's name, when it is someone else's */
  owner: string | null;
  /** the studio acts through a review link (it owns nothing: no copies, no shares) */
  viaLink: boolean;
  /** the composer is offered (owner, editor) */
  canSend: boolean;
  /** the owner may share (token mode: the studio holds a token of its own) */
  canShare: boolean;
  /** the studio runs with auth off (no token): sharing needs token mode, and the Share
   * control says how to turn it on */
  authOff: boolean;
  /** the threads of every family shared with the caller */
  shared: readonly Schemas["SharedConversationOut"][];
  /** the list of shared families has answered (until then a review link is taken as a
   * viewer's, the least it may be, and no role is claimed on screen) */
  known: boolean;
  /** the family is a study participant's, opened from the study's page by one of its
   * researchers (it is read there, not shared) */
  study?: boolean;
}

const NONE: readonly Schemas["SharedConversationOut"][] = [];

/** The caller's own conversations with the shared ones after them (so a shared family
 * shows its title); the own list as it is while it loads or when nothing is shared. */
export function withShared<T>(own: T[] | undefined, shared: readonly T[]): T[] | undefined {
  return own === undefined || shared.length === 0 ? own : [...own, ...shared];
}

/** What the caller may do with the family `root`: its role from the families shared
 * with it (`GET /api/conversations?shared=true`). */
export function useSharing(root: string | null): Sharing {
  const { client, tokens } = useApi();
  const token = tokens.get();
  const viaLink = isLinkToken(token);
  const shared = useQuery({
    queryKey: keys.shared,
    // Auth off: nothing is ever shared (and the list would be the caller's own).
    enabled: token !== null,
    queryFn: async () =>
      unwrap(await client.GET("/api/conversations", { params: { query: { shared: true } } })).filter(
        (c): c is Schemas["SharedConversationOut"] => "role" in c,
      ),
  });
  const mine = shared.data?.find((c) => c.root_thread_id === root);
  const role = root === null ? null : ((mine?.role as ShareRole | undefined) ?? (viaLink ? "viewer" : null));
  return {
    role,
    owner: mine?.owner ?? null,
    viaLink,
    canSend: canSend(role),
    canShare: root !== null && role === null && token !== null && !viaLink,
    authOff: token === null,
    shared: shared.data ?? NONE,
    known: token === null || !shared.isPending,
  };
}

/** The family's shares, and creating and revoking them (the owner's dialog). */
export function useShares(root: string | null, open: boolean) {
  const { client } = useApi();
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: keys.shares(root ?? ""),
    enabled: open && root !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/shares", { params: { path: { thread_id: root ?? "" } } }),
      ),
  });
  const refresh = useCallback(() => qc.invalidateQueries({ queryKey: keys.shares(root ?? "") }), [qc, root]);
  const create = useMutation({
    mutationFn: async (body: Schemas["ShareCreate"]) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/shares", {
          params: { path: { thread_id: root ?? "" } },
          body,
        }),
      ),
    onSettled: refresh,
  });
  const revoke = useMutation({
    mutationFn: async (shareId: string) => {
      const res = await client.DELETE("/api/shares/{share_id}", { params: { path: { share_id: shareId } } });
      if (!res.response.ok) unwrap(res);
    },
    onSettled: refresh,
  });
  return { list, create, revoke };
}

/** "Continue as your own copy": fork the shown path at its latest step into a family
 * the caller owns; resolves to the copy's thread id. */
export function useContinueAsCopy() {
  const { client } = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ thread, turn }: { thread: string; turn: number }) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/fork", {
          params: { path: { thread_id: thread } },
          body: { from_turn: turn },
        }),
      ).thread_id,
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.conversations }),
  });
}
