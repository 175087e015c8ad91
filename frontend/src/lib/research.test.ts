import { describe, expect, it } from "vitest";
import {
  comparisonSummary,
  describeFields,
  exportFileName,
  highlight,
  normalizeName,
  NO_PICK,
  parseUnifiedDiff,
  pickForCompare,
  progressText,
  rejectedByStep,
  uploadErrorMessage,
  type Comparison,
  type Rejected,
} from "./research";

// What backend/app/services/compare.py writes (difflib.unified_diff, lineterm="").
const DIFF = [
  "--- a",
  "+++ b",
  "@@ -1,4 +1,5 @@",
  " Cities are for people.",
  "-Cars are loud.",
  "+Cars are loud and fast.",
  "+Bikes are quiet.",
  " ",
  " The end.",
  "@@ -10 +11,2 @@",
  "----- a rule",
  "+a line",
  "+++ not a header",
  "\\ No newline at end of file",
].join("\n");

describe("parseUnifiedDiff", () => {
  it("lays out hunks with old and new line numbers and counts lines", () => {
    const d = parseUnifiedDiff(DIFF);
    expect(d.added).toBe(4);
    expect(d.removed).toBe(2);
    expect(d.rows).toEqual([
      { kind: "hunk", text: "@@ -1,4 +1,5 @@" },
      { kind: "ctx", text: "Cities are for people.", oldNo: 1, newNo: 1 },
      { kind: "del", text: "Cars are loud.", oldNo: 2, newNo: null },
      { kind: "add", text: "Cars are loud and fast.", oldNo: null, newNo: 2 },
      { kind: "add", text: "Bikes are quiet.", oldNo: null, newNo: 3 },
      { kind: "ctx", text: "", oldNo: 3, newNo: 4 },
      { kind: "ctx", text: "The end.", oldNo: 4, newNo: 5 },
      { kind: "hunk", text: "@@ -10 +11,2 @@" },
      { kind: "del", text: "---- a rule", oldNo: 10, newNo: null },
      { kind: "add", text: "a line", oldNo: null, newNo: 11 },
      { kind: "add", text: "++ not a header", oldNo: null, newNo: 12 },
    ]);
  });

  it("reads an empty diff (a node against itself) as no rows", () => {
    expect(parseUnifiedDiff("")).toEqual({ rows: [], added: 0, removed: 0 });
    expect(parseUnifiedDiff("--- a\n+++ b")).toEqual({ rows: [], added: 0, removed: 0 });
  });

  it("handles a document that appears from nothing", () => {
    const d = parseUnifiedDiff("--- a\n+++ b\n@@ -0,0 +1,2 @@\n+one\n+two");
    expect(d.added).toBe(2);
    expect(d.rows.slice(1)).toEqual([
      { kind: "add", text: "one", oldNo: null, newNo: 1 },
      { kind: "add", text: "two", oldNo: null, newNo: 2 },
    ]);
  });
});

describe("pickForCompare", () => {
  it("picks a, then b, unpicks a, and starts over after a full pick", () => {
    const one = pickForCompare(NO_PICK, "R:1");
    expect(one).toEqual({ a: "R:1", b: null });
    expect(pickForCompare(one, "R:1")).toEqual(NO_PICK);
    const two = pickForCompare(one, "S:3");
    expect(two).toEqual({ a: "R:1", b: "S:3" });
    expect(pickForCompare(two, "R:2")).toEqual({ a: "R:2", b: null });
  });
});

describe("rejectedByStep", () => {
  it("puts each rejection on the displayed path's step that rejected it", () => {
    const r = (uid: string, turn: number): Rejected => ({
      uid,
      surface: "preference",
      text: uid,
      rejected_after_turn: turn,
    });
    const steps = new Map([
      [1, { nodeId: "R:1" }],
      [2, { nodeId: "R:2" }],
      [3, { nodeId: "S:3" }],
    ]);
    const map = rejectedByStep([r("a", 1), r("b", 3), r("c", 3), r("d", 0), r("e", 9)], steps);
    expect([...map.keys()]).toEqual(["R:1", "S:3"]);
    expect(map.get("S:3")?.map((x) => x.uid)).toEqual(["b", "c"]);
  });
});

function comparison(over: Partial<Comparison> = {}): Comparison {
  const node = { node_id: "R:1", thread_id: "R", root_thread_id: "R", turn_index: 1 };
  return {
    a: node,
    b: node,
    common_ancestor: node,
    objective: { before: "x", after: "x", changed: false },
    document: { title_before: null, title_after: null, changed: false, diff: "", added_lines: 0, removed_lines: 0 },
    preferences: { added: [], removed: [], changed: [] },
    todos: { added: [], removed: [], changed: [] },
    artifacts: { added: [], removed: [] },
    rejected: { a: [], b: [] },
    ...over,
  };
}

