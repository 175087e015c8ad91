"use client";
import { useEffect, useRef, useState, type ReactNode } from "react";
import type { Siblings } from "@/features/graph/lib/big-trees";
import { MergeNote, Tools, TurnRow } from "./chat-turn";
import type { GuideStep } from "@/features/graph/lib/graph";
import type { LiveTurn } from "@/lib/events";
import { giveBack } from "@/lib/drafts";
import { countRender } from "@/lib/render-probe";
import { useAccess } from "@/hooks/use-access";
import { useFeatures } from "@/features/studies/hooks/use-features";
import { useDraft } from "@/features/chat/hooks/use-draft";
import { useTouch } from "@/hooks/use-touch";
import type { MergeStep } from "@/lib/studio-view";
import type { ChatTurn } from "@/features/chat/lib/transcript";
import type { RunningTurn } from "@/features/chat/hooks/use-turn";

export interface ChatPanelProps {
  /** the conversation shown: its composer draft is kept per conversation */
  thread: string;
  turns: ChatTurn[];
  /** the path's merge steps: shown where they fall between the turns */
  merges: readonly MergeStep[];
  guide: ReadonlyMap<number, GuideStep>;
  running: RunningTurn | null;
  /** a turn another client is running in this family */
  live: LiveTurn | null;
  busy: boolean;
  loading: boolean;
  restoredAt: string | null;
  flash: { nodeId: string; tick: number } | null;
  /** resolves to whether the server took the message */
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
  onRestore: (nodeId: string) => void;
  onOpenThread: (threadId: string) => void;
  /** node id → what the user changed by hand at that step ("You changed the objective") */
  handEdits?: ReadonlyMap<string, readonly string[]>;
  /** node id → its siblings, for the steps whose parent forks */
  siblings: ReadonlyMap<string, Siblings>;
  /** show the path through another sibling (its remembered continuation) */
  onSwitch: (nodeId: string) => void;
  /** shown instead of the composer (a shared family the caller may not send to) */
  composer?: ReactNode;
}

/** The chat of the displayed path: step labels, offshoot chips, checkpoint dividers,
 * streaming replies with tool activity, and the composer. */
