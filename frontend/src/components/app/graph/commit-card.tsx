"use client";
import { Handle, Position, type Node, type NodeProps } from "@xyflow/react";
import {
  memo,
  useRef,
  useState,
  type MouseEvent as ReactMouseEvent,
  type PointerEvent as ReactPointerEvent,
  type SyntheticEvent,
} from "react";
import { useAccess } from "@/hooks/use-access";
import type { Fold } from "@/lib/big-trees";
import { ChangePreview } from "./change-preview";
import type { FlowCard } from "@/lib/graph";
import { countRender } from "@/lib/render-probe";
import type { CardDetail } from "@/lib/studio-view";
import { MAX_NAME, normalizeName, type Rejected } from "@/lib/research";
import { CodeChips } from "../ledger/code-chips";
import { codeToken } from "@/lib/ledger";
import { ALTERNATIVES } from "@/lib/whatif";

export type { CardDetail };

/** What every card can do besides showing itself. */
export interface CardActions {
  onRestore: (nodeId: string) => void;
  onFocusStep: (nodeId: string) => void;
  onCompare: (nodeId: string) => void;
  /** opens the preview of bringing this step's work into the current path */
  onBringIn: (nodeId: string) => void;
  /** saves a thread's branch name (null clears it); rejects with the server's error */
  onRename: (threadId: string, name: string | null) => Promise<void>;
  /** opens the step's menu (a long press on the card) */
  onMenu?: (nodeId: string) => void;
  /** "Try N alternatives" of the step, in one click (a one-step replay with N repeats) */
  onTryAlternatives?: (nodeId: string) => void;
}

export interface CommitData extends Record<string, unknown> {
  card: FlowCard;
  detail: CardDetail | null;
  /** the decisions rejected at this step (displayed path only) */
  rejected: readonly Rejected[];
  /** picked for a comparison: the before ("a") or after ("b") side */
  picked: "a" | "b" | null;
  /** the step a search hit points at */
  found: boolean;
  /** the step the keyboard selection is on */
  selected?: boolean;
  actions: CardActions;
  /** on a branch's first card: whether the branch is folded, and how much that hides */
  fold: Fold | null;
  onFold: (threadId: string) => void;
  /** the step before this one (`thread:0`, the baseline, for a first step): the hover
   * preview shows what this step changed since */
  parent: string;
}

export interface StubData extends Record<string, unknown> {
  card: FlowCard;
  onOpen: (threadId: string) => void;
  onRename: CardActions["onRename"];
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
  const { card, detail, actions, picked, rejected } = data;
  countRender(`graph-node:${card.id}`);
  const press = useLongPress(card.id, actions.onMenu);
  // A viewer or commenter of a shared family is offered no restore and no bring-in.
  const { edit } = useAccess();
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
          ? "Click: show in chat · Shift-click: compare · Double-click: restore this step · Long press: menu · Drop on the head: bring into the current path"
          : "Click: show in chat · Shift-click: compare"
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
        <span className="card-buttons">
          <button
            type="button"
            className="nodrag card-btn"
            data-testid="graph-node-compare"
            title={picked === "a" ? "Cancel the comparison" : "Compare: pick this step, then another"}
            aria-pressed={picked !== null}
            onClick={(e) => {
              e.stopPropagation();
              actions.onCompare(card.id);
            }}
            onDoubleClick={(e) => e.stopPropagation()}
          >
            ⇄
          </button>
          {edit && !card.head && (
            <button
              type="button"
              className="nodrag card-btn"
              data-testid="graph-node-bring"
              title="Bring into current path…"
              aria-label="Bring into current path…"
              onClick={(e) => {
                e.stopPropagation();
                actions.onBringIn(card.id);
              }}
              onDoubleClick={(e) => e.stopPropagation()}
            >
              ⤵
            </button>
          )}
          {edit && (
            <button
              type="button"
              className="nodrag card-btn card-restore"
              data-testid="graph-node-restore"
              title="Restore this step"
              onClick={(e) => {
                e.stopPropagation();
                actions.onRestore(card.id);
              }}
              onDoubleClick={(e) => e.stopPropagation()}
            >
              ↺
            </button>
          )}
        </span>
      </div>
      {card.merge && (
        <div className="card-merge-mark" data-testid="merge-node">
          ⤵ merge
        </div>
      )}
      {/* ⋔ sits on the message's row: the top row has no room for a fourth button at every zoom */}
      <div className="card-q">
        <div className="clamp q">{card.question || "(no message)"}</div>
        {actions.onTryAlternatives && !card.merge && (
          <span className="card-buttons">
            <button
              type="button"
              className="nodrag card-btn"
              data-testid="graph-node-try-alternatives"
              title={`Try ${ALTERNATIVES} alternatives: ${ALTERNATIVES} new answers to this step's message`}
              aria-label={`Try ${ALTERNATIVES} alternatives of this step`}
              onClick={(e) => {
                e.stopPropagation();
                actions.onTryAlternatives?.(card.id);
              }}
              onDoubleClick={(e) => e.stopPropagation()}
            >
              ⋔
            </button>
          </span>
        )}
      </div>
      {card.codes.length > 0 && <CodeChips codes={card.codes} />}
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
      <Handle type="source" position={Position.Right} className="handle" />
    </div>
  );
});

