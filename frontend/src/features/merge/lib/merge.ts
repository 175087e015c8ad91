/**
 * Bringing a path back (merge and pick), as the studio shows it: what each side of a
 * change says, a document hunk as a diff, which conflicts still need a choice, and the
 * body of the request. Pure; the dialog and its hook build on it.
 */
import type { components } from "@/lib/api/schema";

export type MergePlan = components["schemas"]["MergePlan"];
export type MergeChange = components["schemas"]["MergeChange"];
export type MergeOut = components["schemas"]["MergeOut"];
export type MergeMode = MergePlan["mode"];
export type RevertOut = components["schemas"]["RevertOut"];
export type LinePick = components["schemas"]["LinePick"];
export type PickedLine = components["schemas"]["PickedLine"];
/** `both`: a document conflict kept on both sides (the current path's lines, then the
 * step's); a `LinePick`: exactly the lines chosen from either side, in order. */
export type Resolution = "ours" | "theirs" | "both" | LinePick;
export type Resolutions = Readonly<Record<string, Resolution>>;
export type Side = "base" | "ours" | "theirs";

export const SURFACE_NAMES: Record<MergeChange["surface"], string> = {
  objective: "Objective",
  title: "Document title",
  document: "Document",
  preference: "Preference",
  todo: "Todo",
  artifact: "Artifact",
};

const KIND_NAMES: Record<MergeChange["kind"], string> = { add: "added", remove: "removed", change: "changed" };

export function kindName(change: MergeChange): string {
  return KIND_NAMES[change.kind];
}

/** One side of a change as a line of text ("—" where that side has nothing). */
export function valueText(change: MergeChange, side: Side): string {
  const value = change[side];
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value === "" ? "(empty)" : value;
  const text = typeof value.text === "string" ? value.text : typeof value.title === "string" ? value.title : "";
  const flags: string[] = [];
  if (value.locked === true) flags.push("locked");
  if (value.done === true) flags.push("done");
  if (typeof value.depth === "number" && value.depth > 0) flags.push(`depth ${value.depth}`);
  if (change.fields?.includes("position") && typeof value.position === "number") flags.push(`#${value.position + 1}`);
  return flags.length > 0 ? `${text} (${flags.join(", ")})` : text;
}

export interface DiffLine {
  sign: " " | "-" | "+";
  text: string;
}

function lines(text: string): string[] {
  if (text === "") return [];
  const out = text.split("\n");
  if (out[out.length - 1] === "") out.pop();
  return out;
}

/** A document change as a diff from the current path (`-`) to the source (`+`): the
 * lines both share at its start and end are context. */
export function hunkDiff(change: MergeChange): DiffLine[] {
  const ours = lines(typeof change.ours === "string" ? change.ours : "");
  const theirs = lines(typeof change.theirs === "string" ? change.theirs : "");
  let head = 0;
  while (head < ours.length && head < theirs.length && ours[head] === theirs[head]) head++;
  let tail = 0;
  while (
    tail < ours.length - head &&
    tail < theirs.length - head &&
    ours[ours.length - 1 - tail] === theirs[theirs.length - 1 - tail]
  )
    tail++;
  const context = (xs: string[]): DiffLine[] => xs.map((text) => ({ sign: " ", text }));
  return [
    ...context(ours.slice(0, head)),
    ...ours.slice(head, ours.length - tail).map((text): DiffLine => ({ sign: "-", text })),
    ...theirs.slice(head, theirs.length - tail).map((text): DiffLine => ({ sign: "+", text })),
    ...context(ours.slice(ours.length - tail)),
  ];
}

/** The resolution key of one field of an item change (`todo:<uid>.text`). */
export function fieldKey(change: MergeChange, field: string): string {
  return `${change.id}.${field}`;
}

/** The fields of an item change that can be chosen one by one (an item the current
 * path still has); empty for every other change. */
export function choosableFields(change: MergeChange): string[] {
  const items = change.surface === "preference" || change.surface === "todo";
  return items && change.kind === "change" && change.ours !== null ? (change.fields ?? []) : [];
}

/** One field's value on one side, as text. */
export function fieldText(change: MergeChange, side: Side, field: string): string {
  const value = change[side];
  if (value === null || value === undefined || typeof value === "string") return "—";
  const v = value[field];
  if (field === "position" && typeof v === "number") return `#${v + 1}`;
  if (typeof v === "boolean") return v ? "yes" : "no";
  return v === undefined || v === null ? "—" : String(v);
}

