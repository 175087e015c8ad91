"use client";
import {
  ReactFlow,
  useReactFlow,
  useStore,
  useStoreApi,
  type Edge,
  type Node,
  type ReactFlowProps,
  type Viewport,
} from "@xyflow/react";
import { useCallback, useEffect, useLayoutEffect, useRef, useState, type RefObject } from "react";
import { useLatest } from "@/hooks/use-stable-callback";
import { addedCards } from "@/features/graph/lib/big-trees";
import { carryMeasured } from "@/features/graph/lib/flow-identity";
import type { FlowStore } from "@/features/graph/types";

// The view's moves inside the trajectory's React Flow: each renders nothing and acts
// on the view (fit, centre, follow, compact) when its input changes.

// Low enough that "fit view" always fits a 2,000-step family; compact cards stay legible.
export const MIN_ZOOM = 0.02;
// The zoom a family opens at, at the least (and is framed again at): a card's smallest
// text, 12 px, is 11 px on screen. The rest of the family is a pan or the minimap away.
export const READABLE_ZOOM = 0.92;

// Zoomed out below this, cards switch to their compact form (label, name, state dot):
// the step's buttons hide (its menu has them: Enter, a long press).
const COMPACT_BELOW = 0.85;
// Further out, a compact card's fold button hides too (the step menu folds as well).
const TINY_BELOW = 0.35;

export type { FlowStore };

/** React Flow holding its own nodes and edges: those of its mount, then each new layout
 * through SyncStore (a prop that changes is set in React Flow's store after the paint,
 * every card's subscription running again). It opens at `openAt` (lib/opening-view),
 * as of its mount, else at the layout's origin. */
export function UncontrolledFlow<N extends Node, E extends Edge>({
  nodes,
  edges,
  openAt,
  ...props
}: Omit<ReactFlowProps<N, E>, "defaultNodes" | "defaultEdges" | "defaultViewport"> & {
  nodes: N[];
  edges: E[];
  openAt?: Viewport;
}) {
  const [mounted] = useState(() => ({ nodes, edges, openAt }));
  return (
    <ReactFlow<N, E>
      {...props}
      defaultNodes={mounted.nodes}
      defaultEdges={mounted.edges}
      defaultViewport={mounted.openAt}
    />
  );
}

/** Hands each new layout to React Flow's store (which holds the nodes: the flow is
 * uncontrolled, so that a card measured or dragged re-renders no panel), keeping each
 * card's measured size and the node objects of unchanged cards (carryMeasured). In a
 * layout effect: the store has them in the commit that made them, before the browser
 * paints, and FitOnChange (a later layout effect) finds a card just added. `into`
 * receives the store, for what the panel does outside the flow (a drag let go). */
export function SyncStore({ nodes, edges, into }: { nodes: Node[]; edges: Edge[]; into: RefObject<FlowStore | null> }) {
  const store = useStoreApi();
  useLayoutEffect(() => {
    into.current = store;
  }, [into, store]);
  useLayoutEffect(() => {
    const state = store.getState();
    if (state.nodes !== nodes) state.setNodes(carryMeasured(state.nodes, nodes));
  }, [nodes, store]);
  useLayoutEffect(() => {
    const state = store.getState();
    if (state.edges !== edges) state.setEdges(edges);
  }, [edges, store]);
  return null;
}

