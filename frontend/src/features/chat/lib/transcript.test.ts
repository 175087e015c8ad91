import { describe, expect, it } from "vitest";
import { describeTool, groupTurns, type Message } from "./transcript";

const m = (role: string, content: string, turn: number, extra: Record<string, unknown> = {}): Message => ({
  role,
  content,
  turn_index: turn,
  ...extra,
});

describe("transcript", () => {
  it("groups messages into turns with tools, replies and end states", () => {
    const turns = groupTurns([
      m("user", "objective: X", 1),
      m("assistant", "", 1, { tool_calls: [{ id: "1", name: "set_objective", args: { text: "X" } }] }),
      m("tool", "ok", 1, { name: "set_objective", tool_call_id: "1" }),
      m("assistant", "Done.", 1),
      m("assistant", "More.", 1),
      m("user", "wait: 5", 2),
      m("assistant", "partial", 2, { state: "cancelled" }),
      m("user", "bad", 3),
      m("assistant", "", 3, { tool_calls: [{ id: "2", name: "lock_preference", args: { position: 9 } }, "junk"] }),
      m("tool", "Error: no such preference", 3, { name: "lock_preference", status: "error" }),
    ]);
    expect(turns.map((t) => [t.turn, t.question, t.reply, t.state])).toEqual([
      [1, "objective: X", "Done.\n\nMore.", "complete"],
      [2, "wait: 5", "partial", "cancelled"],
      [3, "bad", "", "complete"],
    ]);
    expect(turns[0]?.tools).toEqual([{ name: "set_objective", args: { text: "X" }, failed: false }]);
    expect(turns[2]?.tools.map((t) => [t.name, t.failed])).toEqual([
      ["lock_preference", true],
      ["tool", false],
    ]);
  });

  it("takes node states from the graph when given", () => {
    const turns = groupTurns([m("user", "a", 1), m("user", "b", 2)], new Map([[2, "error" as const]]));
    expect(turns.map((t) => t.state)).toEqual(["complete", "error"]);
  });

  it("starts a turn for an assistant message without a user message", () => {
    expect(groupTurns([m("assistant", "hello", 0)])).toEqual([
      { turn: 0, question: "", reply: "hello", tools: [], state: "complete" },
    ]);
  });

  it("describes tool calls briefly", () => {
    expect(describeTool({ name: "set_objective", args: { text: "X" }, failed: false })).toBe("set objective: X");
    expect(describeTool({ name: "noop", args: {}, failed: false })).toBe("noop");
    expect(describeTool({ name: "write", args: { text: "y".repeat(80) }, failed: false })).toHaveLength(65);
  });
});
