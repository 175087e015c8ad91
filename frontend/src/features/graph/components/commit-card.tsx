"use client";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo, useRef, useState, type ReactNode } from "react";
import { useAccess } from "@/hooks/use-access";
import { useFeatures } from "@/features/studies/hooks/use-features";
import { useLongPress } from "@/features/graph/hooks/use-long-press";
import type { CardActions, CommitData, CommitNode, StubData, StubNode, TrajectoryNode } from "@/features/graph/types";
import { countRender } from "@/lib/render-probe";
import type { CardDetail } from "@/lib/studio-view";
import { CodingChips } from "@/features/coding/components/coding-chips";
import { CodeChips } from "@/features/ledger/components/code-chips";
import { codeToken } from "@/features/ledger/lib/ledger";
import { ALTERNATIVES } from "@/features/whatif/lib/whatif";
import { ChangePreview } from "./change-preview";
import { BranchName, LaneSummary } from "./lane-name";

export type { CardActions, CardDetail, CommitData, CommitNode, StubData, StubNode, TrajectoryNode };

const LANE_COLOURS = ["#c8102e", "#2563eb", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

export function laneColour(lane: number): string {
  return LANE_COLOURS[lane % LANE_COLOURS.length] ?? "#666";
}

const STATE_TEXT: Record<string, string> = { cancelled: "stopped", error: "failed", running: "running…" };

/** One commit card: lane dot, step label, and a mini transcript (question, reasoning
 * steps, reply), each clamped; cards off the displayed path show the question only. */
export const CommitCard = memo(function CommitCard({ data }: NodeProps<CommitNode>) {
  const { card, detail, actions, picked, rejected } = data;
  countRender(`graph-node:${card.id}`);
  const press = useLongPress(card.id, actions.onMenu);
  // A viewer or commenter of a shared family is offered no restore and no bring-in (nor
  // a study's participant whose condition turns restoring or merging off).
  const access = useAccess();
  const features = useFeatures();
  const edit = access.edit && features.branching;
  const bring = access.edit && features.merge;
  const [preview, setPreview] = useState(false);
  const timer = useRef<number | null>(null);
  const hover = (on: boolean) => {
    if (timer.current !== null) window.clearTimeout(timer.current);
    timer.current = on ? window.setTimeout(() => setPreview(true), 450) : null;
    if (!on) setPreview(false);
  };
  return (
    <div
      data-testid="graph-node"
      data-node-id={card.id}
      data-label={card.label}
      data-active={card.active ? "true" : "false"}
      data-head={card.head ? "true" : "false"}
      data-state={card.state}
      data-kind={card.merge ? "merge" : "turn"}
      data-picked={picked ?? undefined}
      data-found={data.found ? "true" : undefined}
      data-codes={card.codes.length > 0 ? card.codes.map(codeToken).join(" ") : undefined}
      data-selected={data.selected ? "true" : undefined}
      className={[
        "card",
        card.active ? "card-active" : "card-dim",
        card.archived ? "card-archived" : "",
        card.head ? "card-head" : "",
        `state-${card.state}`,
        picked ? "card-picked" : "",
        data.found ? "card-found" : "",
        data.selected ? "card-selected" : "",
      ].join(" ")}
      title={
        edit
          ? "Click: select and show in chat · i: details · Shift-click: compare · Double-click: restore this step · Long press: menu · Drop on the head: bring into the current path"
          : "Click: select and show in chat · i: details · Shift-click: compare"
      }
      {...press.handlers}
      onClick={(e) => {
        if (press.fired()) return;
        if (e.shiftKey) actions.onCompare(card.id);
        else actions.onFocusStep(card.id);
      }}
      onDoubleClick={(e) => edit && !e.shiftKey && actions.onRestore(card.id)}
      onMouseEnter={() => hover(true)}
      onMouseLeave={() => hover(false)}
    >
      <Handle type="target" position={Position.Left} className="handle" />
      {card.head && <div className="here">you are here</div>}
      {preview && <ChangePreview thread={card.threadId} before={data.parent} after={card.id} />}
      {picked && (
        <div className={`picked picked-${picked}`}>{picked === "a" ? "compare: before" : "compare: after"}</div>
      )}
      {card.firstOfThread && <BranchName threadId={card.threadId} name={card.threadName} onRename={actions.onRename} />}
      {card.firstOfThread && (card.threadSummary || data.fold) && (
        <LaneSummary card={card} fold={data.fold} onFold={data.onFold} />
      )}
      <div className="card-top">
        <span className="lane-dot" style={{ background: card.active ? "#c8102e" : laneColour(card.lane) }} />
        <span className="card-label">{card.label}</span>
        {STATE_TEXT[card.state] && <span className={`card-state state-${card.state}`}>{STATE_TEXT[card.state]}</span>}
        {card.artifactCount > 0 && (
          <span className="card-art" title="artifacts made at this step">
            ▤ {card.artifactCount}
          </span>
        )}
      </div>
      {card.merge && (
        <div className="card-merge-mark" data-testid="merge-node">
          ⤵ merge
        </div>
      )}
      <div className="card-q">
        <div className="clamp q">{card.question || "(no message)"}</div>
      </div>
      {card.codes.length > 0 && <CodeChips codes={card.codes} />}
      <CodingChips nodeId={card.id} />
      {card.active && detail && (
        <>
          {detail.steps > 0 && (
            <div className="clamp steps">
              ⚙ {detail.steps} tool step{detail.steps === 1 ? "" : "s"}
            </div>
          )}
          {detail.reply && <div className="clamp r">{detail.reply}</div>}
        </>
      )}
      {rejected.length > 0 && (
        <div
          className="card-rejected"
          data-testid="card-rejected"
          title={`Rejected at this step: ${rejected.map((r) => r.text).join("; ")}`}
        >
          {rejected.slice(0, 2).map((r) => (
            <div
              key={r.uid}
              className="clamp"
              data-testid="rejected-decision"
              data-uid={r.uid}
              data-surface={r.surface}
            >
              <span className="muted">✕ {r.surface === "todo" ? "todo" : "pref"}</span> <s>{r.text}</s>
            </div>
          ))}
          {rejected.length > 2 && <div className="muted">+{rejected.length - 2} more rejected</div>}
        </div>
      )}
      {/* The card's buttons, in a row of their own at its foot, apart from its body: the
          card is at least twice as tall as the row (big-trees.css), so a double-click at
          its centre restores it and never lands on a button. */}
      <div className="card-buttons card-tools">
        <ToolButton
          testId="graph-node-details"
          label={`Details of step ${card.label}: provenance, notes, export`}
          className="card-info"
          onClick={() => actions.onDetails(card.id)}
        >
          i
        </ToolButton>
        <ToolButton
          testId="graph-node-compare"
          label={picked === "a" ? "Cancel the comparison" : "Compare: pick this step, then another"}
          pressed={picked !== null}
          onClick={() => actions.onCompare(card.id)}
        >
          ⇄
        </ToolButton>
        {bring && !card.head && (
          <ToolButton
            testId="graph-node-bring"
            label="Bring into current path…"
            onClick={() => actions.onBringIn(card.id)}
          >
            ⤵
          </ToolButton>
        )}
        {edit && (
          <ToolButton
            testId="graph-node-restore"
            label="Restore this step"
            className="card-restore"
            onClick={() => actions.onRestore(card.id)}
          >
            ↺
          </ToolButton>
        )}
        {actions.onTryAlternatives && !card.merge && (
          <ToolButton
            testId="graph-node-try-alternatives"
            label={`Try ${ALTERNATIVES} alternatives: ${ALTERNATIVES} new answers to this step's message`}
            onClick={() => actions.onTryAlternatives?.(card.id)}
          >
            ⋔
          </ToolButton>
        )}
      </div>
      <Handle type="source" position={Position.Right} className="handle" />
    </div>
  );
});

/** One of a card's buttons: its own click and double-click only (the card's select
 * and restore are not run under it), named for screen readers and on hover. */
function ToolButton({
  testId,
  label,
  pressed,
  className = "",
  onClick,
  children,
}: {
  testId: string;
  label: string;
  pressed?: boolean;
  className?: string;
  onClick: () => void;
  children: ReactNode;
}) {
  return (
    <button
      type="button"
      className={`nodrag card-btn ${className}`}
      data-testid={testId}
      title={label}
      aria-label={label}
      aria-pressed={pressed}
      onClick={(e) => {
        e.stopPropagation();
        onClick();
      }}
      onDoubleClick={(e) => e.stopPropagation()}
    >
      {children}
    </button>
  );
}

/** A path that owns no turn yet: where its first step will go. */
export const StubCard = memo(function StubCard({ data }: NodeProps<StubNode>) {
  const { card } = data;
  countRender(`graph-node:${card.id}`);
  return (
    <div
      data-testid="graph-stub"
      data-thread-id={card.threadId}
      data-label={card.label}
      className={`card card-stub ${card.active ? "card-active" : "card-dim"}`}
      title="A new path: send a message to give it its first step"
      onClick={() => data.onOpen(card.threadId)}
    >
      <Handle type="target" position={Position.Left} className="handle" />
      <BranchName threadId={card.threadId} name={card.threadName} onRename={data.onRename} />
      <div className="card-top">
        <span className="lane-dot hollow" style={{ borderColor: card.active ? "#c8102e" : laneColour(card.lane) }} />
        <span className="card-label">{card.label}</span>
      </div>
      <div className="clamp q">{card.active ? "next step: send a message" : card.question || "new path"}</div>
    </div>
  );
});
