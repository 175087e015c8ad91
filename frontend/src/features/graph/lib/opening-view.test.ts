import { describe, expect, it } from "vitest";
import { cardsInView, openingView, type Box } from "./opening-view";

const W = 208;
const H = 96;
const GAP = 230;
/** A path of `n` cards in one lane, step k at x = (k - 1) * GAP. */
const lane = (n: number, y = 0): Map<string, Box> =>
  new Map(Array.from({ length: n }, (_, i) => [`s${i + 1}`, { x: i * GAP, y, width: W, height: H }]));
const framing = { padding: { x: 0.05, top: 0.1, bottom: 0.1 }, minZoom: 0.02, maxZoom: 1, readable: 0.92 };

/** Where a box lands on screen at `view`. */
const onScreen = (b: Box, v: { x: number; y: number; zoom: number }) => ({
  left: b.x * v.zoom + v.x,
  right: (b.x + b.width) * v.zoom + v.x,
  top: b.y * v.zoom + v.y,
  bottom: (b.y + b.height) * v.zoom + v.y,
});

describe("the view a trajectory opens at", () => {
  it("frames a short path whole, centred, at most at zoom 1", () => {
    const boxes = lane(3);
    const view = openingView((id) => boxes.get(id), ["s1", "s2", "s3"], { width: 1440, height: 400 }, framing);
    expect(view?.zoom).toBe(1);
    const first = onScreen(boxes.get("s1")!, view!);
    const last = onScreen(boxes.get("s3")!, view!);
    // centred: the same margin left and right, and top and bottom
    expect(first.left).toBeCloseTo(1440 - last.right);
    expect(first.top).toBeCloseTo(400 - first.bottom);
  });

  it("opens on the newest steps of a long path, legible, the oldest cut", () => {
    const boxes = lane(12);
    const ids = [...boxes.keys()];
    const room = { width: 1440, height: 400 };
    const view = openingView((id) => boxes.get(id), ids, room, framing)!;
    expect(view.zoom).toBeGreaterThanOrEqual(framing.readable);
    // the newest step is in the view, inside its margins; the first is out of it
    const last = onScreen(boxes.get("s12")!, view);
    expect(last.right).toBeLessThanOrEqual(room.width * 0.95 + 0.01);
    expect(last.left).toBeGreaterThanOrEqual(0);
    expect(onScreen(boxes.get("s1")!, view).right).toBeLessThan(0);
    // as many of the newest as fit across at the legible zoom: six cards (5 gaps and a
    // card, 1,358 px, take 1,249 px at 0.92 of the 1,296 px between the margins)
    const inView = ids.filter((id) => {
      const b = onScreen(boxes.get(id)!, view);
      return b.left >= 0 && b.right <= room.width;
    });
    expect(inView).toEqual(["s7", "s8", "s9", "s10", "s11", "s12"]);
  });

  it("fits a path that runs down several lanes whole in height", () => {
    const boxes = new Map([
      ["a", { x: 0, y: 0, width: W, height: H }],
      ["b", { x: GAP, y: 2000, width: W, height: H }],
    ]);
    const view = openingView((id) => boxes.get(id), ["a", "b"], { width: 1440, height: 400 }, framing)!;
    expect(view.zoom).toBeLessThan(0.2);
    expect(onScreen(boxes.get("a")!, view).top).toBeGreaterThanOrEqual(39.9);
    expect(onScreen(boxes.get("b")!, view).bottom).toBeLessThanOrEqual(360.1);
  });

  it("keeps to the zoom limits", () => {
    const boxes = lane(1);
    const near = openingView((id) => boxes.get(id), ["s1"], { width: 1440, height: 900 }, { ...framing, maxZoom: 1 })!;
    expect(near.zoom).toBe(1);
    const far = new Map([
      ["a", { x: 0, y: 0, width: W, height: H }],
      ["b", { x: 0, y: 1e7, width: W, height: H }],
    ]);
    expect(openingView((id) => far.get(id), ["a", "b"], { width: 1440, height: 400 }, framing)?.zoom).toBe(0.02);
  });

  it("leaves React Flow's origin when there is nothing to frame or no room", () => {
    const boxes = lane(2);
    expect(openingView((id) => boxes.get(id), [], { width: 1440, height: 400 }, framing)).toBeNull();
    expect(openingView(() => undefined, ["x"], { width: 1440, height: 400 }, framing)).toBeNull();
    expect(openingView((id) => boxes.get(id), ["s1"], { width: 0, height: 400 }, framing)).toBeNull();
    expect(openingView((id) => boxes.get(id), ["s1"], { width: 1440, height: -60 }, framing)).toBeNull();
  });
});

describe("the cards a first paint draws", () => {
  it("are those around the opening view, and the cards asked for, not the whole family", () => {
    const boxes = lane(500);
    const room = { width: 1440, height: 400 };
    const view = openingView((id) => boxes.get(id), ["s499", "s500"], room, framing)!;
    const ids = cardsInView(boxes, view, room, 0.5, ["s1"]);
    // the path's last steps and their neighbours within half a canvas each side
    expect(ids.has("s500")).toBe(true);
    expect(ids.has("s495")).toBe(true);
    expect(ids.has("s1")).toBe(true);
    expect(ids.has("s400")).toBe(false);
    expect(ids.size).toBeLessThan(20);
    // every card that meets the view is among them
    for (const [id, b] of boxes) {
      const s = onScreen(b, view);
      if (s.right > 0 && s.left < room.width && s.bottom > 0 && s.top < room.height) expect(ids.has(id)).toBe(true);
    }
  });

  it("reach further with a wider margin and none past it", () => {
    const boxes = lane(100);
    const room = { width: 1000, height: 400 };
    const view = { x: 0, y: 100, zoom: 1 };
    const near = cardsInView(boxes, view, room, 0);
    expect([...near].sort()).toEqual(["s1", "s2", "s3", "s4", "s5"]);
    const wide = cardsInView(boxes, view, room, 1);
    expect(wide.has("s9")).toBe(true);
    expect(wide.has("s10")).toBe(false);
  });
});
