"use client";
import { memo } from "react";
import type { Siblings } from "@/features/graph/lib/big-trees";
import type { GuideStep } from "@/features/graph/lib/graph";
import type { MergeStep } from "@/lib/studio-view";
import { describeTool, type ChatTurn, type ToolActivity } from "@/features/chat/lib/transcript";
import { CodedText } from "@/features/coding/components/coded-text";
import { JudgeButton } from "@/features/coding/components/judge-button";
import { CodingButton, MessageCodings } from "@/features/coding/components/message-codings";

// One turn of the chat, memoised: a streamed token renders the chat, not every turn of
// a long path, and a node added renders only the turns whose text or step changed.

const ENDED: Record<string, string> = { cancelled: "Stopped", error: "Failed" };

export function MergeNote({ step }: { step: MergeStep }) {
  return (
    <div className="merge-note" data-testid="merge-note" data-node-id={step.nodeId}>
      <span className="step">Step {step.label}</span> ⤵ {step.text}
    </div>
  );
}

/** "‹ 2/3 ›" on a step whose parent forks: the other paths from the same point. */
function SiblingSwitcher({
  nodeId,
  siblings,
  onSwitch,
}: {
  nodeId: string;
  siblings: Siblings | undefined;
  onSwitch: (nodeId: string) => void;
}) {
  if (siblings === undefined) return null;
  const { ids, index } = siblings;
  const go = (to: number) => {
    const target = ids[to];
    if (target !== undefined) onSwitch(target);
  };
  return (
    <span className="sibling-switcher" data-testid="sibling-switcher" data-node-id={nodeId}>
      <button
        type="button"
        className="icon"
        data-testid="sibling-prev"
        aria-label="The previous path from here"
        disabled={index === 0}
        onClick={() => go(index - 1)}
      >
        ‹
      </button>
      <span className="muted">
        {index + 1}/{ids.length}
      </span>
      <button
        type="button"
        className="icon"
        data-testid="sibling-next"
        aria-label="The next path from here"
        disabled={index === ids.length - 1}
        onClick={() => go(index + 1)}
      >
        ›
      </button>
      <JudgeButton nodeId={nodeId} siblings={ids} />
    </span>
  );
}

export function Tools({ tools }: { tools: ToolActivity[] }) {
  if (tools.length === 0) return null;
  return (
    <ul className="tools" data-testid="tool-activity">
      {tools.map((t, i) => (
        <li key={i} className={t.failed ? "failed" : ""}>
          <span className="tool-icon">⚙</span> {describeTool(t)}
          {t.failed && <span className="badge err">failed</span>}
        </li>
      ))}
    </ul>
  );
}

export interface TurnRowProps {
  t: ChatTurn;
  step: GuideStep | undefined;
  /** the merge steps between this turn and the next */
  merged: readonly MergeStep[];
  /** the path's last turn: no checkpoint divider after it */
  last: boolean;
  flashing: boolean;
  edit: boolean;
  siblings: Siblings | undefined;
  handEdits: readonly string[] | undefined;
  onSwitch: (nodeId: string) => void;
  onOpenThread: (threadId: string) => void;
  onRestore: (nodeId: string) => void;
}

function sameList<T>(a: readonly T[] | undefined, b: readonly T[] | undefined, same: (x: T, y: T) => boolean): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  return a.every((x, i) => same(x, b[i] as T));
}

const sameTool = (a: ToolActivity, b: ToolActivity) =>
  a === b || (a.name === b.name && a.failed === b.failed && JSON.stringify(a.args) === JSON.stringify(b.args));

const sameTurn = (a: ChatTurn, b: ChatTurn) =>
  a === b ||
  (a.turn === b.turn &&
    a.question === b.question &&
    a.reply === b.reply &&
    a.state === b.state &&
    sameList(a.tools, b.tools, sameTool));

const sameStep = (a: GuideStep | undefined, b: GuideStep | undefined) =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.nodeId === b.nodeId &&
    a.label === b.label &&
    sameList(
      a.offshoots,
      b.offshoots,
      (x, y) => x.threadId === y.threadId && x.label === y.label && x.reason === y.reason,
    ));

const sameMerge = (a: MergeStep, b: MergeStep) =>
  a === b || (a.nodeId === b.nodeId && a.label === b.label && a.text === b.text && a.turn === b.turn);

