"use client";
import {
  BaseEdge,
  getBezierPath,
  getSmoothStepPath,
  getStraightPath,
  MarkerType,
  type Edge,
  type EdgeProps,
  type EdgeTypes,
} from "@xyflow/react";
import type { FlowLink } from "@/features/graph/lib/graph";

// The trajectory's edges: a link of the layout as a React Flow edge, and the labelled edge.

export const ACTIVE = "#c8102e";
export const DIM = "#b8bcc4";
const MERGE = "#7c3aed";
const MERGE_DASH = "6 4";

export type EdgeShape = "straight" | "bezier" | "smoothstep";
export type LabelledEdge = Edge<{ shape: EdgeShape }, "labelled">;

// A label's box is sized from its text (10 px type), not measured: React Flow's own edge
// label measures its text (getBBox) as it mounts, a layout of the page for each, and a
// view moved over a big family zoomed out mounts a hundred labelled edges at once.
const CHAR_PX = 5.6;
const PAD_X = 4;
const HEIGHT = 16;

/** A branch's (or a merge's) edge with its reason written on it. */
export function LabelledEdgeView(props: EdgeProps<LabelledEdge>) {
  const shape = props.data?.shape ?? "smoothstep";
  const [path, x, y] =
    shape === "straight"
      ? getStraightPath(props)
      : shape === "bezier"
        ? getBezierPath(props)
        : getSmoothStepPath(props);
  const text = typeof props.label === "string" ? props.label : "";
  const width = text.length * CHAR_PX + 2 * PAD_X;
  return (
    <>
      <BaseEdge
        id={props.id}
        path={path}
        style={props.style}
        markerEnd={props.markerEnd}
        markerStart={props.markerStart}
        interactionWidth={props.interactionWidth}
      />
      {text !== "" && (
        <g transform={`translate(${x} ${y})`} className="react-flow__edge-textwrapper">
          <rect
            className="react-flow__edge-textbg"
            x={-width / 2}
            y={-HEIGHT / 2}
            width={width}
            height={HEIGHT}
            rx={2}
            ry={2}
          />
          <text className="react-flow__edge-text" textAnchor="middle" dominantBaseline="central">
            {text}
          </text>
        </g>
      )}
    </>
  );
}

// A module constant: React Flow re-mounts every edge when it changes identity.
export const edgeTypes: EdgeTypes = { labelled: LabelledEdgeView };

// A link the layout kept (lib/flow-identity) keeps its edge object: React Flow leaves
// an edge it already holds as it is.
const EDGES = new WeakMap<FlowLink, Edge>();

export function edgeOf(l: FlowLink): Edge {
  const made = EDGES.get(l);
  if (made !== undefined) return made;
  const colour = l.active ? ACTIVE : DIM;
  const edge: Edge = {
    id: l.id,
    source: l.source,
    target: l.target,
    ...(l.reason
      ? {
          type: "labelled",
          data: { shape: l.kind === "turn" ? "straight" : l.kind === "merge" ? "bezier" : "smoothstep" },
        }
      : { type: l.kind === "turn" ? "straight" : l.kind === "merge" ? "default" : "smoothstep" }),
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
  EDGES.set(l, edge);
  return edge;
}
