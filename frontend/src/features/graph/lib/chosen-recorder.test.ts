import { describe, expect, it } from "vitest";
import { ChosenRecorder, moveRecorded, type MoveRecording } from "./chosen-recorder";

const F = "th_root";

describe("ChosenRecorder", () => {
  it("sends each new end once, and an end the server already holds not at all", () => {
    const r = new ChosenRecorder();
    expect(r.shown(F, "R:4", "R:4")).toBeNull();
    expect(r.shown(F, "A:4", "R:4")).toBe("A:4");
    expect(r.shown(F, "A:4", "R:4")).toBeNull(); // the answer is not back yet
    expect(r.shown(F, "A:4", "A:4")).toBeNull();
    expect(r.shown(F, "R:4", "A:4")).toBe("R:4");
  });

  it("compares with what it sent, not with an older answer", () => {
    const r = new ChosenRecorder();
    expect(r.shown(F, "A:4", "R:4")).toBe("A:4");
    expect(r.shown(F, "C:4", "R:4")).toBe("C:4");
    // back to A before either answer: A is sent again, or C's request would land last
    expect(r.shown(F, "A:4", "R:4")).toBe("A:4");
  });

  it("sends nothing that the page shows while its own move is on the way", () => {
    let t = 0;
    const r = new ChosenRecorder(10_000, () => t);
    expect(r.shown(F, "R:4", "R:4")).toBeNull();
    r.moveTo(F, "C:4");
    // the path being left, then a cached answer from before: neither is a choice
    expect(r.shown(F, "R:4", "C:4")).toBeNull();
    t += 50;
    expect(r.shown(F, "A:4", "C:4")).toBeNull();
    // the move shows: nothing more to send
    expect(r.shown(F, "C:4", "C:4")).toBeNull();
    // after it, a real change is sent again
    expect(r.shown(F, "R:4", "C:4")).toBe("R:4");
  });

  it("stops holding ends back when a move never shows", () => {
    let t = 0;
    const r = new ChosenRecorder(1_000, () => t);
    r.moveTo(F, "C:4");
    expect(r.shown(F, "R:4", "C:4")).toBeNull();
    t = 1_500;
    expect(r.shown(F, "R:4", "C:4")).toBe("R:4");
  });

  it("sends the end on screen again when the move is not made", () => {
    const r = new ChosenRecorder();
    r.moveTo(F, "C:4");
    expect(r.moveFailed(F, "R:4")).toBe("R:4");
    expect(r.shown(F, "R:4", "C:4")).toBeNull();
    expect(r.moveFailed(null, null)).toBeNull();
  });

  it("falls back to the server's answer in another family", () => {
    const r = new ChosenRecorder();
    expect(r.shown(F, "A:4", null)).toBe("A:4");
    expect(r.shown("th_other", "X:2", "X:2")).toBeNull();
    expect(r.shown("th_other", "Y:3", "X:2")).toBe("Y:3");
  });
});

/** The page's side of a move, counting the requests it sends: the chosen path's PUTs
 * (`ok`: whether the server takes them) and the move (a checkout, `moves`: whether it
 * goes through). The path on screen ends at `end`. */
function page(end: string, { ok, moves }: { ok: boolean; moves: boolean }) {
  const requests: string[] = [];
  const io: MoveRecording = {
    record: async (node) => {
      requests.push(`PUT ${node}`);
      if (!ok) throw new Error("The server could not be reached.");
    },
    recordLater: (node) => void requests.push(`PUT ${node}`),
    onScreen: () => ({ family: F, end }),
    move: async () => {
      requests.push("checkout");
      return moves;
    },
  };
  return { io, requests };
}

describe("moveRecorded", () => {
  it("records the move, then makes it", async () => {
    const r = new ChosenRecorder();
    const { io, requests } = page("R:4", { ok: true, moves: true });
    expect(await moveRecorded(r, F, "C:4", io)).toBe(true);
    expect(requests).toEqual(["PUT C:4", "checkout"]);
    // the move shows: recorded already
    expect(r.shown(F, "C:4", "C:4")).toBeNull();
  });

  it("records the end on screen again when the move is not made", async () => {
    const r = new ChosenRecorder();
    const { io, requests } = page("R:4", { ok: true, moves: false });
    expect(await moveRecorded(r, F, "C:4", io)).toBe(false);
    expect(requests).toEqual(["PUT C:4", "checkout", "PUT R:4"]);
  });

  it("sends nothing more than the failed record and the move when the record fails", async () => {
    const r = new ChosenRecorder();
    const { io, requests } = page("R:4", { ok: false, moves: true });
    expect(await moveRecorded(r, F, "C:4", io)).toBe(true);
    // the server still holds the end on screen: nothing to send it again
    expect(requests).toEqual(["PUT C:4", "checkout"]);
    // once the move shows, its end is recorded (the record that failed), and only then
    expect(r.shown(F, "R:4", "R:4")).toBeNull();
    expect(r.shown(F, "C:4", "R:4")).toBe("C:4");
  });

  it("sends nothing more when both the record and the move fail", async () => {
    const r = new ChosenRecorder();
    const { io, requests } = page("R:4", { ok: false, moves: false });
    expect(await moveRecorded(r, F, "C:4", io)).toBe(false);
    expect(requests).toEqual(["PUT C:4", "checkout"]);
    expect(r.shown(F, "R:4", "R:4")).toBeNull();
  });
});
