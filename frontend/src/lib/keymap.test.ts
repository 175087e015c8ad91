import { describe, expect, it } from "vitest";
import { buildFlowGraph } from "@/features/graph/lib/graph";
import { actionOf, initialSelection, isTyping, KEYMAP, keyName, neighbour } from "./keymap";
import { family } from "./testing/fixtures";

// R: 1 2 3 4; A forks after 2 (2.1 → labels 3.1, 4.1); B forks after 3 (4.2)
const graph = family(
  [
    { id: "R", turns: 4 },
    { id: "A", parent: "R", bp: 2, turns: 4 },
    { id: "B", parent: "R", bp: 3, turns: 4 },
  ],
  "A",
);
const flow = buildFlowGraph(graph, { displayedThreadId: "A" });

describe("the keymap", () => {
  it("has one binding per key and scope, and the keys the issue names", () => {
    const seen = new Set<string>();
    for (const b of KEYMAP)
      for (const k of b.keys) {
        const id = `${b.scope}:${k}`;
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
    for (const k of [
      "page:?",
      "page:c",
      "page:/",
      "page:Escape",
      "graph:Enter",
      "graph:r",
      "graph:b",
      "graph:ArrowLeft",
    ])
      expect(seen.has(k)).toBe(true);
  });

  it("maps presses to actions; modified keys and pending bindings do nothing", () => {
    expect(actionOf({ key: "c" }, "page")).toBe("composer");
    expect(actionOf({ key: "k" }, "page")).toBe("code");
    expect(actionOf({ key: "/" }, "page")).toBe("search");
    expect(actionOf({ key: "?" }, "page")).toBe("help");
    expect(actionOf({ key: "c", ctrlKey: true }, "page")).toBeNull();
    expect(actionOf({ key: "r" }, "page")).toBeNull();
    expect(actionOf({ key: "r" }, "graph")).toBe("restore");
    expect(actionOf({ key: " " }, "graph")).toBe("open");
    expect(actionOf({ key: "b" }, "graph")).toBe("bring");
    expect(actionOf({ key: "b" }, "page")).toBeNull();
  });

  it("names keys for the list", () => {
    expect(keyName("ArrowLeft")).toBe("←");
    expect(keyName(" ")).toBe("Space");
    expect(keyName("r")).toBe("r");
  });

  it("knows a text field from a control", () => {
    const el = (tagName: string, type = "", isContentEditable = false) =>
      ({ tagName, type, isContentEditable }) as unknown as Element;
    expect(isTyping(el("TEXTAREA"))).toBe(true);
    expect(isTyping(el("INPUT", "search"))).toBe(true);
    expect(isTyping(el("INPUT", "checkbox"))).toBe(false);
    expect(isTyping(el("BUTTON"))).toBe(false);
    expect(isTyping(el("DIV", "", true))).toBe(true);
    expect(isTyping(el("SELECT"))).toBe(true);
    expect(isTyping(null)).toBe(false);
  });
});

describe("moving the selection", () => {
  it("goes along the path shown: left to the parent, right to the child on the path", () => {
    expect(neighbour(flow, "R:2", "child")).toBe("A:3");
    expect(neighbour(flow, "A:3", "parent")).toBe("R:2");
    expect(neighbour(flow, "R:1", "parent")).toBeNull();
    expect(neighbour(flow, "A:4", "child")).toBeNull();
    // off the path shown: the first child by lane
    expect(neighbour(flow, "R:3", "child")).not.toBeNull();
  });

  it("goes across paths: up and down to the same step number on the next lane", () => {
    const lane = (id: string) => flow.cards.find((c) => c.id === id)?.lane ?? -1;
    const down = neighbour(flow, "R:3", "down");
    expect(down).not.toBeNull();
    expect(down?.endsWith(":3")).toBe(true);
    expect(lane(down ?? "")).toBeGreaterThan(lane("R:3"));
    expect(neighbour(flow, down ?? "", "up")).toBe("R:3");
    expect(neighbour(flow, "R:1", "up")).toBeNull();
    expect(neighbour(flow, "nope", "child")).toBeNull();
    expect(neighbour(flow, "R:1", "open")).toBeNull();
  });

  it("starts on the head, else the newest step of the path shown", () => {
    expect(initialSelection(flow)).toBe(graph.head_turn_id);
    const headless = buildFlowGraph(graph, { headTurnId: null, displayedThreadId: "A" });
    expect(initialSelection(headless)).toBe("A:4");
    expect(initialSelection(null)).toBeNull();
  });
});