const LONG_PRESS_MS = 500;

/** A long press (a finger held still for half a second) opens the step's menu; the
 * click that ends it does nothing else. */
function useLongPress(nodeId: string, onMenu: ((nodeId: string) => void) | undefined) {
  const timer = useRef<number | null>(null);
  const start = useRef<{ x: number; y: number } | null>(null);
  const done = useRef(false);
  const cancel = () => {
    if (timer.current !== null) window.clearTimeout(timer.current);
    timer.current = null;
  };
  return {
    fired: () => {
      const was = done.current;
      done.current = false;
      return was;
    },
    handlers: {
      onPointerDown: (e: ReactPointerEvent) => {
        if (!onMenu || e.button !== 0) return;
        done.current = false;
        start.current = { x: e.clientX, y: e.clientY };
        cancel();
        timer.current = window.setTimeout(() => {
          done.current = true;
          onMenu(nodeId);
        }, LONG_PRESS_MS);
      },
      onPointerMove: (e: ReactPointerEvent) => {
        const s = start.current;
        if (s && Math.hypot(e.clientX - s.x, e.clientY - s.y) > 8) cancel();
      },
      onPointerUp: cancel,
      onPointerCancel: cancel,
      onPointerLeave: cancel,
      onContextMenu: (e: ReactMouseEvent) => {
        // a long press on a touch screen also raises the context menu: the step's menu replaces it
        if (onMenu && (done.current || timer.current !== null)) e.preventDefault();
      },
    },
  };
}

/** A branch's summary on its first card, with its fold button (▸ shows what it hides). */
function LaneSummary({ card, fold, onFold }: { card: FlowCard; fold: Fold | null; onFold: (t: string) => void }) {
  return (
    <div className="lane-summary">
      {fold && (
        <button
          type="button"
          className="nodrag card-btn fold-btn"
          data-testid="fold-button"
          data-thread-id={card.threadId}
          aria-expanded={!fold.folded}
          aria-label={fold.folded ? `Expand this branch (${fold.hidden} steps hidden)` : "Collapse this branch"}
          title={
            fold.folded ? `Expand: ${fold.hidden} step${fold.hidden === 1 ? "" : "s"} hidden` : "Collapse this branch"
          }
          onClick={(e) => {
            e.stopPropagation();
            onFold(card.threadId);
          }}
          onDoubleClick={(e) => e.stopPropagation()}
        >
          {fold.folded ? `▸ ${fold.hidden}` : "▾"}
        </button>
      )}
      {card.archived && <span className="badge">archived</span>}
      {card.threadSummary && (
        <span className="clamp" data-testid="branch-summary" data-thread-id={card.threadId} title={card.threadSummary}>
          {card.threadSummary}
        </span>
      )}
    </div>
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

/** A thread's short name on its first card: click to edit in place; Enter saves,
 * Escape cancels, an empty name clears it. */
function BranchName({
  threadId,
  name,
  onRename,
}: {
  threadId: string;
  name: string | null;
  onRename: CardActions["onRename"];
}) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(name ?? "");
  const [saving, setSaving] = useState(false);
  const done = useRef(false);
  const { edit } = useAccess();

  const start = () => {
    done.current = false;
    setText(name ?? "");
    setEditing(true);
  };
  const finish = (save: boolean) => {
    if (done.current) return;
    done.current = true;
    const next = normalizeName(text);
    if (!save || next === name) {
      setEditing(false);
      return;
    }
    setSaving(true);
    onRename(threadId, next)
      .then(() => setEditing(false))
      .catch(() => {
        // the studio shows the server's message; keep the text for another try
        done.current = false;
      })
      .finally(() => setSaving(false));
  };
  const stop = (e: SyntheticEvent) => e.stopPropagation();

  if (!edit) {
    // a viewer or commenter reads the name; naming a path is an editor's
    return name ? (
      <span className="branch-name read-only" data-testid="branch-name" data-thread-id={threadId}>
        ⎇ {name}
      </span>
    ) : null;
  }
  if (editing) {
    return (
      <div className="branch-name-edit nodrag nopan" onClick={stop} onDoubleClick={stop}>
        <input
          data-testid="branch-name-input"
          data-thread-id={threadId}
          autoFocus
          value={text}
          maxLength={MAX_NAME}
          disabled={saving}
          placeholder="name this path (empty clears)"
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            e.stopPropagation();
            if (e.key === "Enter") finish(true);
            else if (e.key === "Escape") finish(false);
          }}
          onBlur={() => finish(true)}
        />
      </div>
    );
  }
  return (
    <button
      type="button"
      className={`nodrag branch-name ${name ? "" : "unnamed"}`}
      data-testid="branch-name"
      data-thread-id={threadId}
      title={name ? `Path “${name}”: click to rename` : "Name this path"}
      onClick={(e) => {
        e.stopPropagation();
        start();
      }}
      onDoubleClick={stop}
    >
      {name ? `⎇ ${name}` : "+ name"}
    </button>
  );
}
