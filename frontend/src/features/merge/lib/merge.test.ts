import { describe, expect, it } from "vitest";
import {
  bringing,
  choosableFields,
  fieldKey,
  fieldText,
  hunkDiff,
  hunkLines,
  isLinePick,
  kindName,
  pickAll,
  pickableLines,
  toggleLine,
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
    conflict_fields: [],
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
    // a document conflict kept on both sides is settled and brought
    const doc = { ...plan, changes: [change({ id: "document:1", surface: "document", conflict: true })] };
    expect(unresolved(doc, { "document:1": "both" })).toEqual([]);
    expect(bringing(doc, { "document:1": "both" })).toBe(1);
    expect(bringing(doc, {})).toBe(0);
    expect(resolutionsFor(plan, { objective: "theirs", gone: "ours" })).toEqual({ objective: "theirs" });
  });

  it("settles an item's conflict field by field", () => {
    const todo = change({
      id: "todo:t1",
      surface: "todo",
      uid: "t1",
      base: { text: "draft", done: false, depth: 0, position: 0 },
      ours: { text: "draft A", done: false, depth: 1, position: 0 },
      theirs: { text: "draft B", done: true, depth: 2, position: 0 },
      conflict: true,
      fields: ["done", "text", "depth"],
      conflict_fields: ["text", "depth"],
    });
    const p: MergePlan = { ...plan, changes: [todo] };
    expect(choosableFields(todo)).toEqual(["done", "text", "depth"]);
    expect(choosableFields(change({ surface: "todo", kind: "add", ours: null }))).toEqual([]);
    expect(fieldKey(todo, "text")).toBe("todo:t1.text");
    expect([fieldText(todo, "ours", "text"), fieldText(todo, "theirs", "done")]).toEqual(["draft A", "yes"]);
    expect(fieldText(todo, "theirs", "position")).toBe("#1");
    expect(unresolved(p, { "todo:t1.text": "theirs" })).toEqual(["todo:t1"]);
    const both = { "todo:t1.text": "ours", "todo:t1.depth": "ours" } as const;
    expect(unresolved(p, both)).toEqual([]);
    expect(bringing(p, both)).toBe(1); // `done`, a clean field, still comes in
    expect(bringing(p, { ...both, "todo:t1.done": "ours" })).toBe(0);
    expect(unresolved(p, { "todo:t1": "theirs" })).toEqual([]);
    expect(resolutionsFor(p, { ...both, "todo:t1.colour": "ours" })).toEqual(both);
  });
});

describe("line pick", () => {
  const doc = change({
    id: "document:1",
    surface: "document",
    conflict: true,
    ours: "Cycling is healthy.\n\nLanes are safe.",
    theirs: "Cycling is healthy.\r\nBikes are cheap.\n",
  });

  it("counts a hunk's lines as the server does (Python's splitlines)", () => {
    expect(hunkLines("a\nb")).toEqual(["a", "b"]);
    expect(hunkLines("a\r\nb\rc\u2028d\n")).toEqual(["a", "b", "c", "d"]);
    expect(hunkLines("\n\n")).toEqual(["", ""]);
    expect(hunkLines("")).toEqual([]);
    expect(hunkLines(null)).toEqual([]);
  });

  it("lists the current path's lines, then the step's", () => {
    expect(pickableLines(doc).map((l) => `${l.side}:${l.n}:${l.text}`)).toEqual([
      "ours:0:Cycling is healthy.",
      "ours:1:",
      "ours:2:Lanes are safe.",
      "theirs:0:Cycling is healthy.",
      "theirs:1:Bikes are cheap.",
    ]);
  });

  it("starts from every line and toggles one, keeping the listed order", () => {
    const all = pickAll(doc);
    expect(all.lines).toHaveLength(5);
    const less = toggleLine(doc, all, "theirs", 0);
    expect(less.lines).toEqual([
      { side: "ours", n: 0 },
      { side: "ours", n: 1 },
      { side: "ours", n: 2 },
      { side: "theirs", n: 1 },
    ]);
    expect(toggleLine(doc, less, "theirs", 0)).toEqual(all);
    expect(isLinePick(less)).toBe(true);
    expect(isLinePick("both")).toBe(false);
  });

  it("a picked conflict is settled and brought", () => {
    const p: MergePlan = { ...plan, changes: [doc] };
    expect(unresolved(p, {})).toEqual(["document:1"]);
    const r = { "document:1": pickAll(doc) };
    expect(unresolved(p, r)).toEqual([]);
    expect(bringing(p, r)).toBe(1);
    expect(resolutionsFor(p, r)).toEqual(r);
  });
});
