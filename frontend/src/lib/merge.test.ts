import { describe, expect, it } from "vitest";
import {
  bringing,
  hunkDiff,
  kindName,
  resolutionsFor,
  unresolved,
  valueText,
  type MergeChange,
  type MergePlan,
} from "./merge";

function change(over: Partial<MergeChange>): MergeChange {
  return {
    id: "objective",
    surface: "objective",
    uid: null,
    kind: "change",
    base: "a",
    ours: "b",
    theirs: "c",
    conflict: false,
    fields: [],
    ...over,
  };
}

const plan: MergePlan = {
  mode: "merge",
  source: "th_x:3",
  base: "th_r:1",
  target: "th_r:2",
  changes: [
    change({ id: "objective", conflict: true }),
    change({ id: "todo:u1", surface: "todo", uid: "u1", kind: "add", base: null, ours: null }),
    change({ id: "document:1", surface: "document", base: "x\n", ours: "x\n", theirs: "y\n" }),
  ],
};

describe("merge", () => {
  it("says what each side holds", () => {
    const todo = change({
      surface: "todo",
      base: null,
      ours: { text: "write", done: false, depth: 0, position: 0 },
      theirs: { text: "write it", done: true, depth: 1, position: 2 },
      fields: ["text", "position"],
    });
    expect(valueText(todo, "base")).toBe("—");
    expect(valueText(todo, "ours")).toBe("write (#1)");
    expect(valueText(todo, "theirs")).toBe("write it (done, depth 1, #3)");
    expect(valueText(change({ theirs: "" }), "theirs")).toBe("(empty)");
    expect(valueText(change({ surface: "artifact", theirs: { title: "Notes", kind: "text" } }), "theirs")).toBe(
      "Notes",
    );
    expect(valueText(change({ surface: "preference", ours: { text: "p", locked: true } }), "ours")).toBe("p (locked)");
    expect(kindName(change({ kind: "remove" }))).toBe("removed");
  });

  it("shows a document hunk as a diff with shared context", () => {
    const diff = hunkDiff(change({ surface: "document", ours: "a\nb\nz\n", theirs: "a\nc\nd\nz\n" }));
    expect(diff).toEqual([
      { sign: " ", text: "a" },
      { sign: "-", text: "b" },
      { sign: "+", text: "c" },
      { sign: "+", text: "d" },
      { sign: " ", text: "z" },
    ]);
    expect(hunkDiff(change({ surface: "document", ours: "", theirs: "new\n" }))).toEqual([{ sign: "+", text: "new" }]);
  });

  it("counts what an apply brings and which conflicts are open", () => {
    expect(unresolved(plan, {})).toEqual(["objective"]);
    expect(unresolved(plan, { objective: "ours" })).toEqual([]);
    expect(unresolved(null, {})).toEqual([]);
    expect(bringing(plan, {})).toBe(2);
    expect(bringing(plan, { objective: "theirs", "todo:u1": "ours" })).toBe(2);
    expect(bringing(null, {})).toBe(0);
    expect(resolutionsFor(plan, { objective: "theirs", gone: "ours" })).toEqual({ objective: "theirs" });
  });
});
