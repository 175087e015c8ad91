"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { invalidate } from "@/hooks/use-studio-data";
import { ApiError, streamOf, unreachable } from "@/lib/api/client";
import { every, TURN_STALE } from "@/lib/query-keys";
import { parseData, readSse } from "@/lib/sse";
import type { ToolActivity } from "@/features/chat/lib/transcript";

export interface RunningTurn {
  thread: string;
  nodeId: string | null;
  turn: number | null;
  question: string;
  text: string;
  tools: ToolActivity[];
  /** set once the turn has ended, until the transcript is refetched */
  ended: "complete" | "cancelled" | "error" | null;
  error: string | null;
}

/** What became of a send: `accepted` once the server has taken the message (the turn
 * started, so it is in the transcript whatever happens to the stream); `error` when
 * the send or its stream failed. A refusal before the turn started (the server
 * unreachable, 409 turn in progress, the discard check, 502 seeding) is not accepted:
 * the message exists only in the studio, which must not drop it. */
export interface SendOutcome {
  accepted: boolean;
  error: ApiError | null;
}

/**
 * Posts a turn and reads its SSE answer: streamed tokens, tool calls as they
 * happen, workspace changes (refetched at once), and the end.
 */
export function useTurn() {
  const { client } = useApi();
  const qc = useQueryClient();
  const [running, setRunning] = useState<RunningTurn | null>(null);
  const busy = useRef(false);

  const refetchFamily = useCallback(() => invalidate(qc, TURN_STALE), [qc]);

  const send = useCallback(
    async (thread: string, content: string, force = false, create = false): Promise<SendOutcome> => {
      if (busy.current) return { accepted: false, error: null };
      busy.current = true;
      let turn: RunningTurn = {
        thread,
        nodeId: null,
        turn: null,
        question: content,
        text: "",
        tools: [],
        ended: null,
        error: null,
      };
      const update = (patch: Partial<RunningTurn>) => {
        turn = { ...turn, ...patch };
        setRunning(turn);
      };
      setRunning(turn);
      try {
        // `create`: the conversation does not exist yet; the server creates it with
        // this turn, or not at all (a refused send leaves no empty conversation).
        const body = streamOf(
          await client.POST("/api/conversations/{thread_id}/turns", {
            params: { path: { thread_id: thread }, query: { force: force || undefined, create: create || undefined } },
            body: { content },
            headers: { Accept: "text/event-stream" },
            parseAs: "stream",
          }),
        );
        for await (const event of readSse(body)) {
          const data = parseData<Record<string, unknown>>(event) ?? {};
          switch (event.event) {
            case "turn_started":
              update({ nodeId: String(data.node_id ?? ""), turn: Number(data.turn_index ?? 0) });
              void invalidate(qc, [every.graph, every.history]);
              break;
            case "token":
              update({ text: turn.text + String(data.text ?? "") });
              break;
            case "tool_call":
              update({
                tools: [
                  ...turn.tools,
                  {
                    name: String(data.name ?? "tool"),
                    args: (data.args as Record<string, unknown>) ?? {},
                    failed: false,
                  },
                ],
              });
              break;
            case "workspace_changed":
              void invalidate(qc, [every.workspace]);
              break;
            case "turn_completed":
              update({ ended: "complete", text: String(data.reply ?? turn.text) });
              break;
            case "error":
              update({
                ended: data.code === "turn_cancelled" ? "cancelled" : "error",
                error: String(data.message ?? "the turn failed"),
              });
              break;
          }
        }
        if (turn.ended === null) update({ ended: "error", error: "the connection to the turn was lost" });
        await refetchFamily();
        return { accepted: turn.nodeId !== null, error: null };
      } catch (error) {
        const accepted = turn.nodeId !== null;
        if (accepted) await refetchFamily();
        return { accepted, error: error instanceof ApiError ? error : unreachable() };
      } finally {
        busy.current = false;
        setRunning(null);
      }
    },
    [qc, client, refetchFamily],
  );

  return { running, send };
}