describe("comparisonSummary", () => {
  it("is empty for a node against itself", () => {
    expect(comparisonSummary(comparison())).toEqual([]);
  });

  it("counts every kind of change", () => {
    const pref = { id: 1, uid: "p", text: "t", locked: false, position: 0 };
    const todo = { id: 1, uid: "t", text: "t", done: false, depth: 0, position: 0 };
    const art = { id: 1, uid: "a1", kind: "note", title: "a", turn_index: 2 };
    const c = comparison({
      objective: { before: "x", after: "y", changed: true },
      document: { title_before: null, title_after: "D", changed: true, diff: "", added_lines: 3, removed_lines: 1 },
      preferences: {
        added: [pref],
        removed: [],
        changed: [{ uid: "p", before: pref, after: { ...pref, locked: true }, fields: ["locked"] }],
      },
      todos: { added: [], removed: [todo], changed: [] },
      artifacts: { added: [art], removed: [] },
    });
    expect(comparisonSummary(c)).toEqual([
      "objective changed",
      "document +3 −1",
      "preferences +1 −0 ~1",
      "todos +0 −1 ~0",
      "artifacts +1 −0",
    ]);
  });

  it("names changed fields", () => {
    expect(describeFields(["text", "locked", "done", "depth", "other"])).toBe("text, lock, done, nesting, other");
  });
});

describe("highlight", () => {
  it("marks every word of the query, case-insensitively, longest first", () => {
    expect(highlight("…Bike lanes make bikes safer", "bike  BIKES")).toEqual([
      { text: "…", hit: false },
      { text: "Bike", hit: true },
      { text: " lanes make ", hit: false },
      { text: "bikes", hit: true },
      { text: " safer", hit: false },
    ]);
  });

  it("escapes the query and copes with no words or no match", () => {
    expect(highlight("a (b) c", "(b)")).toEqual([
      { text: "a ", hit: false },
      { text: "(b)", hit: true },
      { text: " c", hit: false },
    ]);
    expect(highlight("plain", "  ")).toEqual([{ text: "plain", hit: false }]);
    expect(highlight("", "")).toEqual([]);
    expect(highlight("plain", "zzz")).toEqual([{ text: "plain", hit: false }]);
    expect(highlight("bike", "bike")).toEqual([{ text: "bike", hit: true }]);
    // a quoted phrase marks its words; an excluded word is not marked
    expect(highlight("a bike lane", '"bike lane" -a')).toEqual([
      { text: "a ", hit: false },
      { text: "bike", hit: true },
      { text: " ", hit: false },
      { text: "lane", hit: true },
    ]);
  });
});

describe("export and import helpers", () => {
  const when = new Date(Date.UTC(2026, 4, 17, 12));

  it("names the export file after the title and the day", () => {
    expect(exportFileName("Argue for Bike Lanes!", when)).toBe("haico-argue-for-bike-lanes-2026-05-17.json");
    expect(exportFileName("  ***  ", when)).toBe("haico-conversation-2026-05-17.json");
    expect(exportFileName("Café déjà vu", when)).toBe("haico-cafe-deja-vu-2026-05-17.json");
    expect(exportFileName("a".repeat(39) + " bcd", when)).toBe(`haico-${"a".repeat(39)}-2026-05-17.json`);
    expect(exportFileName("Bike lanes", when, "csv")).toBe("haico-bike-lanes-2026-05-17.csv");
  });

  it("shows the server's message for a failed upload", () => {
    expect(uploadErrorMessage(422, JSON.stringify({ code: "invalid_input", message: "version: unsupported" }))).toBe(
      "version: unsupported",
    );
    expect(uploadErrorMessage(422, JSON.stringify({ detail: "bad" }))).toBe("bad");
    // a refused document: words, never the validation report
    const report = {
      code: "invalid_input",
      message: "format: Input should be 'haico.family'; version: Field required",
      detail: [
        { type: "literal_error", loc: ["body", "format"], msg: "Input should be 'haico.family'" },
        { type: "missing", loc: ["body", "version"], msg: "Field required" },
      ],
    };
    const said = uploadErrorMessage(422, JSON.stringify(report));
    expect(said).toMatch(/not a conversation exported from HAICO/);
    expect(said).not.toMatch(/Input should be|Field required/);
    const damaged = { detail: [{ type: "missing", loc: ["body", "threads", 0, "title"], msg: "Field required" }] };
    expect(uploadErrorMessage(422, JSON.stringify(damaged))).toMatch(
      /1 part is missing or damaged \(first: threads\.0\.title\)/,
    );
    const future = { detail: [{ type: "literal_error", loc: ["body", "version"], msg: "Input should be 1" }] };
    expect(uploadErrorMessage(422, JSON.stringify(future))).toMatch(/version of HAICO that this server cannot read/);
    expect(uploadErrorMessage(422, JSON.stringify({ detail: [{ type: "json_invalid", loc: ["body", 3] }] }))).toMatch(
      /not valid JSON/,
    );
    expect(uploadErrorMessage(422, JSON.stringify({ message: "" }))).toBe(
      "The import failed (the server answered 422).",
    );
    expect(uploadErrorMessage(500, "oops")).toBe("The import failed (the server answered 500).");
    expect(uploadErrorMessage(500, "null")).toBe("The import failed (the server answered 500).");
    expect(uploadErrorMessage(413, "")).toBe("This file is too large to import.");
    expect(uploadErrorMessage(0, "")).toBe("The upload failed: the server could not be reached.");
  });

  it("reports progress", () => {
    expect(progressText(512, 0)).toBe("512 B sent");
    expect(progressText(2048, 4096)).toBe("2 KB of 4 KB (50%)");
    expect(progressText(3 * 1024 * 1024, 3 * 1024 * 1024)).toBe("3.0 MB of 3.0 MB (100%)");
  });
});

describe("normalizeName", () => {
  it("trims, collapses whitespace and clears on empty", () => {
    expect(normalizeName("  formal   tone ")).toBe("formal tone");
    expect(normalizeName("   ")).toBeNull();
  });
});
