import { describe, expect, it } from "vitest";
import { disagreements, showStatistic } from "./agreement";
import type { Coding } from "./codings";

const c = (id: number, node: string, code: number, coder: string): Coding => ({
  id,
  node_id: node,
  code_id: code,
  mine: false,
  coder,
  span: null,
  memo: "",
  created_at: "2026-12-06T20:00:00Z",
});

describe("showStatistic", () => {
  it("percentages and coefficients", () => {
    expect(showStatistic(0.5, "percent_agreement", 2)).toEqual({ text: "50 %" });
    expect(showStatistic(0.8333, "percent_agreement", 2)).toEqual({ text: "83.3 %" });
    expect(showStatistic(-0.3333, "cohen_kappa", 2)).toEqual({ text: "-0.33" });
    expect(showStatistic(1, "krippendorff_alpha", 3)).toEqual({ text: "1.00" });
  });

  it("a missing figure is a dash with the reason", () => {
    expect(showStatistic(null, "cohen_kappa", 3).why).toMatch(/exactly two coders/);
    expect(showStatistic(null, "cohen_kappa", 2).why).toMatch(/one category only/);
    expect(showStatistic(null, "krippendorff_alpha", 2)).toMatchObject({ text: "—" });
    expect(showStatistic(undefined, "percent_agreement", 2).why).toMatch(/No step/);
  });
});

describe("disagreements", () => {
  const codings = [
    c(1, "n:1", 10, "ada"),
    c(2, "n:1", 10, "bo"),
    c(3, "n:1", 11, "ada"),
    c(4, "n:2", 10, "bo"),
    c(5, "n:3", 12, "bo"),
    c(6, "n:3", 10, "ada"),
    c(7, "n:3", 13, "cy"),
  ];

  it("lists the (step, code) where the coders differ, on steps both coded", () => {
    expect(disagreements(codings, ["ada", "bo"])).toEqual([
      { nodeId: "n:1", codeId: 11, applied: ["ada"], notApplied: ["bo"] },
      { nodeId: "n:3", codeId: 10, applied: ["ada"], notApplied: ["bo"] },
      { nodeId: "n:3", codeId: 12, applied: ["bo"], notApplied: ["ada"] },
    ]);
  });

  it("only the listed coders count; fewer than two: nothing", () => {
    expect(disagreements(codings, ["ada", "bo", "cy"])).toHaveLength(3);
    expect(disagreements(codings, ["ada"])).toEqual([]);
  });
});
