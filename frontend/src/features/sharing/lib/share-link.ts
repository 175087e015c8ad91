/**
 * Review links: a link (`/?thread=th_…&share=sh_…`) opens the studio on a shared
 * family with the link's token instead of the user's own. The link's token is kept
 * for the tab (session storage), so the tab stays on it across a reload while the
 * user's own token (local storage) is left alone for other tabs. Pure but for the
 * storage handed in.
 */
import type { TokenStore } from "@/lib/api/client";

export const SHARE_PARAM = "share";
export const SHARE_KEY = "haico.share";
export const LINK_PREFIX = "sh_";

type Storage = Pick<globalThis.Storage, "getItem" | "setItem" | "removeItem">;

/** The link token a URL's query carries, if any. */
export function shareTokenOf(search: string): string | null {
  const token = new URLSearchParams(search).get(SHARE_PARAM);
  return token !== null && token.startsWith(LINK_PREFIX) ? token : null;
}

/** Query parameters that carry a credential: read once, then dropped from the
 * address bar (a copied or bookmarked address, or one in the history, keeps none). */
export const CREDENTIAL_PARAMS = [SHARE_PARAM, "join"] as const;

/** `search` without its credentials (`?share=`, `?join=`), other parameters kept in
 * order; "" when nothing is left. */
export function withoutCredentials(search: string): string {
  const q = new URLSearchParams(search);
  for (const name of CREDENTIAL_PARAMS) q.delete(name);
  const rest = q.toString();
  return rest ? `?${rest}` : "";
}

/** The tokens a request uses: the tab's link token (taken from the URL the tab opened
 * with, kept in `session`) before the user's own (`own`). Signing in replaces both. */
export function linkAwareTokenStore(own: TokenStore, session: Storage | null, search: string): TokenStore {
  const fromUrl = shareTokenOf(search);
  if (fromUrl !== null) session?.setItem(SHARE_KEY, fromUrl);
  let memory = fromUrl;
  const link = () => (session ? session.getItem(SHARE_KEY) : memory);
  return {
    get: () => link() ?? own.get(),
    set: (token) => {
      memory = null;
      session?.removeItem(SHARE_KEY);
      own.set(token);
    },
  };
}

/** Whether the studio acts through a review link (it then owns nothing: no copies). */
export function isLinkToken(token: string | null): boolean {
  return token !== null && token.startsWith(LINK_PREFIX);
}

/** The address a link token opens: the studio on that family. */
export function shareUrl(origin: string, rootThreadId: string, token: string): string {
  const q = new URLSearchParams({ thread: rootThreadId, [SHARE_PARAM]: token });
  return `${origin}/?${q.toString()}`;
}

export type ShareRole = "viewer" | "commenter" | "editor";

/** What a role lets the studio offer: the composer (turns) for editors only. */
export function canSend(role: ShareRole | null): boolean {
  return role === null || role === "editor";
}

/** What the studio offers on a family: `edit` every write of an editor (turns, the
 * workspace, restore and checkout, bring-in, names, archive, replay), `note` notes. */
export interface Access {
  edit: boolean;
  note: boolean;
}

/** The controls a role is offered (null: the caller owns the family). The server
 * refuses the rest; the studio does not offer them. */
export function accessOf(role: ShareRole | null): Access {
  return { edit: canSend(role), note: role !== "viewer" };
}

/** How the banner names a role. */
export function roleText(role: ShareRole): string {
  return { viewer: "a viewer (read only)", commenter: "a commenter (notes and codings only)", editor: "an editor" }[
    role
  ];
}

/** Expiry choices of the share dialog: hours from now, null = never. */
export const EXPIRIES: readonly { label: string; hours: number | null }[] = [
  { label: "Never", hours: null },
  { label: "1 day", hours: 24 },
  { label: "7 days", hours: 24 * 7 },
  { label: "30 days", hours: 24 * 30 },
];

export function expiryAt(hours: number | null, now: number): string | null {
  return hours === null ? null : new Date(now + hours * 3_600_000).toISOString();
}