/** Where a field of a change ends up: its own choice, else the whole change's, else a
 * clean field comes in and a field in conflict is open (undefined). */
function fieldChoice(change: MergeChange, field: string, resolutions: Resolutions): Resolution | undefined {
  const own = resolutions[fieldKey(change, field)] ?? resolutions[change.id];
  if (own !== undefined) return own;
  return (change.conflict_fields ?? []).includes(field) ? undefined : "theirs";
}

function settled(change: MergeChange, resolutions: Resolutions): boolean {
  if (!change.conflict || resolutions[change.id] !== undefined) return true;
  const clashes = change.conflict_fields ?? [];
  return clashes.length > 0 && clashes.every((f) => resolutions[fieldKey(change, f)] !== undefined);
}

/** The conflicts no choice settles yet (a whole-change choice, or one for each of its
 * conflict fields). */
export function unresolved(plan: MergePlan | null, resolutions: Resolutions): string[] {
  return (plan?.changes ?? []).filter((c) => !settled(c, resolutions)).map((c) => c.id);
}

/** How many changes an apply would bring: clean ones not declined, conflicts settled
 * theirs, an item change chosen field by field when any of its fields comes in. */
export function bringing(plan: MergePlan | null, resolutions: Resolutions): number {
  return (plan?.changes ?? []).filter((c) => {
    const fields = choosableFields(c);
    if (fields.some((f) => resolutions[fieldKey(c, f)] !== undefined)) {
      return fields.some((f) => fieldChoice(c, f, resolutions) === "theirs");
    }
    const chosen = resolutions[c.id] ?? (c.conflict ? "ours" : "theirs");
    return chosen === "theirs" || chosen === "both" || isLinePick(chosen);
  }).length;
}

/** The resolutions the request carries: only those naming a change, or a choosable
 * field of one, that the plan still lists. */
export function resolutionsFor(plan: MergePlan | null, resolutions: Resolutions): Record<string, Resolution> {
  const keys = new Set<string>();
  for (const c of plan?.changes ?? []) {
    keys.add(c.id);
    for (const f of choosableFields(c)) keys.add(fieldKey(c, f));
  }
  return Object.fromEntries(Object.entries(resolutions).filter(([key]) => keys.has(key)));
}

export function isLinePick(r: Resolution | undefined): r is LinePick {
  return typeof r === "object" && r !== null && Array.isArray(r.lines);
}

// Python's `str.splitlines` line boundaries (the file and group separators among them):
// the server counts a hunk's lines by them.
const BREAK = "\\r\\n|[\\n\\r\\v\\f\\x1c-\\x1e\\x85\\u2028\\u2029]";
const LINE = new RegExp(`.*?(?:${BREAK})|.+$`, "gsu");
const TRAILING_BREAK = new RegExp(`(?:${BREAK})$`, "u");

/** A hunk side's lines, without their line breaks, counted as the server counts them. */
export function hunkLines(text: MergeChange["ours"]): string[] {
  if (typeof text !== "string" || text === "") return [];
  return (text.match(LINE) ?? []).map((line) => line.replace(TRAILING_BREAK, ""));
}

/** A document conflict's lines, as the line pick lists them: the current path's, then
 * the step's. */
export function pickableLines(change: MergeChange): { side: PickedLine["side"]; n: number; text: string }[] {
  return [
    ...hunkLines(change.ours).map((text, n) => ({ side: "ours" as const, n, text })),
    ...hunkLines(change.theirs).map((text, n) => ({ side: "theirs" as const, n, text })),
  ];
}

/** A line pick of every line (both sides), the one "pick lines" starts from. */
export function pickAll(change: MergeChange): LinePick {
  return { lines: pickableLines(change).map(({ side, n }) => ({ side, n })) };
}

/** The pick with one line in or out; kept in the order the lines are listed. */
export function toggleLine(change: MergeChange, pick: LinePick, side: PickedLine["side"], n: number): LinePick {
  const has = (l: PickedLine) => pick.lines.some((p) => p.side === l.side && p.n === l.n);
  const flip = (l: PickedLine) => l.side === side && l.n === n;
  return {
    lines: pickableLines(change)
      .map(({ side: s, n: k }) => ({ side: s, n: k }))
      .filter((l) => (flip(l) ? !has(l) : has(l))),
  };
}
