"use client";
import {
  Background,
  Controls,
  MarkerType,
  ReactFlow,
  ReactFlowProvider,
  useNodesState,
  useReactFlow,
  type Edge,
  type NodeTypes,
} from "@xyflow/react";
import { memo, useEffect, useMemo, useRef, type KeyboardEvent } from "react";
import { useNarrow, useTouch } from "@/hooks/use-touch";
import { carryMeasured, type FlowGraph } from "@/lib/graph";
import { graphCounts } from "@/lib/where";
import type { ComparePick, Rejected } from "@/lib/research";
import { CommitCard, StubCard, type CardActions, type CardDetail, type TrajectoryNode } from "./commit-card";

// Module constants: React Flow re-mounts every node when these change identity.
const nodeTypes: NodeTypes = { commit: CommitCard, stub: StubCard };
// The canvas leaves a strip at the bottom for the zoom buttons (access.css).
const CANVAS_STYLE = { height: "calc(100% - 36px)" };
const ACTIVE = "#c8102e";
const DIM = "#b8bcc4";

export interface TrajectoryProps {
  flow: FlowGraph | null;
  details: ReadonlyMap<string, CardDetail>;
  /** node id → the decisions rejected at that step */
  rejected: ReadonlyMap<string, readonly Rejected[]>;
  pick: ComparePick;
  /** a search hit to show: its card is framed and marked */
  found: { nodeId: string; tick: number; hit: { kind: string; snippet: string } } | null;
  headTurnId: string | null;
  /** changes when the panel's size changes (e.g. the comparison opens): the view is re-framed */
  frame: string;
  collapsed: boolean;
  onToggle: () => void;
  actions: CardActions;
  onCompareWithHead: () => void;
  onCancelCompare: () => void;
  onRestoreFound: () => void;
  onDismissFound: () => void;
  onOpenThread: (threadId: string) => void;
  loading: boolean;
  /** the step the keyboard selection is on, and when it last moved (the view follows it) */
  selection: { nodeId: string | null; tick: number };
  /** a key pressed while the trajectory has the focus (lib/keymap, scope "graph") */
  onGraphKey: (e: KeyboardEvent<HTMLElement>) => void;
}

const NONE: readonly Rejected[] = [];

/** Frames a search hit's card once it is on the graph (after any re-framing of a new family). */
function FocusOnFound({ found, present }: { found: { nodeId: string; tick: number } | null; present: boolean }) {
  const { fitView } = useReactFlow();
  useEffect(() => {
    if (found === null || !present) return;
    const id = window.setTimeout(() => {
      void fitView({ nodes: [{ id: found.nodeId }], padding: 0.6, maxZoom: 1, minZoom: 0.3, duration: 250 });
    }, 200);
    return () => window.clearTimeout(id);
  }, [found, present, fitView]);
  return null;
}

/** Keeps the card the keyboard selected in view, at the zoom of the moment. */
function FollowSelection({ selection }: { selection: { nodeId: string | null; tick: number } }) {
  const { getNode, getZoom, setCenter } = useReactFlow();
  useEffect(() => {
    if (selection.tick === 0 || selection.nodeId === null) return;
    const node = getNode(selection.nodeId);
    if (!node) return;
    const w = node.measured?.width ?? 190;
    const h = node.measured?.height ?? 60;
    void setCenter(node.position.x + w / 2, node.position.y + h / 2, { zoom: Math.max(getZoom(), 0.6), duration: 150 });
  }, [selection, getNode, getZoom, setCenter]);
  return null;
}

/** Re-frames the view when the set of cards changes: the whole family while it is
 * small, else the last steps of the displayed path around the head. */
function FitOnChange({ signature, focus, minZoom }: { signature: string; focus: string[]; minZoom: number }) {
  const { fitView } = useReactFlow();
  const first = useRef(true);
  const focusRef = useRef(focus);
  focusRef.current = focus;
  useEffect(() => {
    const id = window.setTimeout(() => {
      const nodes = focusRef.current.length > 0 ? focusRef.current.map((n) => ({ id: n })) : undefined;
      void fitView({ padding: 0.12, maxZoom: 1, minZoom, duration: first.current ? 0 : 200, nodes });
      first.current = false;
    }, 80);
    return () => window.clearTimeout(id);
  }, [signature, fitView, minZoom]);
  return null;
}

