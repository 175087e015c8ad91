"use client";
import { useReactFlow, useStore } from "@xyflow/react";
import { useEffect, useRef, type RefObject } from "react";
import { addedCards } from "@/lib/big-trees";

// The view's moves inside the trajectory's React Flow: each renders nothing and acts
// on the view (fit, centre, follow, compact) when its input changes.

// Low enough that "fit view" always fits a 2,000-step family; compact cards stay legible.
export const MIN_ZOOM = 0.02;

// Zoomed out below this, cards switch to their compact form (label, name, state dot):
// the step's buttons hide (its menu has them: Enter, a long press).
const COMPACT_BELOW = 0.7;
// Further out, a compact card's fold button hides too (the step menu folds as well).
const TINY_BELOW = 0.35;

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
 * and the view moves, at once and at its zoom, only when it would land outside. (An
 * animated re-frame drew it some hundreds of ms late at 2,000 cards.) */
export function FitOnChange({
  signature,
  focus,
  minZoom,
  keepView,
}: {
  signature: string;
  focus: string[];
  minZoom: number;
  keepView: boolean;
}) {
  const { fitView, getNode, getViewport, setCenter } = useReactFlow();
  const domSize = useStore((st) => ({ width: st.width, height: st.height }), sameSize);
  const first = useRef(true);
  const focusRef = useRef(focus);
  focusRef.current = focus;
  const shown = useRef("");
  const sizeRef = useRef(domSize);
  sizeRef.current = domSize;
  useEffect(() => {
    const added = keepView ? addedCards(shown.current, signature) : null;
    shown.current = signature;
    if (added !== null) {
      // The card is in React Flow's store a render later: look for it frame by frame.
      let frame = 0;
      let tries = 0;
      const bring = () => {
        const node = getNode(added[added.length - 1] ?? "");
        if (!node) {
          if (tries++ < 20) frame = requestAnimationFrame(bring);
          return;
        }
        const { x, y, zoom } = getViewport();
        const w = node.measured?.width ?? node.initialWidth ?? 200;
        const h = node.measured?.height ?? node.initialHeight ?? 90;
        const left = node.position.x * zoom + x;
        const top = node.position.y * zoom + y;
        const { width, height } = sizeRef.current;
        const inside = left >= 0 && top >= 0 && left + w * zoom <= width && top + h * zoom <= height;
        if (!inside) void setCenter(node.position.x + w / 2, node.position.y + h / 2, { zoom, duration: 0 });
      };
      frame = requestAnimationFrame(bring);
      return () => cancelAnimationFrame(frame);
    }
    const id = window.setTimeout(() => {
      const nodes = focusRef.current.length > 0 ? focusRef.current.map((n) => ({ id: n })) : undefined;
      void fitView({ padding: 0.12, maxZoom: 1, minZoom, duration: first.current ? 0 : 200, nodes });
      first.current = false;
    }, 80);
    return () => window.clearTimeout(id);
  }, [signature, fitView, minZoom, getNode, getViewport, setCenter, keepView]);
  // A window resized (a phone turned, a laptop's half screen) frames the same cards again.
  useEffect(() => {
    let id: number | undefined;
    const onResize = () => {
      window.clearTimeout(id);
      id = window.setTimeout(() => {
        const nodes = focusRef.current.length > 0 ? focusRef.current.map((n) => ({ id: n })) : undefined;
        void fitView({ padding: 0.12, maxZoom: 1, minZoom, nodes });
      }, 150);
    };
    window.addEventListener("resize", onResize);
    return () => {
      window.clearTimeout(id);
      window.removeEventListener("resize", onResize);
    };
  }, [fitView, minZoom]);
  return null;
}
