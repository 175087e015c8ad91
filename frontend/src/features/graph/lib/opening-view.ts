/**
 * The view a trajectory opens at, worked out from the layout before anything is drawn.
 *
 * React Flow opens at the layout's origin, draws the cards there, and only a fit a
 * moment later (view-effects' FitOnChange) moves it to the displayed path: on a big
 * family the first cards drawn were the wrong ones, drawn for nothing. Opened at this
 * view instead, the first cards drawn are the path's, and the fit that follows, made on
 * their measured sizes, moves the view by a few pixels at most. The framing is
 * FitOnChange's: the focus (the path's last steps), less its oldest steps while the
 * rest would not fit across at a legible zoom, fitted with the same margins.
 */

/** A card's box in flow coordinates. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The canvas's size on screen, in px. */
export interface Room {
  width: number;
  height: number;
}

export interface Framing {
  /** the margins, as fractions of the canvas's width (x, each side) and height */
  padding: { x: number; top: number; bottom: number };
  minZoom: number;
  maxZoom: number;
  /** the zoom at which a card is legible: the focus is cut to what fits across at it */
  readable: number;
}

export interface View {
  x: number;
  y: number;
  zoom: number;
}

function bounds(boxes: readonly Box[]): Box {
  let left = Infinity;
  let top = Infinity;
  let right = -Infinity;
  let bottom = -Infinity;
  for (const b of boxes) {
    left = Math.min(left, b.x);
    top = Math.min(top, b.y);
    right = Math.max(right, b.x + b.width);
    bottom = Math.max(bottom, b.y + b.height);
  }
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** The view that frames the cards `focus` names (oldest first) in `room`; null when
 * none of them is known or the canvas has no size (React Flow's own origin then). */
export function openingView(
  boxOf: (id: string) => Box | undefined,
  focus: readonly string[],
  room: Room,
  { padding, minZoom, maxZoom, readable }: Framing,
): View | null {
  let boxes = focus.map(boxOf).filter((b): b is Box => b !== undefined);
  const across = room.width * (1 - 2 * padding.x);
  const down = room.height * (1 - padding.top - padding.bottom);
  if (boxes.length === 0 || across <= 0 || down <= 0) return null;
  while (boxes.length > 1 && bounds(boxes).width * readable > across) boxes = boxes.slice(1);
  const b = bounds(boxes);
  const fit = Math.min(across / Math.max(b.width, 1), down / Math.max(b.height, 1));
  const zoom = Math.min(maxZoom, Math.max(minZoom, fit));
  // centred in the room less its margins
  return {
    x: room.width * padding.x + (across - b.width * zoom) / 2 - b.x * zoom,
    y: room.height * padding.top + (down - b.height * zoom) / 2 - b.y * zoom,
    zoom,
  };
}

/**
 * The ids of the cards a first paint at `view` draws: those whose box meets the room,
 * widened by `margin` (a fraction of the room on each side), plus `keep` (the focus
 * and any card an effect frames at once). React Flow draws every card it holds until
 * it has measured it, the ones out of view too (it learns a card's handles from its
 * element): handed the whole family at its mount, the first frame held every card of
 * it. Handed these first, the first frame holds a few; the rest follow after it.
 */
export function cardsInView(
  boxes: Iterable<readonly [string, Box]>,
  view: View,
  room: Room,
  margin: number,
  keep: Iterable<string> = [],
): Set<string> {
  const left = (-view.x - room.width * margin) / view.zoom;
  const top = (-view.y - room.height * margin) / view.zoom;
  const right = left + (room.width * (1 + 2 * margin)) / view.zoom;
  const bottom = top + (room.height * (1 + 2 * margin)) / view.zoom;
  const ids = new Set(keep);
  for (const [id, b] of boxes) {
    if (b.x < right && b.x + b.width > left && b.y < bottom && b.y + b.height > top) ids.add(id);
  }
  return ids;
}
