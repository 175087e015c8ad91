"use client";
import {
  Background,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useNodesState,
  type Edge,
  type NodeTypes,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useMemo, useRef, type KeyboardEvent } from "react";
import { useAccess } from "@/hooks/use-access";
import { sameShallow, type FoldedFlow } from "@/lib/big-trees";
import { carryMeasured } from "@/lib/graph";
import { usePanelSize } from "@/hooks/use-panel-size";
import { useNarrow, useTouch } from "@/hooks/use-touch";
import { graphCounts } from "@/lib/where";
import type { ComparePick, Rejected } from "@/lib/research";
import { CentreOn, CompactWhenZoomedOut, FitOnChange, FocusOnFound, FollowSelection, MIN_ZOOM } from "./view-effects";
import { CommitCard, StubCard, type CardActions, type CardDetail, type TrajectoryNode } from "./commit-card";

// Module constants: React Flow re-mounts every node when these change identity.
const nodeTypes: NodeTypes = { commit: CommitCard, stub: StubCard };
// The canvas leaves a strip at the bottom for the zoom buttons (access.css).
const CANVAS_STYLE = { height: "calc(100% - 36px)" };
const ACTIVE = "#c8102e";
const DIM = "#b8bcc4";
const MERGE = "#7c3aed";
const MERGE_DASH = "6 4";
// How close (px, flow coordinates) a dropped card's centre must come to the head's.
const DROP_RADIUS = 90;

export interface TrajectoryProps {
  flow: FoldedFlow | null;
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
  /** fold or unfold a branch (its later steps and the branches below it) */
  onFold: (threadId: string) => void;
  /** a step to centre the view on (a breadcrumb or a sibling switch) */
  centre: { nodeId: string; tick: number } | null;
  loading: boolean;
  /** the step the keyboard selection is on, and when it last moved (the view follows it) */
  selection: { nodeId: string | null; tick: number };
  /** a key pressed while the trajectory has the focus (lib/keymap, scope "graph") */
  onGraphKey: (e: KeyboardEvent<HTMLElement>) => void;
}

// Above this many cards only those in view are drawn (React Flow's culling); every
// card carries a size before it is measured (CARD_SIZE), so framing a card that was
// never drawn still works.
const CULL_ABOVE = 300;
const CARD_SIZE = { initialWidth: 208, initialHeight: 96 };

const NONE: readonly Rejected[] = [];

function centre(n: TrajectoryNode): { x: number; y: number } {
  return { x: n.position.x + (n.measured?.width ?? 0) / 2, y: n.position.y + (n.measured?.height ?? 0) / 2 };
}

/** Whether a dragged card was let go over (near) another card. */
function nearEnough(a: TrajectoryNode, b: TrajectoryNode): boolean {
  const p = centre(a);
  const q = centre(b);
  return Math.hypot(p.x - q.x, p.y - q.y) <= DROP_RADIUS;
}

/** The collapsible Co-construction Trajectory panel: the family DAG as commit cards.
 * Memoised, as its cards are: the page hands it stable callbacks, so a streamed token,
 * which re-renders the page and the chat, re-renders neither the panel nor a card. */
