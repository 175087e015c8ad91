"use client";
import { Handle, Position, type Node, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import type { FlowCard } from "@/lib/graph";

export interface CardDetail {
  reply: string | null;
  steps: number;
}

export interface CommitData extends Record<string, unknown> {
  card: FlowCard;
  detail: CardDetail | null;
  onRestore: (nodeId: string) => void;
  onFocusStep: (nodeId: string) => void;
}

export interface StubData extends Record<string, unknown> {
  card: FlowCard;
  onOpen: (threadId: string) => void;
}

export type CommitNode = Node<CommitData, "commit">;
export type StubNode = Node<StubData, "stub">;
export type TrajectoryNode = CommitNode | StubNode;

const LANE_COLOURS = ["#c8102e", "#2563eb", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

export function laneColour(lane: number): string {
  return LANE_COLOURS[lane % LANE_COLOURS.length] ?? "#666";
}

const STATE_TEXT: Record<string, string> = { cancelled: "stopped", error: "failed", running: "running…" };

/** One commit card: lane dot, step label, and a mini transcript (question, reasoning
 * steps, reply), each clamped; cards off the displayed path show the question only. */
export const CommitCard = memo(function CommitCard({ data }: NodeProps<CommitNode>) {
  const { card, detail } = data;
  return (
    <div
      data-testid="graph-node"
      data-node-id={card.id}
      data-label={card.label}
      data-active={card.active ? "true" : "false"}
      data-head={card.head ? "true" : "false"}
      data-state={card.state}
      className={`card ${card.active ? "card-active" : "card-dim"} ${card.head ? "card-head" : ""} state-${card.state}`}
      title="Click: show in chat · Double-click: restore this step"
      onClick={() => data.onFocusStep(card.id)}
      onDoubleClick={() => data.onRestore(card.id)}
    >
      <Handle type="target" position={Position.Left} className="handle" />
      {card.head && <div className="here">you are here</div>}
      <div className="card-top">
        <span className="lane-dot" style={{ background: card.active ? "#c8102e" : laneColour(card.lane) }} />
        <span className="card-label">{card.label}</span>
        {STATE_TEXT[card.state] && <span className={`card-state state-${card.state}`}>{STATE_TEXT[card.state]}</span>}
        {card.artifactCount > 0 && <span className="card-art" title="artifacts made at this step">▤ {card.artifactCount}</span>}
        <button
          type="button"
          className="nodrag card-restore"
          data-testid="graph-node-restore"
          title="Restore this step"
          onClick={(e) => {
            e.stopPropagation();
            data.onRestore(card.id);
          }}
        >
          ↺
        </button>
      </div>
      <div className="clamp q">{card.question || "(no message)"}</div>
      {card.active && detail && (
        <>
          {detail.steps > 0 && <div className="clamp steps">⚙ {detail.steps} tool step{detail.steps === 1 ? "" : "s"}</div>}
          {detail.reply && <div className="clamp r">{detail.reply}</div>}
        </>
      )}
      <Handle type="source" position={Position.Right} className="handle" />
    </div>
  );
});

/** A path that owns no turn yet: where its first step will go. */
export const StubCard = memo(function StubCard({ data }: NodeProps<StubNode>) {
  const { card } = data;
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
      <div className="card-top">
        <span className="lane-dot hollow" style={{ borderColor: card.active ? "#c8102e" : laneColour(card.lane) }} />
        <span className="card-label">{card.label}</span>
      </div>
      <div className="clamp q">{card.active ? "next step: send a message" : card.question || "new path"}</div>
    </div>
  );
});
