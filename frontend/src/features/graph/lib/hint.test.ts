import { describe, expect, it } from "vitest";
import { graphHint } from "./hint";

const ALL = { restore: true, merge: true, whatif: true };
const NONE = { restore: false, merge: false, whatif: false };

describe("the graph's hint", () => {
  it("names every action an editor has", () => {
    expect(graphHint(true, false, ALL)).toBe(
      "double-click: restore · ⇄ compare · ⤵ or drop on the head: bring in · ⋔ 3 alternatives · ? for keys",
    );
    expect(graphHint(true, true, ALL)).toBe(
      "long-press a step for its menu · ↺ restores · ⇄ compares two · ⤵ brings in · ⋔ tries 3 answers",
    );
  });

  it("names no action a study's condition turns off", () => {
    expect(graphHint(true, false, NONE)).toBe("click: show a step · ⇄ compare · ? for keys");
    expect(graphHint(true, true, NONE)).toBe("long-press a step for its menu · ⇄ compares two");
    expect(graphHint(true, false, { ...ALL, merge: false })).toBe(
      "double-click: restore · ⇄ compare · ⋔ 3 alternatives · ? for keys",
    );
  });

  it("tells a reader what a reader can do", () => {
    expect(graphHint(false, false, ALL)).toBe("click: show a step · ⇄ compare two steps");
    expect(graphHint(false, true, ALL)).toBe("click: show a step · ⇄ compare two steps");
  });
});
