/**
 * A participant's way in: the join link's token (`/?join=st_…`) read once from the
 * address and kept for the tab until the join is done; the join's answer remembered
 * in local storage under the study's token, so a reload or a second tab never joins
 * twice; and the participant token (`pt_…`) the tab then acts with, before the
 * user's own. Pure but for the storage handed in.
 */
import type { TokenStore } from "@/lib/api/client";
import type { Features, JoinAnswer } from "./types";

export const JOIN_PARAM = "join";
export const JOIN_PREFIX = "st_";
export const PARTICIPANT_PREFIX = "pt_";
/** the tab's join in progress (session storage) */
export const PENDING_JOIN_KEY = "haico.join";
/** the tab's participant token (session storage) */
export const PARTICIPANT_KEY = "haico.participant";
/** the joins this browser made, by study token (local storage) */
export const JOINS_KEY = "haico.joins";

type Storage = Pick<globalThis.Storage, "getItem" | "setItem" | "removeItem">;

/** The study token a URL's query carries, if any. */
export function joinTokenOf(search: string): string | null {
  const token = new URLSearchParams(search).get(JOIN_PARAM);
  return token !== null && token.startsWith(JOIN_PREFIX) ? token : null;
}

/** Keeps the address's join token for the tab (before the address bar drops it). */
export function captureJoin(search: string, session: Storage | null): void {
  const token = joinTokenOf(search);
  if (token !== null) session?.setItem(PENDING_JOIN_KEY, token);
}

export function pendingJoin(session: Storage | null): string | null {
  return session?.getItem(PENDING_JOIN_KEY) ?? null;
}

export interface RememberedJoin {
  participant: string;
  thread_id: string;
  token: string;
}

function joins(local: Storage | null): Record<string, RememberedJoin> {
  try {
    const parsed: unknown = JSON.parse(local?.getItem(JOINS_KEY) ?? "{}");
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, RememberedJoin>)
      : {};
  } catch {
    return {};
  }
}

/** The join this browser made with `studyToken` before, if any. */
export function recallJoin(local: Storage | null, studyToken: string): RememberedJoin | null {
  const found = joins(local)[studyToken];
  return found && typeof found.token === "string" && found.token.startsWith(PARTICIPANT_PREFIX) ? found : null;
}

export function rememberJoin(local: Storage | null, studyToken: string, answer: JoinAnswer): RememberedJoin {
  const kept: RememberedJoin = { participant: answer.participant, thread_id: answer.thread_id, token: answer.token };
  local?.setItem(JOINS_KEY, JSON.stringify({ ...joins(local), [studyToken]: kept }));
  return kept;
}

/** The join is done: the tab acts as the participant from now on. */
export function enterAsParticipant(session: Storage | null, token: string): void {
  session?.setItem(PARTICIPANT_KEY, token);
  session?.removeItem(PENDING_JOIN_KEY);
}

/** The join could not be done: the tab forgets it (the page says why). */
export function dropPendingJoin(session: Storage | null): void {
  session?.removeItem(PENDING_JOIN_KEY);
}

export function isParticipantToken(token: string | null): boolean {
  return token !== null && token.startsWith(PARTICIPANT_PREFIX);
}

/** The tokens a request uses: the tab's participant token before any other. Signing
 * in replaces it. */
export function participantTokenStore(inner: TokenStore, session: Storage | null): TokenStore {
  let memory: string | null = null;
  const own = () => (session ? session.getItem(PARTICIPANT_KEY) : memory);
  return {
    get: () => own() ?? inner.get(),
    set: (token) => {
      memory = null;
      session?.removeItem(PARTICIPANT_KEY);
      inner.set(token);
    },
  };
}

/** What the studio offers a participant: what the condition allows, nothing once finished. */
export function participantFeatures(features: Features | undefined): Features {
  return features ?? { graph: true, branching: true, merge: true, whatif: true };
}
