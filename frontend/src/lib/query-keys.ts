/**
 * Query keys: every key the studio caches under is spelled here and nowhere else, so
 * a turn, a write and the event stream invalidate exactly what they name. Pure.
 */
import type { Effects } from "./events";

/** A key prefix: every query of one kind, whatever its arguments. */
export const every = {
  conversations: ["conversations"],
  history: ["history"],
  graph: ["graph"],
  messages: ["messages"],
  workspace: ["workspace"],
  artifact: ["artifact"],
  compare: ["compare"],
  search: ["search"],
  /** the research ledger: a node's details, the family's edits and usage */
  ledger: ["ledger"],
  suggestions: ["suggestions"],
  chosenPath: ["chosen-path"],
  /** what if: model profiles, replay jobs, aligned comparisons */
  whatif: ["whatif"],
  /** studies: the list, one study, its participants and figures, a participant's own view */
  studies: ["studies"],
  /** coding: codebooks, a family's codings, agreement, judgments */
  coding: ["coding"],
} as const;

export type QueryKind = keyof typeof every;
export type QueryKey = readonly (string | number)[];

export const keys = {
  conversations: every.conversations,
  /** the families others shared with the caller (under `conversations`: refreshed with it) */
  shared: [...every.conversations, "shared"] as const,
  /** a family's shares (its owner's dialog) */
  shares: (root: string) => [...every.conversations, "shares", root] as const,
  history: (anchor: string) => [...every.history, anchor] as const,
  graph: (thread: string) => [...every.graph, thread] as const,
  messages: (thread: string) => [...every.messages, thread] as const,
  workspace: (thread: string) => [...every.workspace, thread] as const,
  artifact: (thread: string, id: number) => [...every.artifact, thread, id] as const,
  compare: (a: string, b: string) => [...every.compare, a, b] as const,
  search: (query: string) => [...every.search, query] as const,
  node: (thread: string, turn: number) => [...every.ledger, "node", thread, turn] as const,
  edits: (thread: string) => [...every.ledger, "edits", thread] as const,
  usage: (thread: string) => [...every.ledger, "usage", thread] as const,
  suggestions: (thread: string) => [...every.suggestions, thread] as const,
  chosenPath: (root: string) => [...every.chosenPath, root] as const,
  profiles: [...every.whatif, "profiles"] as const,
  branchProfile: (thread: string) => [...every.whatif, "branch", thread] as const,
  job: (id: string) => [...every.whatif, "job", id] as const,
  comparePaths: (a: string, b: string) => [...every.whatif, "paths", a, b] as const,
  studies: [...every.studies, "list"] as const,
  study: (id: string) => [...every.studies, "study", id] as const,
  participants: (id: string) => [...every.studies, "participants", id] as const,
  metrics: (id: string) => [...every.studies, "metrics", id] as const,
  me: [...every.studies, "me"] as const,
  /** a study's family as its owner or a member reads it (its study, its reveal) */
  studyFamily: (root: string) => [...every.studies, "family", root] as const,
  studyFamilies: [...every.studies, "family"] as const,
  /** the codebooks a family's codings draw on ("" : the caller's own) */
  codebooks: (thread: string) => [...every.coding, "codebooks", thread] as const,
  codings: (thread: string) => [...every.coding, "codings", thread] as const,
  agreement: (thread: string, coders: string) => [...every.coding, "agreement", thread, coders] as const,
  judgments: (thread: string) => [...every.coding, "judgments", thread] as const,
};

/** What a turn can change: the family's history, graph, transcripts and workspaces, and
 * the conversation list (titles, step counts). A comparison of two steps cannot change. */
export const TURN_STALE: readonly QueryKey[] = [
  every.history,
  every.graph,
  every.messages,
  every.workspace,
  every.conversations,
  every.ledger,
];

/** Everything the studio shows of a family: what a checkout, a rename or a delete can
 * change (a comparison with the working copy included). */
export const FAMILY_STALE: readonly QueryKey[] = [...TURN_STALE, every.compare, every.suggestions];

/** The queries a batch of event-stream effects makes stale. */
export function staleQueries(effects: Effects): QueryKey[] {
  const stale: QueryKey[] = [];
  if (effects.history) stale.push(every.history);
  if (effects.graph) stale.push(every.graph);
  if (effects.messages) stale.push(every.messages);
  if (effects.conversations) stale.push(every.conversations);
  if (effects.workspace.has("*")) stale.push(every.workspace);
  else for (const thread of effects.workspace) stale.push(keys.workspace(thread));
  // A workspace change is an edit the ledger records; a graph change may be a turn.
  if (effects.graph || effects.workspace.size > 0 || effects.annotations) stale.push(every.ledger);
  // A note's codes show on the cards (the graph); a coding on its message.
  if (effects.annotations) {
    if (!effects.graph) stale.push(every.graph);
    stale.push(every.coding);
  }
  // A reveal: the codings the caller sees, and the flag (a study's family reads its study's).
  if (effects.reveal) {
    if (!effects.annotations) stale.push(every.coding);
    stale.push(keys.studyFamilies);
  }
  return stale;
}