/** Frames a search hit's card once it is on the graph (after any re-framing of a new family). */
export function FocusOnFound({ found, present }: { found: { nodeId: string; tick: number } | null; present: boolean }) {
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
export function FollowSelection({ selection }: { selection: { nodeId: string | null; tick: number } }) {
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

/** Centres the view on one step (a breadcrumb clicked, a sibling switched to). */
export function CentreOn({ centre }: { centre: { nodeId: string; tick: number } | null }) {
  const { fitView } = useReactFlow();
  useEffect(() => {
    if (centre === null) return;
    const id = window.setTimeout(() => {
      void fitView({ nodes: [{ id: centre.nodeId }], padding: 1.2, maxZoom: 1, minZoom: 0.4, duration: 250 });
    }, 60);
    return () => window.clearTimeout(id);
  }, [centre, fitView]);
  return null;
}

// How far (px) from the view's edge a card added outside the view is brought in.
const BRING_MARGIN = 24;

const sameSize = (a: { width: number; height: number }, b: { width: number; height: number }) =>
  a.width === b.width && a.height === b.height;

// A card's buttons are at least this big on screen, at every zoom that shows them
// (WCAG 2.2, 2.5.8 asks 24 × 24 px; 28 leaves room for rounding and phones).
const BUTTON_PX = 28;

/** The size in flow units that a card's buttons need at `zoom` to be BUTTON_PX on
 * screen, for zooms below 1 (null at 1 and above: the stylesheet's size does). The zoom
 * is rounded down to a twentieth, so the size changes at a few steps, not every frame. */
export function buttonSizeAt(zoom: number): number | null {
  const step = Math.floor(zoom * 20) / 20;
  if (step >= 1) return null;
  return Math.ceil(BUTTON_PX / Math.max(step, TINY_BELOW));
}

/** Marks the flow's container `compact` (and `tiny`) while zoomed out, and sizes the
 * cards' buttons so that they stay BUTTON_PX on screen while they show (re-renders only
 * when one of these changes). */
export function CompactWhenZoomedOut({ target }: { target: RefObject<HTMLDivElement | null> }) {
  const compact = useStore((st) => st.transform[2] < COMPACT_BELOW);
  const tiny = useStore((st) => st.transform[2] < TINY_BELOW);
  const size = useStore((st) => buttonSizeAt(st.transform[2]));
  useEffect(() => {
    target.current?.classList.toggle("compact", compact);
    target.current?.classList.toggle("tiny", tiny);
  }, [compact, tiny, target]);
  useEffect(() => {
    const el = target.current;
    if (!el) return;
    if (size === null) el.style.removeProperty("--card-btn");
    else el.style.setProperty("--card-btn", `${size}px`);
  }, [size, target]);
  return null;
}

/** Re-frames the view when the set of cards changes: the whole family while it is
 * small, else the displayed path (the path the studio opens on); a phone, the newest step.
 * With `keepView` (a family big enough that only the cards in view are drawn), a card
 * added (a step started) does not re-frame the view: the card is drawn where it lands,
 * and the view moves, at once, at its zoom and just enough, only when it would land
 * outside. (An animated re-frame drew it some hundreds of ms late at 2,000 cards.) Nor
 * does a graph fetched again that lists the same cards in another order, or that drops
 * a few (a capped graph's oldest steps): see cardSetSignature and addedCards. */
// The margins of a fitted view (the minimap has a strip of its own under the canvas).
export const FIT_PADDING = { x: 0.05, top: 0.1, bottom: 0.1 } as const;

export function FitOnChange({
  signature,
  focus,
  minZoom,
  readable,
  keepView,
}: {
  signature: string;
  focus: string[];
  minZoom: number;
  /** the zoom at which a card's text is legible (READABLE_ZOOM): the focus is cut to what fits at it */
  readable: number;
  keepView: boolean;
}) {
  const { fitView, getNode, getViewport, setViewport, getNodesBounds } = useReactFlow();
  const domSize = useStore((st) => ({ width: st.width, height: st.height }), sameSize);
  const first = useRef(true);
  // (set by layout effects declared before the ones below, so theirs read the new values)
  const focusRef = useLatest(focus);
  const shown = useRef("");
  const sizeRef = useLatest(domSize);
  // The cards a fit frames: the focus, less its oldest steps while the rest would not
  // fit at `readable` zoom: the view opens on the newest steps of the
  // path, legible, and the older ones are a pan or the minimap away.
  // (Across only: the steps of a path run left to right. A path that also runs down
  // several lanes is fitted whole in height, below that zoom if need be, so that no
  // step of it is cut at the view's top or bottom.)
  const framed = useCallback((): { id: string }[] | undefined => {
    let ids = focusRef.current;
    if (ids.length === 0) return undefined;
    const room = sizeRef.current.width * (1 - 2 * FIT_PADDING.x);
    while (ids.length > 1 && room > 0 && getNodesBounds(ids).width * readable > room) ids = ids.slice(1);
    return ids.map((n) => ({ id: n }));
  }, [focusRef, sizeRef, getNodesBounds, readable]);
  // (a layout effect: a card added outside the view is brought in before the browser paints)
  useLayoutEffect(() => {
    const added = keepView ? addedCards(shown.current, signature) : null;
    shown.current = signature;
    if (added !== null) {
      // (none added: the same cards, or a few fewer, e.g. a capped graph fetched again)
      const last = added[added.length - 1];
      if (last === undefined) return;
      // Moves the view just enough to show the card (with a margin), at once, at its zoom.
      const bring = (): boolean => {
        const node = getNode(last);
        if (!node) return false;
        const { x, y, zoom } = getViewport();
        const w = (node.measured?.width ?? node.initialWidth ?? 200) * zoom;
        const h = (node.measured?.height ?? node.initialHeight ?? 90) * zoom;
        const left = node.position.x * zoom + x;
        const top = node.position.y * zoom + y;
        const { width, height } = sizeRef.current;
        const shift = (start: number, size: number, room: number): number => {
          const margin = Math.min(BRING_MARGIN, room / 8);
          if (start + size > room - margin) return Math.max(room - margin - (start + size), margin - start);
          return start < margin ? margin - start : 0;
        };
        const dx = shift(left, w, width);
        const dy = shift(top, h, height);
        if (dx !== 0 || dy !== 0) void setViewport({ x: x + dx, y: y + dy, zoom }, { duration: 0 });
        return true;
      };
      // The card is in React Flow's store once SyncStore (an earlier layout effect of
      // the same commit) set the nodes; else it is looked for frame by frame.
      if (bring()) return;
      let frame = 0;
      let tries = 0;
      const retry = () => {
        if (!bring() && tries++ < 20) frame = requestAnimationFrame(retry);
      };
      frame = requestAnimationFrame(retry);
      return () => cancelAnimationFrame(frame);
    }
    const id = window.setTimeout(() => {
      void fitView({ padding: FIT_PADDING, maxZoom: 1, minZoom, duration: first.current ? 0 : 200, nodes: framed() });
      first.current = false;
    }, 80);
    return () => window.clearTimeout(id);
  }, [signature, fitView, minZoom, getNode, getViewport, setViewport, keepView, framed, sizeRef]);
  // A window resized (a phone turned, a laptop's half screen) frames the same cards again.
  useEffect(() => {
    let id: number | undefined;
    const onResize = () => {
      window.clearTimeout(id);
      id = window.setTimeout(() => void fitView({ padding: FIT_PADDING, maxZoom: 1, minZoom, nodes: framed() }), 150);
    };
    window.addEventListener("resize", onResize);
    return () => {
      window.clearTimeout(id);
      window.removeEventListener("resize", onResize);
    };
  }, [fitView, minZoom, framed]);
  return null;
}
