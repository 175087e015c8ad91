"use client";
import { Background, Controls, MiniMap, ReactFlowProvider, type Node, type NodeTypes } from "@xyflow/react";
import { memo, useMemo, useRef, type KeyboardEvent } from "react";
import { useAccess } from "@/hooks/use-access";
import { useAfterPaint } from "@/hooks/use-after-paint";
import { useStableCallback } from "@/hooks/use-stable-callback";
import { cardSetSignature, type FoldedFlow } from "@/features/graph/lib/big-trees";
import type { PanelSize } from "@/features/graph/hooks/use-panel-size";
import { useDropOnHead } from "@/features/graph/hooks/use-drop-on-head";
import { useFarZoom } from "@/features/graph/hooks/use-far-zoom";
import { useFirstWindow } from "@/features/graph/hooks/use-first-window";
import { useFlowNodes } from "@/features/graph/hooks/use-flow-nodes";
import { useGraphHint } from "@/features/graph/hooks/use-graph-hint";
import { useOpeningView } from "@/features/graph/hooks/use-opening-view";
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
  READABLE_ZOOM,
  SyncStore,
  UncontrolledFlow,
} from "./view-effects";
import { ACTIVE, DIM, edgeOf, edgeTypes } from "./flow-edges";
import { CommitCard, StubCard, type CardActions, type CardDetail } from "./commit-card";

// Module constants: React Flow re-mounts every node when these change identity.
const nodeTypes: NodeTypes = { commit: CommitCard, stub: StubCard };
// The canvas leaves a strip at the bottom for the minimap and the zoom buttons
// (big-trees.css, access.css): neither ever covers a card.
const STRIP_PX = 60;
const CANVAS_STYLE = { height: `calc(100% - ${STRIP_PX}px)` };

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
  /** the panel's height and maximised state (usePanelSize, held by the page: Escape leaves Maximise) */
  size: PanelSize;
}

// Above this many cards only those in view are drawn (React Flow's culling); every
// card carries a size before it is measured (use-flow-nodes' CARD_SIZE), so framing a
// card that was never drawn still works.
const CULL_ABOVE = 300;

// Module constants too: a new colour function makes the minimap draw every card again.
const MINIMAP_STYLE = { margin: 0, width: 220, height: 52 };
const minimapColour = (n: Node): string => ((n.data as { card?: { active?: boolean } }).card?.active ? ACTIVE : DIM);

/** The collapsible Co-construction Trajectory panel: the family DAG as commit cards.
 * Memoised, as its cards are: the page hands it stable callbacks, so a streamed token,
 * which re-renders the page and the chat, re-renders neither the panel nor a card. */
export const TrajectoryPanel = memo(function TrajectoryPanel(props: TrajectoryProps) {
  const { flow, found, pick } = props;
  // (the page's opener reads the family's graph, new at every turn: the stub cards get
  // one function for the panel's life, which calls the page's latest)
  const onOpenThread = useStableCallback(props.onOpenThread);
  const selectedId = props.selection.nodeId;
  const touch = useTouch();
  const { edit } = useAccess();
  const hint = useGraphHint(props.actions.onTryAlternatives !== undefined);
  // On a phone the view opens at full size, where a card's buttons are finger-sized
  // (24 px and more); pinching out still shows more of the family.
  const narrow = useNarrow();
  const size = props.size;
  const canvas = useRef<HTMLDivElement>(null);
  const nodes = useFlowNodes({ ...props, onOpenThread, selectedId });
  const edges = useMemo(() => (flow?.links ?? []).map(edgeOf), [flow]);
  // Cards stay where the layout puts them; React Flow keeps its own copy of the nodes
  // (with the sizes it measured): SyncStore hands it each new layout, keeping each
  // card's measured size (see carryMeasured), in the commit that made it; a card
  // measured or dragged renders no panel. A card dropped on the head is brought in.
  const { flowStore, onNodeDragStop } = useDropOnHead(nodes, props.actions.onBringIn);
  const { far, onMove } = useFarZoom();
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
  const drawn = !props.collapsed && !(props.loading && !flow) && nodes.length > 0;
  const minZoom = narrow ? READABLE_ZOOM : MIN_ZOOM;
  const framing = useMemo(() => ({ padding: FIT_PADDING, minZoom, maxZoom: 1, readable: READABLE_ZOOM }), [minZoom]);
  const { room, openAt } = useOpeningView({ canvas, drawn, strip: STRIP_PX, nodes, focus, framing });
  // The first paint draws the cards around the opening view; the rest follow after it.
  const firstNeeds = useMemo(
    () => [...focus, found?.nodeId, props.centre?.nodeId, selectedId].filter((id) => id != null),
    [focus, found, props.centre, selectedId],
  );
  const culled = nodes.length > CULL_ABOVE;
  const handed = useFirstWindow({ nodes, edges, openAt, room, keep: firstNeeds, culled });
  const { steps: nodeCount, paths: pathCount } = graphCounts(flow);
  // The minimap draws every card again (one element and one store subscription each):
  // the first paint shows the cards in view without waiting for it.
  const minimap = useAfterPaint(nodes.length > 0);
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
            {hint}
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
          ) : room === null ? null : (
            <ReactFlowProvider>
              <UncontrolledFlow
                nodes={handed.nodes}
                edges={handed.edges}
                openAt={openAt}
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
                onlyRenderVisibleElements={culled && !far}
                onMove={onMove}
                minZoom={MIN_ZOOM}
                maxZoom={1.5}
                proOptions={{ hideAttribution: true }}
              >
                <Background gap={24} size={1} color="#e5e7eb" />
                <SyncStore nodes={handed.nodes} edges={handed.edges} into={flowStore} />
                <FitOnChange
                  signature={signature}
                  focus={focus}
                  minZoom={minZoom}
                  readable={READABLE_ZOOM}
                  keepView={nodes.length > CULL_ABOVE}
                />
                <FocusOnFound found={found} present={foundPresent} />
                <FollowSelection selection={props.selection} />
                <CentreOn centre={props.centre} />
                <CompactWhenZoomedOut target={canvas} />
              </UncontrolledFlow>
              {/* In the strip under the canvas, beside the zoom buttons: it never covers a
                card. Zoomed out this far the view shows the whole family: the minimap
                would repeat it, and draw every card again on each change. */}
              {!far && (
                <div
                  className="minimap-slot"
                  data-testid="graph-minimap"
                  aria-label="Minimap: click or drag to move the view"
                >
                  {minimap && (
                    <MiniMap
                      position="top-left"
                      pannable
                      zoomable
                      ariaLabel="Minimap of the whole family"
                      nodeColor={minimapColour}
                      // (outside the canvas, React Flow's colour variables do not reach it)
                      bgColor="#fff"
                      maskColor="rgba(229, 231, 235, 0.7)"
                      maskStrokeColor="#9ca3af"
                      maskStrokeWidth={1}
                      style={MINIMAP_STYLE}
                    />
                  )}
                </div>
              )}
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
