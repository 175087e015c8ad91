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
import { useEffect, useMemo, useRef } from "react";
import { carryMeasured, type FlowGraph } from "@/lib/graph";
import { CommitCard, StubCard, type CardDetail, type TrajectoryNode } from "./commit-card";

// Module constants: React Flow re-mounts every node when these change identity.
const nodeTypes: NodeTypes = { commit: CommitCard, stub: StubCard };
const ACTIVE = "#c8102e";
const DIM = "#b8bcc4";

export interface TrajectoryProps {
  flow: FlowGraph | null;
  details: ReadonlyMap<string, CardDetail>;
  collapsed: boolean;
  onToggle: () => void;
  onRestore: (nodeId: string) => void;
  onFocusStep: (nodeId: string) => void;
  onOpenThread: (threadId: string) => void;
  loading: boolean;
}

/** Re-frames the view when the set of cards changes: the whole family while it is
 * small, else the last steps of the displayed path around the head. */
function FitOnChange({ signature, focus }: { signature: string; focus: string[] }) {
  const { fitView } = useReactFlow();
  const first = useRef(true);
  const focusRef = useRef(focus);
  focusRef.current = focus;
  useEffect(() => {
    const id = window.setTimeout(() => {
      const nodes = focusRef.current.length > 0 ? focusRef.current.map((n) => ({ id: n })) : undefined;
      void fitView({ padding: 0.12, maxZoom: 1, minZoom: 0.3, duration: first.current ? 0 : 200, nodes });
      first.current = false;
    }, 80);
    return () => window.clearTimeout(id);
  }, [signature, fitView]);
  return null;
}

/** The collapsible Co-construction Trajectory panel: the family DAG as commit cards. */
export function TrajectoryPanel(props: TrajectoryProps) {
  const { flow, details, onRestore, onFocusStep, onOpenThread } = props;
  const nodes: TrajectoryNode[] = useMemo(
    () =>
      (flow?.cards ?? []).map((card) =>
        card.kind === "stub"
          ? { id: card.id, type: "stub", position: { x: card.x, y: card.y }, data: { card, onOpen: onOpenThread } }
          : {
              id: card.id,
              type: "commit",
              position: { x: card.x, y: card.y },
              data: { card, detail: details.get(card.id) ?? null, onRestore, onFocusStep },
            },
      ),
    [flow, details, onRestore, onFocusStep, onOpenThread],
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
          style: { stroke: colour, strokeWidth: l.active ? 2.5 : 1.5, strokeDasharray: l.kind === "stub" ? "4 4" : undefined },
          markerEnd: { type: MarkerType.ArrowClosed, color: colour, width: 16, height: 16 },
          zIndex: l.active ? 1 : 0,
        };
      }),
    [flow],
  );
  // Cards can be dragged; a new answer from the server lays them out again, keeping
  // each card's measured size so that it stays visible (see carryMeasured).
  const [rfNodes, setRfNodes, onNodesChange] = useNodesState<TrajectoryNode>(nodes);
  useEffect(() => setRfNodes((previous) => carryMeasured(previous, nodes)), [nodes, setRfNodes]);
  const signature = useMemo(() => (flow?.cards ?? []).map((c) => c.id).join(","), [flow]);
  const focus = useMemo(() => {
    const cards = flow?.cards ?? [];
    if (cards.length <= 12) return [];
    const path = cards.filter((c) => c.active || c.head).sort((a, b) => a.turn - b.turn);
    return path.slice(-6).map((c) => c.id);
  }, [flow]);
  const nodeCount = flow?.cards.filter((c) => c.kind === "turn").length ?? 0;

  return (
    <section data-testid="graph-panel" className={`graph-panel ${props.collapsed ? "collapsed" : ""}`}>
      <header className="panel-head">
        <button type="button" className="link" data-testid="graph-toggle" onClick={props.onToggle} aria-expanded={!props.collapsed}>
          {props.collapsed ? "▸" : "▾"} Co-construction Trajectory
        </button>
        <span className="muted">
          {nodeCount} step{nodeCount === 1 ? "" : "s"} · {flow?.laneCount ?? 0} path{flow?.laneCount === 1 ? "" : "s"}
        </span>
        {flow?.truncated && (
          <span className="badge warn" data-testid="graph-truncated" title="The graph answer is capped; the oldest steps are not drawn">
            older steps hidden
          </span>
        )}
        <span className="muted hint">double-click a step to restore it</span>
      </header>
      {!props.collapsed && (
        <div className="graph-body">
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
                zoomOnDoubleClick={false}
                minZoom={0.1}
                maxZoom={1.5}
                proOptions={{ hideAttribution: true }}
              >
                <Background gap={24} size={1} color="#e5e7eb" />
                <Controls showInteractive={false} position="bottom-right" />
                <FitOnChange signature={signature} focus={focus} />
              </ReactFlow>
            </ReactFlowProvider>
          )}
        </div>
      )}
    </section>
  );
}