export function ChatPanel(props: ChatPanelProps) {
  const { turns, guide, running, live, flash } = props;
  countRender("chat");
  const [draft, updateDraft] = useDraft(props.thread);
  const scroller = useRef<HTMLDivElement>(null);
  const [flashing, setFlashing] = useState<string | null>(null);
  const touch = useTouch();
  // restoring a step is an editor's (a viewer's or commenter's chat offers no divider)
  // (and a study's condition may turn restoring, or every other path, off)
  const access = useAccess();
  const features = useFeatures();
  const edit = access.edit && features.branching;

  const shown = running?.turn != null ? turns.filter((t) => t.turn !== running.turn) : turns;
  const lastLength = [
    shown.length,
    props.merges.length,
    running?.text.length,
    running?.tools.length,
    live?.text.length,
  ].join(":");

  // In the next frame, before it is drawn: reading the height now would lay the page out
  // in the middle of a commit, and again once a graph card added in the same task is in.
  // On a phone the page itself scrolls (the chat does not): a reply to a message sent
  // here is brought into view, from the send to the reply's end.
  const following = useRef(false);
  if (running) following.current = true;
  useEffect(() => {
    const frame = requestAnimationFrame(() => {
      const el = scroller.current;
      if (!el) return;
      el.scrollTop = el.scrollHeight;
      if (!following.current || el.scrollHeight > el.clientHeight + 1) return;
      const replies = el.querySelectorAll('[data-testid="chat-message"][data-role="assistant"]');
      replies[replies.length - 1]?.scrollIntoView({ block: "nearest" });
      if (!running) following.current = false;
    });
    return () => cancelAnimationFrame(frame);
  }, [lastLength, running]);

  useEffect(() => {
    if (!flash) return;
    const el = document.querySelector(`[data-role="user"][data-node-id="${CSS.escape(flash.nodeId)}"]`);
    if (!el) return;
    el.scrollIntoView({ behavior: "smooth", block: "center" });
    setFlashing(flash.nodeId);
    const id = window.setTimeout(() => setFlashing(null), 1600);
    return () => window.clearTimeout(id);
  }, [flash]);

  const submit = () => {
    const text = draft.trim();
    if (!text || props.busy) return;
    const thread = props.thread;
    updateDraft(thread, () => "");
    // A message the server did not take goes back into its conversation's composer,
    // before anything typed since.
    void props.onSend(text).then((accepted) => {
      if (!accepted) updateDraft(thread, (now) => giveBack(text, now));
    });
  };

  return (
    <section className="chat" aria-label="Chat">
      <div className="chat-scroll" ref={scroller}>
        {props.loading && turns.length === 0 && <div className="empty">Loading the conversation…</div>}
        {!props.loading && shown.length === 0 && !running && (
          <div className="empty">
            <p>No messages yet.</p>
            <p className="muted">
              Ask the agent to shape the workspace, e.g. <code>objective: …</code>, <code>prefer: …</code>,{" "}
              <code>todo: …</code>, <code>write: …</code>
            </p>
          </div>
        )}
        {props.merges
          .filter((m) => m.turn < (shown[0]?.turn ?? Infinity))
          .map((m) => (
            <MergeNote key={m.nodeId} step={m} />
          ))}
        {shown.map((t, i) => {
          const step = guide.get(t.turn);
          const nodeId = step?.nodeId ?? "";
          const next = shown[i + 1]?.turn ?? Infinity;
          const merged = props.merges.filter((m) => m.turn > t.turn && m.turn < next);
          const last = i === shown.length - 1 && !running && merged.length === 0;
          return (
            <TurnRow
              key={`${nodeId}-${t.turn}`}
              t={t}
              step={step && !features.graph && step.offshoots.length > 0 ? { ...step, offshoots: [] } : step}
              merged={merged}
              last={last}
              flashing={flashing === nodeId}
              edit={edit}
              siblings={features.graph ? props.siblings.get(nodeId) : undefined}
              handEdits={nodeId ? props.handEdits?.get(nodeId) : undefined}
              onSwitch={props.onSwitch}
              onOpenThread={props.onOpenThread}
              onRestore={props.onRestore}
            />
          );
        })}
        {running && (
          <div className="turn running">
            <div data-testid="chat-message" data-role="user" data-node-id={running.nodeId ?? ""} className="msg user">
              <div className="meta">
                <span className="step">
                  Step{" "}
                  <span data-testid="step-label">
                    {running.turn !== null ? (guide.get(running.turn)?.label ?? running.turn) : "…"}
                  </span>
                </span>
              </div>
              <div className="text">{running.question}</div>
            </div>
            <Tools tools={running.tools} />
            <div
              data-testid="chat-message"
              data-role="assistant"
              data-node-id={running.nodeId ?? ""}
              className="msg assistant streaming"
            >
              {running.error && (
                <span className="badge err">{running.ended === "cancelled" ? "Stopped" : "Failed"}</span>
              )}
              <div className="text">{running.text || <span className="typing">thinking…</span>}</div>
            </div>
          </div>
        )}
        {!running && live && (
          <div className="turn running">
            <div className="msg user">
              <div className="meta muted">another window</div>
              <div className="text">{live.question}</div>
            </div>
            <div className="msg assistant streaming">
              <div className="text">{live.text || <span className="typing">thinking…</span>}</div>
            </div>
          </div>
        )}
      </div>
      {props.composer ?? (
        <div className="composer">
          {props.busy && (
            <div className="turn-status" data-testid="turn-status" role="status">
              <span className="spinner" /> The agent is working
              {running && running.tools.length > 0
                ? ` · ${running.tools.length} tool step${running.tools.length === 1 ? "" : "s"}`
                : ""}
              …
            </div>
          )}
          {props.restoredAt && !props.busy && (
            <div className="restored-note">
              Restored to step {props.restoredAt}. Edit the workspace if you like; sending continues from here on a new
              path.
            </div>
          )}
          <div className="composer-row">
            <textarea
              id="message-input"
              data-testid="message-input"
              aria-label="Message the agent"
              aria-keyshortcuts="c"
              placeholder={
                touch
                  ? "Message the agent (the Send button sends)"
                  : "Message the agent (Enter to send, Shift+Enter for a new line)"
              }
              value={draft}
              rows={2}
              onChange={(e) => updateDraft(props.thread, () => e.target.value)}
              onKeyDown={(e) => {
                // On a touch keyboard Enter is a new line; the Send button sends.
                if (e.key === "Enter" && !e.shiftKey && !touch) {
                  e.preventDefault();
                  submit();
                }
              }}
            />
            {props.busy ? (
              <button type="button" className="danger" data-testid="stop-button" onClick={props.onStop}>
                ■ Stop
              </button>
            ) : null}
            <button
              type="button"
              className="primary"
              data-testid="send-button"
              disabled={props.busy || !draft.trim()}
              onClick={submit}
            >
              Send
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
