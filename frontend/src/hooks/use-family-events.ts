"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useApi } from "./use-api";
import { invalidate } from "./use-studio-data";
import { streamOf } from "@/lib/api/client";
import {
  backoff,
  hasEffects,
  initialStreamState,
  mergeEffects,
  noEffects,
  reduceAction,
  type ActionEnvelope,
  type Effects,
  type LiveTurn,
  type StreamState,
} from "@/lib/events";
import { withStartedNode } from "@/features/graph/lib/big-trees";
import type { Graph } from "@/features/graph/lib/graph";
import { every, keys, staleQueries } from "@/lib/query-keys";
import { parseData, readSse } from "@/lib/sse";
import { jobOfAction, laterJob, type Job } from "@/features/whatif/lib/whatif";

/**
 * Follows the family's event stream (`GET …/events?after=`), resuming from the last
 * serverSeq after a drop, and refetches what each action makes stale: a second tab,
 * a REST user or an AHP client changing the family shows up here without a reload.
 * Returns the turn another client is running, as streamed so far.
 *
 * It starts at `startAfter`, the serverSeq the family's history was read at: what the
 * page already shows is not replayed (and not fetched again), nothing after it is
 * missed. It waits for that position, once per family.
 */
export function useFamilyEvents(
  anchor: string | null,
  startAfter: number | null,
): { live: LiveTurn | null; connected: boolean } {
  const { client } = useApi();
  const qc = useQueryClient();
  const [live, setLive] = useState<LiveTurn | null>(null);
  const [connected, setConnected] = useState(false);
  const [from, setFrom] = useState<{ anchor: string; after: number } | null>(null);
  useEffect(() => {
    if (anchor !== null && startAfter !== null && from?.anchor !== anchor) setFrom({ anchor, after: startAfter });
  }, [anchor, startAfter, from]);
  const start = from !== null && from.anchor === anchor ? from.after : null;

  useEffect(() => {
    if (anchor === null || start === null) return;
    const abort = new AbortController();
    let state: StreamState = { ...initialStreamState, lastSeq: start };
    let pending: Effects = noEffects();
    let timer: ReturnType<typeof setTimeout> | null = null;

    const flush = () => {
      timer = null;
      const e = pending;
      pending = noEffects();
      void invalidate(qc, staleQueries(e));
    };
    const apply = (next: { state: StreamState; effects: Effects }, env: ActionEnvelope) => {
      const a = env.action;
      // (a replayed action it had applied already makes no effects: skipped)
      if (a.type === "chat/turnStarted" && next.effects.graph && typeof a.turnId === "string") {
        // Drawn now; the graph fetched again below replaces it. (The mark times a node
        // added while the studio is open: bench/studio reads it.)
        performance.mark(`haico:turn-started:${a.turnId}`);
        const parent = typeof a.parentTurnId === "string" ? a.parentTurnId : null;
        const text = (a.message as { text?: unknown } | undefined)?.text;
        qc.setQueriesData<Graph>({ queryKey: every.graph }, (g) =>
          g === undefined ? g : withStartedNode(g, a.turnId as string, parent, typeof text === "string" ? text : ""),
        );
      }
      const job = jobOfAction(a);
      // the replay's progress bar (never back to an older report)
      if (job !== null) qc.setQueryData<Job>(keys.job(job.id), (known) => laterJob(known, job));
      state = next.state;
      setLive(state.live);
      if (hasEffects(next.effects)) {
        pending = mergeEffects(pending, next.effects);
        // Coalesce a burst of actions into one round of refetches.
        if (timer === null) timer = setTimeout(flush, 60);
      }
    };

    const run = async () => {
      let attempt = 0;
      while (!abort.signal.aborted) {
        try {
          const res = await client.GET("/api/conversations/{thread_id}/events", {
            params: { path: { thread_id: anchor }, query: { after: state.lastSeq } },
            headers: { Accept: "text/event-stream" },
            parseAs: "stream",
            signal: abort.signal,
          });
          // (a 401 asked for a token already: the client's one handler)
          if ([401, 403, 404].includes(res.response.status)) return;
          const body = streamOf(res);
          setConnected(true);
          attempt = 0;
          for await (const event of readSse(body)) {
            if (event.event === "action") {
              const env = parseData<ActionEnvelope>(event);
              if (env !== null && typeof env.serverSeq === "number" && env.action) apply(reduceAction(state, env), env);
            }
          }
        } catch {
          if (abort.signal.aborted) return;
        }
        setConnected(false);
        await new Promise((r) => setTimeout(r, backoff(attempt++)));
      }
    };
    void run();
    return () => {
      abort.abort();
      if (timer !== null) clearTimeout(timer);
      setConnected(false);
      setLive(null);
    };
  }, [anchor, start, qc, client]);

  return { live, connected };
}
