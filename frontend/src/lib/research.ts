/**
 * The research features as the studio shows them: the document diff of a comparison
 * laid out line by line, picking two steps to compare, the decisions rejected at each
 * step of the displayed path, search snippets with the query's words marked, and the
 * small helpers of export and import. Pure (no React), unit-tested.
 */
import type { components } from "./api/schema";

export type Comparison = components["schemas"]["Comparison"];
export type Rejected = components["schemas"]["RejectedOut"];

// ---------------------------------------------------------------------------------
// The document diff

export type DiffRow =
  | { kind: "hunk"; text: string }
  | { kind: "add" | "del" | "ctx"; text: string; oldNo: number | null; newNo: number | null };

export interface ParsedDiff {
  rows: DiffRow[];
  added: number;
  removed: number;
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** A unified diff (as `difflib.unified_diff` writes it, `lineterm=""`) as rows with
 * the old and new line numbers; the `---`/`+++` file header is dropped and
 * "\ No newline" markers are ignored. */
export function parseUnifiedDiff(diff: string): ParsedDiff {
  const rows: DiffRow[] = [];
  let added = 0;
  let removed = 0;
  let oldNo = 0;
  let newNo = 0;
  let inHunk = false;
  for (const line of diff === "" ? [] : diff.split("\n")) {
    const hunk = HUNK.exec(line);
    if (hunk) {
      inHunk = true;
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      rows.push({ kind: "hunk", text: line });
      continue;
    }
    if (!inHunk || line.startsWith("\\")) continue;
    const text = line.slice(1);
    if (line.startsWith("+")) {
      added++;
      rows.push({ kind: "add", text, oldNo: null, newNo: newNo++ });
    } else if (line.startsWith("-")) {
      removed++;
      rows.push({ kind: "del", text, oldNo: oldNo++, newNo: null });
    } else {
      rows.push({ kind: "ctx", text, oldNo: oldNo++, newNo: newNo++ });
    }
  }
  return { rows, added, removed };
}

// ---------------------------------------------------------------------------------
// Picking two steps

export interface ComparePick {
  /** the first step picked (the "before" side) */
  a: string | null;
  /** the second (the "after" side); set once both are picked */
  b: string | null;
}

export const NO_PICK: ComparePick = { a: null, b: null };

/** Picks `nodeId`: the first pick sets `a`, the second sets `b` (the comparison opens);
 * picking `a` again unpicks it; after a full pick a new pick starts over. */
export function pickForCompare(pick: ComparePick, nodeId: string): ComparePick {
  if (pick.a === null || pick.b !== null) return { a: nodeId, b: null };
  if (pick.a === nodeId) return NO_PICK;
  return { a: pick.a, b: nodeId };
}

// ---------------------------------------------------------------------------------
// The decision map on the displayed path

/** node id → the decisions rejected at that step (`rejected_after_turn` = its turn),
 * for the displayed path's steps (`turn → node id`). The rejected list is the
 * displayed thread's, which carries its lineage's rejections with their turns. */
export function rejectedByStep(
  rejected: readonly Rejected[],
  steps: ReadonlyMap<number, { nodeId: string }>,
): Map<string, Rejected[]> {
  const out = new Map<string, Rejected[]>();
  for (const r of rejected) {
    const step = steps.get(r.rejected_after_turn);
    if (step === undefined) continue;
    const list = out.get(step.nodeId);
    if (list) list.push(r);
    else out.set(step.nodeId, [r]);
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Comparison summary

export const FIELD_NAMES: Record<string, string> = { text: "text", locked: "lock", done: "done", depth: "nesting" };

/** "text, lock" for a change's fields. */
export function describeFields(fields: readonly string[]): string {
  return fields.map((f) => FIELD_NAMES[f] ?? f).join(", ");
}

/** The counts a comparison's header shows, e.g. ["objective changed", "document +3 −1",
 * "preferences +1 −0 ~1"]; empty when the two states are the same. */
export function comparisonSummary(c: Comparison): string[] {
  const out: string[] = [];
  if (c.objective.changed) out.push("objective changed");
  if (c.document.changed) out.push(`document +${c.document.added_lines} −${c.document.removed_lines}`);
  const items = (name: string, d: { added: unknown[]; removed: unknown[]; changed: unknown[] }) => {
    if (d.added.length + d.removed.length + d.changed.length > 0) {
      out.push(`${name} +${d.added.length} −${d.removed.length} ~${d.changed.length}`);
    }
  };
  items("preferences", c.preferences);
  items("todos", c.todos);
  if (c.artifacts.added.length + c.artifacts.removed.length > 0) {
    out.push(`artifacts +${c.artifacts.added.length} −${c.artifacts.removed.length}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Search

export type SearchKind = "user" | "assistant" | "document" | "note" | "branch";

export const KIND_NAMES: Record<SearchKind, string> = {
  branch: "branch",
  user: "your message",
  assistant: "reply",
  document: "document",
  note: "your note",
};

export interface SnippetPart {
  text: string;
  hit: boolean;
}

/** The snippet cut into parts, the query's words (case-insensitive) marked as hits. */
export function highlight(snippet: string, query: string): SnippetPart[] {
  const words = [
    ...new Set(
      query
        .toLowerCase()
        .replace(/"/g, " ")
        .split(/\s+/)
        .filter((w) => w.length > 0 && !w.startsWith("-")),
    ),
  ];
  if (words.length === 0) return snippet === "" ? [] : [{ text: snippet, hit: false }];
  const escaped = words.sort((x, y) => y.length - x.length).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp(`(${escaped.join("|")})`, "gi");
  const parts: SnippetPart[] = [];
  let last = 0;
  for (const m of snippet.matchAll(re)) {
    const at = m.index;
    if (at > last) parts.push({ text: snippet.slice(last, at), hit: false });
    parts.push({ text: m[0], hit: true });
    last = at + m[0].length;
  }
  if (last < snippet.length) parts.push({ text: snippet.slice(last), hit: false });
  return parts;
}

// ---------------------------------------------------------------------------------
// Export and import

/** What a family downloads as: the whole family (`json`, for import) or one row per
 * step for analysis (`csv`). */
export type ExportFormat = "json" | "csv";

/** A file name for a family's export: `haico-<title>-<date>.json`, the title reduced to
 * letters, digits and dashes. */
export function exportFileName(title: string, when: Date, format: ExportFormat = "json"): string {
  const slug = title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  const day = when.toISOString().slice(0, 10);
  return `haico-${slug || "conversation"}-${day}.${format}`;
}

/** The user-facing message of a failed upload: the server's `{message}` (or a
 * validation `detail`), else a generic line with the status. */
export function uploadErrorMessage(status: number, body: string): string {
  if (status === 0) return "The upload failed: the server could not be reached.";
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null) {
      const b = parsed as { message?: unknown; detail?: unknown };
      if (status === 422 && Array.isArray(b.detail)) return refusalText(b.detail);
      if (typeof b.message === "string" && b.message) return b.message;
      if (typeof b.detail === "string" && b.detail) return b.detail;
    }
  } catch {
    // not JSON: fall through
  }
  if (status === 413) return "This file is too large to import.";
  return `The import failed (the server answered ${status}).`;
}

/** A refused import said in words: the server's field-by-field validation report
 * ("format: Input should be 'haico.family'; version: Field required") is for programs. */
function refusalText(detail: readonly unknown[]): string {
  const locs = detail.map((d) => {
    const e = (typeof d === "object" && d !== null ? d : {}) as { loc?: unknown; type?: unknown };
    return { at: Array.isArray(e.loc) ? e.loc.filter((p) => p !== "body").join(".") : "", type: String(e.type ?? "") };
  });
  if (locs.some((l) => l.type === "json_invalid"))
    return "This file is not valid JSON, so it is not a conversation exported from HAICO.";
  if (locs.some((l) => l.at === "" || l.at === "format" || (l.at === "version" && l.type === "missing")))
    return "This file is not a conversation exported from HAICO (it lacks the export's format and version marks). Choose a .json file saved with “Export”.";
  if (locs.some((l) => l.at === "version"))
    return "This export was made by a version of HAICO that this server cannot read.";
  const n = locs.length;
  return `This export could not be read: ${n} part${n === 1 ? " is" : "s are"} missing or damaged (first: ${locs[0]?.at || "the document"}). It may come from another version of HAICO, or have been edited.`;
}

/** "12 KB of 1.4 MB (1%)" for an upload's progress. */
export function progressText(loaded: number, total: number): string {
  const size = (n: number) =>
    n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / (1024 * 1024)).toFixed(1)} MB`;
  if (total <= 0) return `${size(loaded)} sent`;
  return `${size(loaded)} of ${size(total)} (${Math.min(100, Math.floor((loaded / total) * 100))}%)`;
}

// ---------------------------------------------------------------------------------
// Branch names

export const MAX_NAME = 80;

/** What a name field's text saves as: trimmed, inner whitespace collapsed, an empty
 * name clears it (null). */
export function normalizeName(text: string): string | null {
  const name = text.trim().replace(/\s+/g, " ");
  return name === "" ? null : name;
}