/** The collapsible Co-construction Trajectory panel: the family DAG as commit cards.
 * Memoised, as its cards are: the page hands it stable callbacks, so a streamed token,
 * which re-renders the page and the chat, re-renders neither the panel nor a card. */
export const TrajectoryPanel = memo(function TrajectoryPanel(props: TrajectoryProps) {
  const { flow, details, rejected, pick, found, actions, onOpenThread } = props;
  const selectedId = props.selection.nodeId;
  const touch = useTouch();
  // On a phone the view opens at full size, where a card's buttons are finger-sized
  // (24 px and more); pinching out still shows more of the family.
  const narrow = useNarrow();
  const nodes: TrajectoryNode[] = useMemo(
    () =>
      (flow?.cards ?? []).map((card) =>
        card.kind === "stub"
          ? {
              id: card.id,
              type: "stub",
              position: { x: card.x, y: card.y },
              data: { card, onOpen: onOpenThread, onRename: actions.onRename },
            }
          : {
              id: card.id,
              type: "commit",
              position: { x: card.x, y: card.y },
              data: {
                card,
                detail: details.get(card.id) ?? null,
                rejected: card.active ? (rejected.get(card.id) ?? NONE) : NONE,
                picked: pick.a === card.id ? "a" : pick.b === card.id ? "b" : null,
                found: found?.nodeId === card.id,
                selected: selectedId === card.id,
                actions,
              },
            },
      ),
    [flow, details, rejected, pick, found, actions, onOpenThread, selectedId],
  );
  const edges: Edge[] = useMemo(
    () =>
      (flow?.links ?? []).map((l) => {
        const colour = l.active ? ACTIVE : DIM;
        return {
          id: l.id,
          source: l.source,
          target: l.target,
          type: l.kind === "turn" ? "straight" : "smoothstep",
          animated: l.kind === "stub",
          label: l.reason ?? undefined,
          style: {
            stroke: colour,
            strokeWidth: l.active ? 2.5 : 1.5,
            strokeDasharray: l.kind === "stub" ? "4 4" : undefined,
          },
          markerEnd: { type: MarkerType.ArrowClosed, color: colour, width: 16, height: 16 },
          zIndex: l.active ? 1 : 0,
        };
      }),
    [flow],
  );
  // Cards stay where the layout puts them (nothing drags them); a new answer from the
  // server lays them out again, keeping each card's measured size so that it stays
  // visible (see carryMeasured).
  const [rfNodes, setRfNodes, onNodesChange] = useNodesState<TrajectoryNode>(nodes);
  useEffect(() => setRfNodes((previous) => carryMeasured(previous, nodes)), [nodes, setRfNodes]);
  const signature = useMemo(
    () => `${props.frame}|${(flow?.cards ?? []).map((c) => c.id).join(",")}`,
    [flow, props.frame],
  );
  const focus = useMemo(() => {
    const cards = flow?.cards ?? [];
    const path = cards.filter((c) => c.active || c.head).sort((a, b) => a.turn - b.turn);
    // a phone shows the newest step of the path at full size
    if (narrow) return path.slice(-1).map((c) => c.id);
    if (cards.length <= 12) return [];
    return path.slice(-6).map((c) => c.id);
  }, [flow, narrow]);
  const { steps: nodeCount, paths: pathCount } = graphCounts(flow);
  const foundPresent = found !== null && (flow?.labels.has(found.nodeId) ?? false);
  const picking = pick.a !== null && pick.b === null;

  return (
    <section data-testid="graph-panel" className={`graph-panel ${props.collapsed ? "collapsed" : ""}`}>
      <header className="panel-head">
        <button
          type="button"
          className="link"
          data-testid="graph-toggle"
          onClick={props.onToggle}
          aria-expanded={!props.collapsed}
        >
          {props.collapsed ? "▸" : "▾"} Co-construction Trajectory
        </button>
        <span className="muted">
          <span data-testid="graph-counts">
            {nodeCount} step{nodeCount === 1 ? "" : "s"} · {pathCount} path{pathCount === 1 ? "" : "s"}
          </span>
        </span>
        {flow?.truncated && (
          <span
            className="badge warn"
            data-testid="graph-truncated"
            title="The graph answer is capped; the oldest steps are not drawn"
          >
            older steps hidden
          </span>
        )}
        {picking ? (
          <span className="compare-hint" data-testid="compare-picking">
            <span className="compare-hint-text">
              Compare step {flow?.labels.get(pick.a ?? "") ?? "?"} with another step’s ⇄, or
            </span>
            {props.headTurnId !== null && props.headTurnId !== pick.a && (
              <button
                type="button"
                className="small-btn"
                data-testid="compare-with-head"
                onClick={props.onCompareWithHead}
              >
                the head
              </button>
            )}
            <button type="button" className="small-btn" onClick={props.onCancelCompare}>
              cancel
            </button>
          </span>
        ) : (
          <span className="muted hint" data-testid="graph-hint">
            {touch
              ? "long-press a step for its menu · ↺ restores · ⇄ compares two"
              : "double-click a step to restore it · ⇄ to compare two · ? for keys"}
          </span>
        )}
      </header>
      {found !== null && (
        <div className="found-bar" data-testid="found-bar" data-node-id={found.nodeId}>
          <span className="found-text">
            <strong>Search hit</strong> · step{" "}
            {flow?.labels.get(found.nodeId) ?? found.nodeId.slice(found.nodeId.lastIndexOf(":") + 1)}
            {!foundPresent && flow !== null && <span className="muted"> (not drawn on this graph)</span>} ·{" "}
            <span className="muted">“{found.hit.snippet}”</span>
          </span>
          <button
            type="button"
            className="small-btn primary"
            data-testid="found-restore"
            onClick={props.onRestoreFound}
          >
            ↺ Restore this step
          </button>
          <button
            type="button"
            className="icon"
            aria-label="Dismiss the search hit"
            data-testid="found-dismiss"
            onClick={props.onDismissFound}
          >
            ✕
          </button>
        </div>
      )}
      {!props.collapsed && (
        <div
          className="graph-body"
          data-testid="graph-keys"
          tabIndex={0}
          role="group"
          aria-label="Trajectory: arrow keys move between steps, Enter opens the selected step, r restores it"
          aria-keyshortcuts="ArrowLeft ArrowRight ArrowUp ArrowDown Enter r x"
          onKeyDown={props.onGraphKey}
        >
          {props.loading && !flow ? (
            <div className="empty">Loading the trajectory…</div>
          ) : nodes.length === 0 ? (
            <div className="empty">No steps yet. Send a message: every turn becomes a step here.</div>
          ) : (
            <ReactFlowProvider>
              <ReactFlow
                nodes={rfNodes}
                onNodesChange={onNodesChange}
                edges={edges}
                nodeTypes={nodeTypes}
                nodesConnectable={false}
                nodesDraggable={false}
                nodesFocusable={false}
                edgesFocusable={false}
                disableKeyboardA11y
                style={CANVAS_STYLE}
                zoomOnDoubleClick={false}
                minZoom={0.1}
                maxZoom={1.5}
                proOptions={{ hideAttribution: true }}
              >
                <Background gap={24} size={1} color="#e5e7eb" />
                <FitOnChange signature={signature} focus={focus} minZoom={narrow ? 1 : 0.3} />
                <FocusOnFound found={found} present={foundPresent} />
                <FollowSelection selection={props.selection} />
              </ReactFlow>
              {/* Outside the canvas, in a strip of its own: the zoom buttons never cover a card. */}
              <Controls showInteractive={false} position="bottom-right" orientation="horizontal" />
            </ReactFlowProvider>
          )}
        </div>
      )}
    </section>
  );
});
