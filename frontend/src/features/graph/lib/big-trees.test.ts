import { describe, expect, it } from "vitest";
import {
  addedCards,
  cardSetSignature,
  breadcrumbs,
  childrenOf,
  choiceMap,
  descend,
  displayName,
  filterConversations,
  foldFlow,
  sameShallow,
  withStartedNode,
  siblingsOf,
  treeIndex,
} from "./big-trees";
import { activePathGuide, buildFlowGraph } from "./graph";
import { family } from "@/lib/testing/fixtures";

// R: 1..4; A branches at 2 (owns 3..5); B branches at 2 (owns 3); C branches from A at 4 (owns 5..6);
// Z starts at 0 (a root-level node); X at 2 is archived.
const specs = [
  { id: "R", turns: 4 },
  { id: "A", parent: "R", bp: 2, turns: 5 },
  { id: "B", parent: "R", bp: 2, turns: 3 },
  { id: "C", parent: "A", bp: 4, turns: 6 },
  { id: "Z", parent: "R", bp: 0, turns: 1 },
  { id: "X", parent: "R", bp: 2, turns: 3, archived: true },
];
const g = family(specs, "A");
const index = treeIndex(g);

describe("children and siblings", () => {
  it("lists the next turn first, then the branches starting there, archived ones left out", () => {
    expect(childrenOf(index, "R:2")).toEqual(["R:3", "A:3", "B:3"]);
    expect(childrenOf(index, "A:4")).toEqual(["A:5", "C:5"]);
    expect(childrenOf(index, null)).toEqual(["R:1", "Z:1"]);
    expect(childrenOf(index, "R:4")).toEqual([]);
  });

  it("gives a step at a fork its position among its siblings, and none elsewhere", () => {
    expect(siblingsOf(index, "A:3")).toEqual({ ids: ["R:3", "A:3", "B:3"], index: 1 });
    expect(siblingsOf(index, "R:2")).toBeNull();
    // an archived step on screen still finds itself among its siblings
    expect(siblingsOf(index, "X:3")).toEqual({ ids: ["R:3", "A:3", "B:3", "X:3"], index: 3 });
  });

  it("walks down the remembered child at each fork, else the first one", () => {
    expect(descend(index, "A:3", new Map())).toBe("A:5");
    expect(descend(index, "A:3", choiceMap([{ fork_node_id: "A:4", child_node_id: "C:5" }]))).toBe("C:6");
    // a choice that is no child of that fork (stale) is ignored
    expect(descend(index, "A:3", new Map([["A:4", "B:3"]]))).toBe("A:5");
  });
});

describe("breadcrumbs", () => {
  it("keep the first step, every branch point and the last steps, marking gaps", () => {
    const long = family(
      [
        { id: "R", turns: 12 },
        { id: "S", parent: "R", bp: 4, turns: 5 },
      ],
      "R",
    );
    const guide = activePathGuide(long, buildFlowGraph(long), "R");
    const crumbs = breadcrumbs(guide, 2);
    expect(crumbs.map((c) => c.label)).toEqual(["1", "4", "11", "12"]);
    expect(crumbs.map((c) => c.gap)).toEqual([false, true, true, false]);
    expect(crumbs[1]?.fork).toBe(1);
  });

  it("show every step of a short path, and never leave out one step alone", () => {
    const five = family([{ id: "R", turns: 5 }], "R");
    const all = breadcrumbs(activePathGuide(five, buildFlowGraph(five), "R"));
    expect(all.map((c) => c.label)).toEqual(["1", "2", "3", "4", "5"]);
    expect(all.some((c) => c.gap)).toBe(false);
    const ten = family([{ id: "R", turns: 10 }], "R");
    // a long plain stretch (2–6) is still left out
    const crumbs = breadcrumbs(activePathGuide(ten, buildFlowGraph(ten), "R"), 4, 3);
    expect(crumbs.map((c) => c.label)).toEqual(["1", "7", "8", "9", "10"]);
    // 1 … 3–9 would leave out step 2 alone: it is shown
    const nine = family([{ id: "R", turns: 9 }], "R");
    expect(breadcrumbs(activePathGuide(nine, buildFlowGraph(nine), "R"), 7, 3).map((c) => c.label)).toEqual([
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
      "9",
    ]);
  });
});

describe("the conversations menu", () => {
  const list = [
    { title: "Big study plan", name: null, summary: "objective “poems”, +2 todos" },
    { title: "Big study plan", name: "needle-branch", summary: null },
    { title: "Other", name: null, summary: null },
  ];
  it("shows a branch by its name, else its summary, else its title", () => {
    expect(list.map(displayName)).toEqual(["objective “poems”, +2 todos", "needle-branch", "Other"]);
  });
  it("filters on every word of the box, in title, name or summary", () => {
    expect(filterConversations(list, "needle")).toEqual([list[1]]);
    expect(filterConversations(list, "big poems")).toEqual([list[0]]);
    expect(filterConversations(list, "  ")).toEqual(list);
  });
});

