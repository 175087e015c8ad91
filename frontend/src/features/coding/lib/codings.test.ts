import { describe, expect, it } from "vitest";
import {
  byNode,
  chipsByNode,
  codeIndex,
  codersOf,
  filterCodes,
  inkOn,
  liveCodes,
  moveIndex,
  nextColour,
  ofField,
  type Codebook,
  type Coding,
} from "./codings";

const BOOKS: Codebook[] = [
  {
    id: 1,
    name: "Trust",
    owner: "ada",
    codes: [
      { id: 10, name: "hedging", description: "the agent hedges", color: "#2563eb", parent_id: null, retired: false },
      { id: 11, name: "overclaiming", description: "", color: null, parent_id: null, retired: false },
      { id: 12, name: "old code", description: "", color: null, parent_id: null, retired: true },
    ],
  },
  {
    id: 2,
    name: "Repair",
    owner: "ada",
    codes: [
      { id: 20, name: "clarification", description: "asks to hedge less", color: null, parent_id: 10, retired: false },
    ],
  },
];

function coding(id: number, node: string, code: number, coder: string, field?: "user_message" | "reply"): Coding {
  return {
    id,
    node_id: node,
    code_id: code,
    mine: false,
    coder,
    span: field ? { field, start: 0, end: 2 } : null,
    memo: "",
    created_at: "2026-12-06T20:00:00Z",
  };
}

describe("codes", () => {
  it("indexes every code with its book, retired ones too; offers the live ones", () => {
    const index = codeIndex(BOOKS);
    expect(index.get(12)?.retired).toBe(true);
    expect(index.get(20)?.book).toBe("Repair");
    expect(liveCodes(BOOKS).map((c) => c.id)).toEqual([10, 11, 20]);
  });

  it("filters as typed: names that start with it first, then names, books and descriptions", () => {
    const live = liveCodes(BOOKS);
    expect(filterCodes(live, "").map((c) => c.id)).toEqual([10, 11, 20]);
    expect(filterCodes(live, "  HEDG").map((c) => c.id)).toEqual([10, 20]);
    expect(filterCodes(live, "claim").map((c) => c.id)).toEqual([11]);
    expect(filterCodes(live, "repair").map((c) => c.id)).toEqual([20]);
    expect(filterCodes(live, "zzz")).toEqual([]);
  });

  it("arrow keys wrap round the list", () => {
    expect(moveIndex(0, 1, 3)).toBe(1);
    expect(moveIndex(2, 1, 3)).toBe(0);
    expect(moveIndex(0, -1, 3)).toBe(2);
    expect(moveIndex(-1, 1, 3)).toBe(0);
    expect(moveIndex(-1, -1, 3)).toBe(2);
    expect(moveIndex(0, 1, 0)).toBe(-1);
  });
});

describe("codings", () => {
  const all = [
    coding(1, "th_a:1", 10, "ada", "user_message"),
    coding(2, "th_a:1", 11, "bo", "reply"),
    coding(3, "th_a:2", 10, "bo"),
    coding(4, "th_a:1", 10, "bo"),
  ];

  it("groups by node and by field", () => {
    const nodes = byNode(all);
    expect([...nodes.keys()]).toEqual(["th_a:1", "th_a:2"]);
    const first = nodes.get("th_a:1")!;
    expect(ofField(first, "user_message").map((c) => c.id)).toEqual([1]);
    expect(ofField(first, "reply").map((c) => c.id)).toEqual([2]);
    expect(ofField(first, null).map((c) => c.id)).toEqual([4]);
  });

  it("a card's chips: each code once, named, an unknown code by its id", () => {
    const chips = chipsByNode([...all, coding(5, "th_a:2", 99, "ada")], codeIndex(BOOKS));
    expect(chips.get("th_a:1")).toEqual(["hedging", "overclaiming"]);
    expect(chips.get("th_a:2")).toEqual(["hedging", "code 99"]);
  });

  it("the coders of a family's codings (an imported one's recorded coder)", () => {
    expect(codersOf(all)).toEqual(["ada", "bo"]);
    expect(codersOf([...all, { ...all[0]!, imported_author: "cy" }])).toEqual(["ada", "bo", "cy"]);
  });

  it("ink on a colour and new colours", () => {
    expect(inkOn("#ffff00")).toBe("#000");
    expect(inkOn("#1e3a8a")).toBe("#fff");
    expect(inkOn("nonsense")).toBe("#000");
    expect(nextColour(0)).toBe("#2563eb");
    expect(nextColour(9)).toBe("#059669");
  });
});
