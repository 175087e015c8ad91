"use client";
import {
  Background,
  Controls,
  MiniMap,
  ReactFlowProvider,
  type Edge,
  type Node,
  type NodeTypes,
  type Viewport,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { useAccess } from "@/hooks/use-access";
import { useStableCallback } from "@/hooks/use-stable-callback";
import { cardSetSignature, sameShallow, type FoldedFlow } from "@/lib/big-trees";
import { carryMeasured } from "@/lib/flow-identity";
import { stepBefore } from "@/lib/graph";
import { usePanelSize } from "@/hooks/use-panel-size";
import { useNarrow, useTouch } from "@/hooks/use-touch";
import { graphCounts } from "@/lib/where";
import type { ComparePick, Rejected } from "@/lib/research";
import {
  CentreOn,
  CompactWhenZoomedOut,
  FIT_PADDING,
  FitOnChange,
  FocusOnFound,
  FollowSelection,
  MIN_ZOOM,
  SyncStore,
  UncontrolledFlow,
  type FlowStore,
} from "./view-effects";
import { ACTIVE, DIM, edgeOf, edgeTypes } from "./flow-edges";
import { CommitCard, StubCard, type CardActions, type CardDetail, type TrajectoryNode } from "./commit-card";

// Module constants: React Flow re-mounts every node when these change identity.
const nodeTypes: NodeTypes = { commit: CommitCard, stub: StubCard };
// The canvas leaves a strip at the bottom for the zoom buttons (access.css).
const CANVAS_STYLE = { height: "calc(100% - 36px)" };
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
// Zoomed out this far, nearly every card is in view anyway: culling would only mount
// and unmount cards at the view's edges as it moves (a card added just below the view
// would wait for a hundred others to mount). It is back on past the second zoom.
const CULL_OFF_BELOW = 0.08;
const CULL_ON_ABOVE = 0.12;
const CARD_SIZE = { initialWidth: 208, initialHeight: 96 };

const NONE: readonly Rejected[] = [];

// Module constants too: a new colour function makes the minimap draw every card again.
const MINIMAP_STYLE = { margin: 0, width: 180, height: 110 };
const minimapColour = (n: Node): string => ((n.data as { card?: { active?: boolean } }).card?.active ? ACTIVE : DIM);

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
  const { flow, details, rejected, pick, found, actions, onFold } = props;
  // (the page's opener reads the family's graph, new at every turn: the stub cards get
  // one function for the panel's life, which calls the page's latest)
  const onOpenThread = useStableCallback(props.onOpenThread);
  const selectedId = props.selection.nodeId;
  const touch = useTouch();
  const { edit } = useAccess();
  // On a phone the view opens at full size, where a card's buttons are finger-sized
  // (24 px and more); pinching out still shows more of the family.
  const narrow = useNarrow();
  const size = usePanelSize();
  const canvas = useRef<HTMLDivElement>(null);
  const parents = useMemo(() => new Map((flow?.links ?? []).map((l) => [l.target, l.source] as const)), [flow]);
  // A card whose data did not change keeps its data object, and a card that also kept
  // its place keeps its node object: one added node renders one card, and React Flow
  // adopts the other 2,000 nodes as they are (lib/flow-identity).
  const nodeCache = useRef(new Map<string, TrajectoryNode>());
  const nodes: TrajectoryNode[] = useMemo(() => {
    const previous = nodeCache.current;
    const next = new Map<string, TrajectoryNode>();
    const keep = (node: TrajectoryNode): TrajectoryNode => {
      const old = previous.get(node.id);
      let kept = node;
      if (old !== undefined && old.type === node.type && sameShallow(old.data, node.data, 2)) {
        const samePlace = old.position.x === node.position.x && old.position.y === node.position.y;
        kept = samePlace ? old : ({ ...node, data: old.data } as TrajectoryNode);
      }
      next.set(node.id, kept);
      return kept;
    };
    const built: TrajectoryNode[] = (flow?.cards ?? []).map((card) =>
      card.kind === "stub"
        ? keep({
            id: card.id,
            type: "stub",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: { card, onOpen: onOpenThread, onRename: actions.onRename },
          })
        : keep({
            id: card.id,
            type: "commit",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: {
              card,
              detail: details.get(card.id) ?? null,
              rejected: card.active ? (rejected.get(card.id) ?? NONE) : NONE,
              picked: pick.a === card.id ? "a" : pick.b === card.id ? "b" : null,
              found: found?.nodeId === card.id,
              selected: selectedId === card.id,
              actions,
              fold: card.fold,
              onFold,
              parent: stepBefore(card, parents),
            },
          }),
    );
    nodeCache.current = next;
    return built;
  }, [flow, details, rejected, pick, found, actions, onOpenThread, onFold, parents, selectedId]);
  const edges: Edge[] = useMemo(() => (flow?.links ?? []).map(edgeOf), [flow]);
  // Cards stay where the layout puts them: no key moves them (they take no focus), and
  // a mouse drag only serves dropping a card on the head, after which the card goes
  // back to its place (onNodeDragStop). React Flow keeps its own copy of the nodes (with
  // the sizes it measured): SyncStore hands it each new layout, keeping each card's
  // measured size so that it stays visible (see carryMeasured), in the commit that made
  // it; a card measured or dragged renders no panel.
  const flowStore = useRef<FlowStore | null>(null);
  // A card dropped on the head brings its work into the current path; it goes back
  // to its place either way.
  const onBringIn = actions.onBringIn;
  // (the same function while the panel lives: a new one would be set in React Flow's
  // store, every card's subscription running, at each new layout)
  const laidOut = useRef(nodes);
  useEffect(() => {
    laidOut.current = nodes;
  }, [nodes]);
  const onNodeDragStop = useCallback(
    (_: unknown, dragged: TrajectoryNode) => {
      const store = flowStore.current?.getState();
      if (!store) return;
      const held = store.nodes as TrajectoryNode[];
      const headCard = held.find((n) => n.type === "commit" && n.data.card.head);
      if (headCard && headCard.id !== dragged.id && dragged.type === "commit" && nearEnough(dragged, headCard)) {
        onBringIn(dragged.id);
      }
      store.setNodes(carryMeasured(held, laidOut.current));
    },
    [onBringIn],
  );
  // (state set only when it changes: the view moves at every frame of a pan)
  const [far, setFar] = useState(false);
  const farRef = useRef(false);
  const onMove = useCallback((_: unknown, viewport: Viewport) => {
    const next = farRef.current ? viewport.zoom < CULL_ON_ABOVE : viewport.zoom < CULL_OFF_BELOW;
    if (next === farRef.current) return;
    farRef.current = next;
    setFar(next);
  }, []);
  const signature = useMemo(() => {
    const cards = flow?.cards ?? [];
    // A small family is framed again once its branches' summaries arrive: a summary
    // makes its lane's first card taller, which could then reach under the minimap.
    const summaries = cards.length > CULL_ABOVE ? "" : `~${cards.filter((c) => c.threadSummary).length}`;
    return cardSetSignature(
      props.frame + summaries,
      cards.map((c) => c.id),
    );
  }, [flow, props.frame]);
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
              <UncontrolledFlow
                nodes={nodes}
                edges={edges}
                onNodeDragStop={onNodeDragStop}
                nodeTypes={nodeTypes}
                edgeTypes={edgeTypes}
                nodesConnectable={false}
                // a finger on a card pans the view (touch brings in with ⤵ or the long-press menu)
                nodesDraggable={!touch}
                nodesFocusable={false}
                edgesFocusable={false}
                disableKeyboardA11y
                style={CANVAS_STYLE}
                zoomOnDoubleClick={false}
                onlyRenderVisibleElements={nodes.length > CULL_ABOVE && !far}
                onMove={onMove}
                minZoom={MIN_ZOOM}
                maxZoom={1.5}
                proOptions={{ hideAttribution: true }}
              >
                <Background gap={24} size={1} color="#e5e7eb" />
                {/* Zoomed out this far the view shows the whole family: the minimap would
                    repeat it, and draw every card again on each change. */}
                {!far && (
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
                      nodeColor={minimapColour}
                      style={MINIMAP_STYLE}
                    />
                  </div>
                )}
                <SyncStore nodes={nodes} edges={edges} into={flowStore} />
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
              </UncontrolledFlow>
              {/* Outside the canvas, in a strip of its own: the zoom buttons never cover a card. */}
              <Controls
                showInteractive={false}
                position="bottom-right"
                orientation="horizontal"
                fitViewOptions={{ minZoom: MIN_ZOOM, padding: FIT_PADDING }}
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