export const TrajectoryPanel = memo(function TrajectoryPanel(props: TrajectoryProps) {
  const { flow, details, rejected, pick, found, actions, onOpenThread, onFold } = props;
  const selectedId = props.selection.nodeId;
  const touch = useTouch();
  const { edit } = useAccess();
  // On a phone the view opens at full size, where a card's buttons are finger-sized
  // (24 px and more); pinching out still shows more of the family.
  const narrow = useNarrow();
  const size = usePanelSize();
  const canvas = useRef<HTMLDivElement>(null);
  const parents = useMemo(() => new Map((flow?.links ?? []).map((l) => [l.target, l.source] as const)), [flow]);
  // A card whose data did not change keeps its data object, so its memoised component
  // does not render again: one added node renders one card (and its neighbours' links).
  const dataCache = useRef(new Map<string, TrajectoryNode["data"]>());
  const nodes: TrajectoryNode[] = useMemo(() => {
    const previous = dataCache.current;
    const next = new Map<string, TrajectoryNode["data"]>();
    const keep = <D extends TrajectoryNode["data"]>(id: string, data: D): D => {
      const old = previous.get(id);
      const kept = old !== undefined && sameShallow(old, data, 2) ? (old as D) : data;
      next.set(id, kept);
      return kept;
    };
    const built: TrajectoryNode[] = (flow?.cards ?? []).map((card) =>
      card.kind === "stub"
        ? {
            id: card.id,
            type: "stub",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: keep(card.id, { card, onOpen: onOpenThread, onRename: actions.onRename }),
          }
        : {
            id: card.id,
            type: "commit",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: keep(card.id, {
              card,
              detail: details.get(card.id) ?? null,
              rejected: card.active ? (rejected.get(card.id) ?? NONE) : NONE,
              picked: pick.a === card.id ? "a" : pick.b === card.id ? "b" : null,
              found: found?.nodeId === card.id,
              selected: selectedId === card.id,
              actions,
              fold: card.fold,
              onFold,
              parent: parents.get(card.id) ?? `${card.threadId}:0`,
            }),
          },
    );
    dataCache.current = next;
    return built;
  }, [flow, details, rejected, pick, found, actions, onOpenThread, onFold, parents, selectedId]);
  const edges: Edge[] = useMemo(
    () =>
      (flow?.links ?? []).map((l) => {
        const colour = l.active ? ACTIVE : DIM;
        return {
          id: l.id,
          source: l.source,
          target: l.target,
          type: l.kind === "turn" ? "straight" : l.kind === "merge" ? "default" : "smoothstep",
          animated: l.kind === "stub",
          label: l.reason ?? undefined,
          className: l.kind === "merge" ? "merge-edge" : undefined,
          style: {
            stroke: l.kind === "merge" ? MERGE : colour,
            strokeWidth: l.active ? 2.5 : 1.5,
            strokeDasharray: l.kind === "stub" ? "4 4" : l.kind === "merge" ? MERGE_DASH : undefined,
          },
          markerEnd: { type: MarkerType.ArrowClosed, color: colour, width: 16, height: 16 },
          zIndex: l.active ? 1 : 0,
        };
      }),
    [flow],
  );
  // Cards stay where the layout puts them: no key moves them (they take no focus), and
  // a mouse drag only serves dropping a card on the head, after which the card goes
  // back to its place (onNodeDragStop). A new answer from the server lays them out
  // again, keeping each card's measured size so that it stays visible (see carryMeasured).
  const [rfNodes, setRfNodes, onNodesChange] = useNodesState<TrajectoryNode>(nodes);
  useEffect(() => setRfNodes((previous) => carryMeasured(previous, nodes)), [nodes, setRfNodes]);
  // A card dropped on the head brings its work into the current path; it goes back
  // to its place either way.
  const onBringIn = actions.onBringIn;
  const onNodeDragStop = useCallback(
    (_: unknown, dragged: TrajectoryNode) => {
      const headCard = rfNodes.find((n) => n.type === "commit" && n.data.card.head);
      if (headCard && headCard.id !== dragged.id && dragged.type === "commit" && nearEnough(dragged, headCard)) {
        onBringIn(dragged.id);
      }
      setRfNodes((previous) => carryMeasured(previous, nodes));
    },
    [rfNodes, nodes, onBringIn, setRfNodes],
  );
  const signature = useMemo(
    () => `${props.frame}|${(flow?.cards ?? []).map((c) => c.id).join(",")}`,
    [flow, props.frame],
  );
  const focus = useMemo(() => {
    const cards = flow?.cards ?? [];
    const path = cards.filter((c) => c.active || c.head).sort((a, b) => a.turn - b.turn);
    // a phone shows the newest step of the path at full size
    if (narrow) return path.slice(-1).map((c) => c.id);
    // Around the displayed path: all of it while short, else its last dozen steps.
    return path.slice(-12).map((c) => c.id);
  }, [flow, narrow]);
  const { steps: nodeCount, paths: pathCount } = graphCounts(flow);
  const foundPresent = found !== null && (flow?.labels.has(found.nodeId) ?? false);
  const picking = pick.a !== null && pick.b === null;

  return (
    <section
      data-testid="graph-panel"
      className={`graph-panel ${props.collapsed ? "collapsed" : ""} ${size.maximised ? "maximised" : ""}`}
      style={props.collapsed || size.maximised || size.height === null ? undefined : { flexBasis: size.height }}
      ref={size.panel}
    >
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
            {!edit
              ? "click: show a step · ⇄ compare two steps"
              : touch
                ? "long-press a step for its menu · ↺ restores · ⇄ compares two · ⤵ brings in · ⋔ tries 3 answers"
                : "double-click: restore · ⇄ compare · ⤵ or drop on the head: bring in · ⋔ 3 alternatives · ? for keys"}
          </span>
        )}
        <button
          type="button"
          className="small-btn"
          data-testid="graph-maximise"
          aria-pressed={size.maximised}
          title={size.maximised ? "Back to the panel" : "Maximise the graph"}
          aria-label={size.maximised ? "Back to the panel" : "Maximise the graph"}
          onClick={size.toggleMaximised}
        >
          {size.maximised ? "⤡" : "⤢"}
          <span className="wide-only">{size.maximised ? " Restore size" : " Maximise"}</span>
        </button>
      </header>

      {found !== null && (
        <div className="found-bar" data-testid="found-bar" data-node-id={found.nodeId}>
          <span className="found-text">
            <strong>Search hit</strong> · step{" "}
            {flow?.labels.get(found.nodeId) ?? found.nodeId.slice(found.nodeId.lastIndexOf(":") + 1)}
            {!foundPresent && flow !== null && <span className="muted"> (not drawn on this graph)</span>} ·{" "}
            <span className="muted">“{found.hit.snippet}”</span>
          </span>
          {edit && (
            <button
              type="button"
              className="small-btn primary"
              data-testid="found-restore"
              onClick={props.onRestoreFound}
            >
              ↺ Restore this step
            </button>
          )}
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
          ref={canvas}
          data-testid="graph-keys"
          tabIndex={0}
          role="group"
          aria-label="Trajectory: arrow keys move between steps, Enter opens the selected step, r restores it, b brings it into the current path"
          aria-keyshortcuts="ArrowLeft ArrowRight ArrowUp ArrowDown Enter r x b"
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
                onNodeDragStop={onNodeDragStop}
                edges={edges}
                nodeTypes={nodeTypes}
                nodesConnectable={false}
                // a finger on a card pans the view (touch brings in with ⤵ or the long-press menu)
                nodesDraggable={!touch}
                nodesFocusable={false}
                edgesFocusable={false}
                disableKeyboardA11y
                style={CANVAS_STYLE}
                zoomOnDoubleClick={false}
                onlyRenderVisibleElements={nodes.length > CULL_ABOVE}
                minZoom={MIN_ZOOM}
                maxZoom={1.5}
                proOptions={{ hideAttribution: true }}
              >
                <Background gap={24} size={1} color="#e5e7eb" />
                <div
                  className="minimap-slot"
                  data-testid="graph-minimap"
                  aria-label="Minimap: click or drag to move the view"
                >
                  <MiniMap
                    position="top-left"
                    pannable
                    zoomable
                    ariaLabel="Minimap of the whole family"
                    nodeColor={(n) => ((n.data as { card?: { active?: boolean } }).card?.active ? ACTIVE : DIM)}
                    style={{ margin: 0, width: 180, height: 110 }}
                  />
                </div>
                <FitOnChange
                  signature={signature}
                  focus={focus}
                  minZoom={narrow ? 1 : MIN_ZOOM}
                  keepView={nodes.length > CULL_ABOVE}
                />
                <FocusOnFound found={found} present={foundPresent} />
                <FollowSelection selection={props.selection} />
                <CentreOn centre={props.centre} />
                <CompactWhenZoomedOut target={canvas} />
              </ReactFlow>
              {/* Outside the canvas, in a strip of its own: the zoom buttons never cover a card. */}
              <Controls
                showInteractive={false}
                position="bottom-right"
                orientation="horizontal"
                fitViewOptions={{ minZoom: MIN_ZOOM, padding: 0.08 }}
              />
            </ReactFlowProvider>
          )}
        </div>
      )}
      {/* (a phone has one scroll area and the maximise button: no 6 px handle to hit) */}
      {!props.collapsed && !size.maximised && !narrow && (
        <div
          className="graph-resize"
          data-testid="graph-resize"
          role="separator"
          aria-orientation="horizontal"
          aria-valuemin={0}
          aria-valuenow={size.height ?? 0}
          aria-valuetext={size.height === null ? "default height" : `${size.height} pixels`}
          aria-label="Resize the graph panel (arrow keys)"
          tabIndex={0}
          onPointerDown={size.startDrag}
          onKeyDown={size.onKey}
        />
      )}
    </section>
  );
});