describe("folding", () => {
  const flow = buildFlowGraph(g);
  it("collapses an archived branch to its first card by default, and unfolds on request", () => {
    const folded = foldFlow(g, flow, new Map());
    const ids = new Set(folded.cards.map((c) => c.id));
    expect(ids.has("X:3")).toBe(true);
    expect(folded.cards.find((c) => c.id === "X:3")?.fold).toEqual({ folded: true, hidden: 0 });
    expect(flow.cards.find((c) => c.id === "X:3")).toMatchObject({ archived: true });
    // C is an ordinary branch with steps to hide: foldable, not folded; B has nothing to hide
    expect(folded.cards.find((c) => c.id === "C:5")?.fold).toEqual({ folded: false, hidden: 0 });
    expect(folded.cards.find((c) => c.id === "B:3")?.fold).toBeNull();
  });

  it("hides a folded branch's later steps and its sub-branches, never the displayed path", () => {
    const shown = family(specs, "R");
    const f = buildFlowGraph(shown);
    const folded = foldFlow(shown, f, new Map([["A", true]]));
    const ids = new Set(folded.cards.map((c) => c.id));
    expect(ids.has("A:3")).toBe(true);
    expect(["A:4", "A:5", "C:5", "C:6"].some((id) => ids.has(id))).toBe(false);
    expect(folded.cards.find((c) => c.id === "A:3")?.fold).toEqual({ folded: true, hidden: 4 });
    expect(folded.links.every((l) => ids.has(l.source) && ids.has(l.target))).toBe(true);
    // on the displayed path (A requested), A is not folded whatever the toggle says
    const onPath = foldFlow(g, flow, new Map([["A", true]]));
    expect(onPath.cards.some((c) => c.id === "A:5")).toBe(true);
  });

  it("keeps each card's object while its card and fold state are unchanged", () => {
    const first = foldFlow(g, flow, new Map());
    const again = foldFlow(g, flow, new Map());
    again.cards.forEach((card, i) => expect(card).toBe(first.cards[i]));
    expect(again.links).toBe(flow.links);
    const unfolded = foldFlow(g, flow, new Map([["X", false]]));
    const byId = new Map(first.cards.map((c) => [c.id, c] as const));
    for (const card of unfolded.cards) {
      if (card.id === "X:3") expect(card).not.toBe(byId.get(card.id));
      else if (card.threadId !== "X") expect(card).toBe(byId.get(card.id));
    }
  });
});

describe("sameShallow", () => {
  it("compares values key by key, one nested level deep", () => {
    const f = () => {};
    expect(sameShallow({ a: 1, card: { x: 1, y: "b" }, f }, { a: 1, card: { x: 1, y: "b" }, f })).toBe(true);
    expect(sameShallow({ a: 1, card: { x: 1 } }, { a: 1, card: { x: 2 } })).toBe(false);
    expect(sameShallow({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameShallow({ deep: { in: { x: 1 } } }, { deep: { in: { x: 1 } } })).toBe(false);
    expect(sameShallow({ m: new Map() }, { m: new Map() })).toBe(false);
  });
});

describe("a node that has just started", () => {
  it("is drawn at once, running, joined to its parent", () => {
    const next = withStartedNode(g, "A:6", "A:5", "next question");
    const node = next.nodes.find((n) => n.id === "A:6");
    expect(node).toMatchObject({ state: "running", is_on_active_path: true, user_message: "next question" });
    expect(next.edges.find((e) => e.target === "A:6")).toMatchObject({ source: "A:5", kind: "turn" });
    expect(next.threads.find((t) => t.thread_id === "A")?.turn_index).toBe(6);
    const branch = withStartedNode(g, "N:3", "R:2", "q");
    expect(branch).toBe(g); // thread N is not in this graph (yet)
  });

  it("leaves the graph alone when the node is there or its parent is not", () => {
    expect(withStartedNode(g, "A:5", "A:4", "q")).toBe(g);
    expect(withStartedNode(g, "A:9", "A:8", "q")).toBe(g);
    const first = withStartedNode(g, "R:5", null, "q");
    expect(first.edges).toBe(g.edges);
  });
});

describe("addedCards", () => {
  it("names the cards a change only added, else null", () => {
    expect(addedCards("", "f|a,b")).toBeNull();
    expect(addedCards("f|a,b", "f|a,b")).toBeNull();
    expect(addedCards("f|a,b", "f|a,b,c")).toEqual(["c"]);
    expect(addedCards("f|a,b", "f|a,c,b,d")).toEqual(["c", "d"]);
    expect(addedCards("f|a,b", "g|a,b,c")).toBeNull(); // framed again: a new frame
    expect(addedCards("f|a", "f|a,b,c,d,e")).toBeNull(); // too many: a new family or unfold
    expect(addedCards("f|a,b,c,d,e", "f|a")).toBeNull(); // too many went: a fold, another path
  });

  it("names the cards added when a capped graph fetched again drops its oldest", () => {
    expect(addedCards("f|a,b,c", "f|b,c,d")).toEqual(["d"]);
    expect(addedCards("f|a,b,c", "f|b,c")).toEqual([]);
  });

  it("adds nothing when the same cards come in another order (nothing to frame)", () => {
    expect(addedCards("f|a,b,c", "f|c,a,b")).toEqual([]);
    expect(addedCards(cardSetSignature("f", ["a", "b"]), cardSetSignature("f", ["b", "c", "a"]))).toEqual(["c"]);
  });
});

describe("cardSetSignature", () => {
  it("is the same for the same cards in any order, and differs with the frame or the set", () => {
    expect(cardSetSignature("", ["R:2", "A:4", "R:1"])).toBe(cardSetSignature("", ["R:1", "R:2", "A:4"]));
    expect(cardSetSignature("comparing", ["R:1"])).not.toBe(cardSetSignature("", ["R:1"]));
    expect(cardSetSignature("", ["R:1", "R:2"])).not.toBe(cardSetSignature("", ["R:1"]));
  });
});