const sameSiblings = (a: Siblings | undefined, b: Siblings | undefined) =>
  a === b || (a !== undefined && b !== undefined && a.index === b.index && sameList(a.ids, b.ids, (x, y) => x === y));

/** The same row: the page rebuilds the turns, steps and maps whenever the graph or the
 * messages change, with equal values for the turns that did not. */
function sameRow(a: TurnRowProps, b: TurnRowProps): boolean {
  return (
    a.last === b.last &&
    a.flashing === b.flashing &&
    a.edit === b.edit &&
    a.onSwitch === b.onSwitch &&
    a.onOpenThread === b.onOpenThread &&
    a.onRestore === b.onRestore &&
    sameTurn(a.t, b.t) &&
    sameStep(a.step, b.step) &&
    sameList(a.merged, b.merged, sameMerge) &&
    sameSiblings(a.siblings, b.siblings) &&
    sameList(a.handEdits, b.handEdits, (x, y) => x === y)
  );
}

export const TurnRow = memo(function TurnRow({
  t,
  step,
  merged,
  last,
  flashing,
  edit,
  siblings,
  handEdits,
  onSwitch,
  onOpenThread,
  onRestore,
}: TurnRowProps) {
  const nodeId = step?.nodeId ?? "";
  return (
    <div className="turn">
      <div
        data-testid="chat-message"
        data-role="user"
        data-node-id={nodeId}
        className={`msg user ${flashing ? "flash" : ""}`}
        tabIndex={nodeId ? 0 : undefined}
        role="article"
        aria-label={`Step ${step?.label ?? t.turn}, your message`}
        aria-keyshortcuts={nodeId ? "k" : undefined}
      >
        <div className="meta">
          <span className="step" title="Step on the trajectory">
            Step <span data-testid="step-label">{step?.label ?? t.turn}</span>
          </span>
          <SiblingSwitcher nodeId={nodeId} siblings={siblings} onSwitch={onSwitch} />
          <CodingButton nodeId={nodeId} />
        </div>
        <CodedText nodeId={nodeId} field="user_message" text={t.question} />
        <MessageCodings nodeId={nodeId} field="user_message" text={t.question} wholeStep />
        {step && step.offshoots.length > 0 && (
          <div className="chips">
            <span className="muted">other paths from here:</span>
            {step.offshoots.map((o) => (
              <button
                key={o.threadId}
                type="button"
                className="chip"
                data-testid="offshoot-chip"
                data-thread-id={o.threadId}
                title={o.reason ?? "Open this path"}
                onClick={() => onOpenThread(o.threadId)}
              >
                ↳ {o.label}
              </button>
            ))}
          </div>
        )}
      </div>
      <Tools tools={t.tools} />
      <div
        data-testid="chat-message"
        data-role="assistant"
        data-node-id={nodeId}
        data-state={t.state}
        className={`msg assistant state-${t.state}`}
        tabIndex={nodeId ? 0 : undefined}
        role="article"
        aria-label={`Step ${step?.label ?? t.turn}, the agent's reply`}
        aria-keyshortcuts={nodeId ? "k" : undefined}
      >
        {ENDED[t.state] && <span className={`badge ${t.state === "error" ? "err" : "warn"}`}>{ENDED[t.state]}</span>}
        {t.reply ? (
          <CodedText nodeId={nodeId} field="reply" text={t.reply} />
        ) : (
          <div className="text">{t.state === "complete" ? "(no reply)" : ""}</div>
        )}
        <div className="msg-actions">
          <CodingButton nodeId={nodeId} />
        </div>
        <MessageCodings nodeId={nodeId} field="reply" text={t.reply} />
      </div>
      {nodeId &&
        handEdits?.map((sentence) => (
          <div key={sentence} className="hand-edit" data-testid="hand-edit" data-node-id={nodeId}>
            {sentence}
          </div>
        ))}
      {edit && !last && nodeId && (
        <button
          type="button"
          className="divider"
          data-testid="restore-divider"
          data-node-id={nodeId}
          title={`Restore the workspace as it stood after step ${step?.label ?? t.turn}`}
          onClick={() => onRestore(nodeId)}
        >
          <span>Saved checkpoint · Click to restore</span>
        </button>
      )}
      {merged.map((m) => (
        <MergeNote key={m.nodeId} step={m} />
      ))}
    </div>
  );
}, sameRow);
