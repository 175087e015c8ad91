"use client";
import { useCallback } from "react";
import type { LiveTurn } from "@/lib/events";
import type { RunningTurn } from "./use-turn";

export interface ComposerInput {
  /** the thread on screen */
  displayed: string | null;
  /** this studio's turn, as it streams */
  running: RunningTurn | null;
  /** another client's turn, as the family's event stream tells it */
  streamed: LiveTurn | null;
  /** the turn the server says is active (null: none), and whether that is being read again */
  activeTurn: unknown;
  refetching: boolean;
  /** the conversation is not created yet: the first send creates it */
  pending: boolean;
  sendMessage: (text: string, create: boolean) => Promise<boolean>;
  stop: () => Promise<void>;
}

/**
 * What the chat's composer needs: the turn running here, another client's, whether a
 * send must wait, and send and stop as stable functions. Another client's turn counts
 * while the server says a turn is active: a stream that joined mid-turn and missed its
 * end never leaves the composer locked.
 */
export function useComposer({
  displayed,
  running,
  streamed,
  activeTurn,
  refetching,
  pending,
  sendMessage,
  stop,
}: ComposerInput) {
  // A conversation not created yet is created by its first send or edit, in the same
  // request: a send or an edit that fails creates nothing (useNewConversation).
  const onSend = useCallback((text: string): Promise<boolean> => sendMessage(text, pending), [sendMessage, pending]);
  const onStop = useCallback(() => void stop(), [stop]);
  const live = activeTurn !== null || refetching ? streamed : null;
  return {
    onSend,
    onStop,
    live,
    busy: running !== null || activeTurn !== null || live !== null,
    running: running && running.thread === displayed ? running : null,
  };
}
