import { describe, expect, it } from "vitest";
import type { Conversation } from "./api/client";
import { activePathGuide, buildFlowGraph } from "@/features/graph/lib/graph";
import {
  cardDetails,
  chatTurns,
  createdAtOf,
  familyGraph,
  listedConversation,
  mergeSteps,
  restoredAt,
  stepQuestions,
} from "./studio-view";
import { family } from "./testing/fixtures";
import type { Message } from "@/features/chat/lib/transcript";

function conversation(thread: string, more: Partial<Conversation> = {}): Conversation {
  return {
    thread_id: thread,
    root_thread_id: "R",
    title: `title ${thread}`,
    name: null,
    objective: null,
    turn_index: 0,
    message_count: 0,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    parent_thread_id: null,
    branch_point_turn: null,
    reason: null,
    forked_from: null,
    summary: null,
    archived: false,
    profile_id: "default",
    reveal_codings: false,
    ...more,
  };
}

function message(turn: number, role: Message["role"], content: string, more: Partial<Message> = {}): Message {
  return { turn_index: turn, role, content, ...more } as Message;
}

describe("familyGraph", () => {
  it("gives a forked root its fork point from the conversation list", () => {
    const g = family([{ id: "R", turns: 3 }], "R");
    const forked = familyGraph(g, [conversation("R", { forked_from: { thread_id: "X", turn_index: 2 } })]);
    expect(forked.threads[0]?.forked_from_turn).toBe(2);
    expect(buildFlowGraph(forked).cards.map((c) => c.id)).toEqual(["R:1", "R:2", "R:3"]);
    expect(activePathGuide(forked, buildFlowGraph(forked), "R").has(2)).toBe(false);
  });

  it("returns the same graph when no thread of it is a fork", () => {
    const g = family(
      [
        { id: "R", turns: 1 },
        { id: "B", parent: "R", bp: 1, turns: 2 },
      ],
      "R",
    );
    expect(familyGraph(g, undefined)).toBe(g);
    // a branch that says it is in a forked family is still owned from its branch point
    const branch = conversation("B", { parent_thread_id: "R", forked_from: { thread_id: "X", turn_index: 1 } });
    expect(familyGraph(g, [conversation("R"), branch])).toBe(g);
  });
});

describe("the page's views", () => {
  const g = family(
    [
      { id: "R", turns: 3 },
      { id: "D", parent: "R", bp: 2, turns: 2 },
    ],
    "R",
  );
  g.nodes[1]!.state = "error";
  const flow = buildFlowGraph(g);
  const guide = activePathGuide(g, flow, "R");

  it("groups the transcript into turns ended as their nodes say, and details each card", () => {
    const messages = [
      message(1, "user", "q1"),
      message(1, "assistant", "a1", { tool_calls: [{ name: "set_objective", args: { text: "x" } }] }),
      message(2, "user", "q2"),
    ];
    const turns = chatTurns(messages, guide, g);
    expect(turns.map((t) => [t.turn, t.state, t.reply])).toEqual([
      [1, "complete", "a1"],
      [2, "error", ""],
    ]);
    expect(cardDetails(turns, guide)).toEqual(
      new Map([
        ["R:1", { reply: "a1", steps: 1 }],
        ["R:2", { reply: null, steps: 0 }],
      ]),
    );
    expect(chatTurns(undefined, guide, undefined)).toEqual([]);
  });

  it("maps each step to its question", () => {
    expect(stepQuestions(g).get("R:2")).toBe("q R:2");
    expect(stepQuestions(undefined).size).toBe(0);
  });

  it("says which step a restored draft stands at", () => {
    expect(restoredAt(g, flow, "D", "R:2")).toBe("2");
    expect(restoredAt(g, null, "D", "R:2")).toBe("2");
    expect(restoredAt(g, flow, "R", "R:3")).toBeNull();
    expect(restoredAt(g, flow, "D", null)).toBeNull();
    expect(restoredAt(undefined, null, "D", "R:2")).toBeNull();
  });

  it("finds the listed conversation on screen: a draft's nearest listed ancestor, else the anchor's", () => {
    const listed = [conversation("R"), conversation("Q")];
    expect(listedConversation(listed, g, "R", "R")?.thread_id).toBe("R");
    expect(listedConversation(listed, g, "D", "R")?.thread_id).toBe("R");
    expect(listedConversation(listed, undefined, "D", "Q")?.thread_id).toBe("Q");
    expect(listedConversation(listed, g, null, null)).toBeUndefined();
    expect(listedConversation(undefined, g, "D", "R")).toBeUndefined();
  });

  it("reads creation times for the labels' order", () => {
    expect(createdAtOf([conversation("R")]).get("R")).toBe(Date.UTC(2026, 0, 1));
    expect(createdAtOf(undefined).size).toBe(0);
  });
});

describe("merge steps", () => {
  it("lists the displayed path's merge nodes with what they brought, oldest first", () => {
    const g = family([{ id: "R", turns: 4 }], "R");
    const graph = {
      ...g,
      nodes: g.nodes.map((n) =>
        n.id === "R:2" || n.id === "R:4" ? { ...n, kind: "merge" as const, user_message: `Brought in ${n.id}` } : n,
      ),
    };
    const guide = activePathGuide(graph, buildFlowGraph(graph), "R");
    expect(mergeSteps(graph, guide)).toEqual([
      { turn: 2, nodeId: "R:2", label: "2", text: "Brought in R:2" },
      { turn: 4, nodeId: "R:4", label: "4", text: "Brought in R:4" },
    ]);
    expect(mergeSteps(undefined, guide)).toEqual([]);
  });
});
