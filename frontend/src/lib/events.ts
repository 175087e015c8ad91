/**
 * The family's event stream, reduced: which server data is stale after an action,
 * what another client's running turn has streamed so far, and where to resume.
 * Pure; the hook that reads the stream applies the effects to the query cache.
 */

export interface ActionEnvelope {
  channel: string;
  action: { type: string; [key: string]: unknown };
  serverSeq: number;
}

/** What a change makes stale. `workspace` names the thread, or "*" for the displayed one. */
export interface Effects {
  graph: boolean;
  history: boolean;
  messages: boolean;
  conversations: boolean;
  workspace: Set<string>;
  /** a note or a coding was made or deleted (the family's annotations) */
  annotations?: boolean;
  /** the family's (or its study's) codings were revealed or hidden again */
  reveal?: boolean;
}

export interface LiveTurn {
  turnId: string;
  question: string;
  text: string;
}

export interface StreamState {
  /** the last serverSeq applied: the stream resumes with `after=` this */
  lastSeq: number;
  /** a turn running anywhere in the family, as the stream has shown it */
  live: LiveTurn | null;
}

export const initialStreamState: StreamState = { lastSeq: 0, live: null };

export function noEffects(): Effects {
  return { graph: false, history: false, messages: false, conversations: false, workspace: new Set() };
}

function all(): Effects {
  return { graph: true, history: true, messages: true, conversations: true, workspace: new Set(["*"]) };
}

export function mergeEffects(a: Effects, b: Effects): Effects {
  return {
    graph: a.graph || b.graph,
    history: a.history || b.history,
    messages: a.messages || b.messages,
    conversations: a.conversations || b.conversations,
    workspace: new Set([...a.workspace, ...b.workspace]),
    annotations: Boolean(a.annotations || b.annotations),
    reveal: Boolean(a.reveal || b.reveal),
  };
}

export function hasEffects(e: Effects): boolean {
  return (
    e.graph ||
    e.history ||
    e.messages ||
    e.conversations ||
    e.workspace.size > 0 ||
    Boolean(e.annotations) ||
    Boolean(e.reveal)
  );
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Apply one action; an action at or below `lastSeq` (a replay overlap) changes nothing,
 * except `haico/resync`: the server sends it first when `after` is older than its log
 * window, so everything shown may be stale and any streamed text is dropped. */
export function reduceAction(state: StreamState, env: ActionEnvelope): { state: StreamState; effects: Effects } {
  if (env.action.type === "haico/resync") {
    return { state: { lastSeq: Math.max(state.lastSeq, env.serverSeq), live: null }, effects: all() };
  }
  if (env.serverSeq <= state.lastSeq) return { state, effects: noEffects() };
  const next: StreamState = { ...state, lastSeq: env.serverSeq };
  const effects = noEffects();
  const a = env.action;
  switch (a.type) {
    case "chat/turnStarted": {
      const message = a.message as { text?: unknown } | undefined;
      next.live = { turnId: str(a.turnId), question: str(message?.text), text: "" };
      effects.graph = effects.history = effects.messages = true;
      effects.workspace.add("*");
      break;
    }
    case "chat/delta":
      if (state.live !== null && state.live.turnId === a.turnId) {
        next.live = { ...state.live, text: state.live.text + str(a.content) };
      }
      break;
    case "chat/responsePart":
      break;
    case "chat/turnComplete":
    case "chat/turnCancelled":
    case "chat/error":
      if (state.live !== null && state.live.turnId === a.turnId) next.live = null;
      return { state: next, effects: all() };
    case "chat/historyCheckedOut":
    case "chat/turnsPruned":
    case "chat/turnsLoaded":
      return { state: next, effects: all() };
    case "haico/threadChanged":
      // the codings a coder sees, and the flag the studio shows (a conversation's)
      if (a.change === "revealed") {
        effects.reveal = effects.conversations = true;
        break;
      }
      effects.graph = effects.conversations = true;
      // a new summary or an archive moves no head
      if (a.change !== "summarized" && a.change !== "archived") effects.history = true;
      break;
    // a note or a coding: the ledger, the cards' code chips and the codings
    case "annotations/set":
    case "annotations/removed":
      effects.annotations = true;
      break;
    case "haico/workspaceChanged": {
      const thread = str(a.threadId);
      effects.workspace.add(thread === "" ? "*" : thread);
      break;
    }
    default:
      // An action this studio does not know: refetch what it shows rather than drift.
      return { state: next, effects: all() };
  }
  return { state: next, effects };
}

/** The delay before reconnect attempt `attempt` (0-based): 0.5 s doubling, at most 10 s. */
export function backoff(attempt: number): number {
  return Math.min(10_000, 500 * 2 ** Math.max(0, attempt));
}
