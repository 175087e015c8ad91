/**
 * The research ledger as the studio shows it: provenance rows, note codes, the
 * sentences for hand edits in the chat, the per-branch usage summary. Pure.
 */
import type { components } from "@/lib/api/schema";

export type NodeDetails = components["schemas"]["NodeOut"];
export type Provenance = components["schemas"]["Provenance"];
export type Note = components["schemas"]["NoteOut"];
export type EditOrigin = components["schemas"]["EditOrigin"];
export type BranchUsage = components["schemas"]["BranchUsage"];

/** A whole number with thousands separators, or "—" when unknown. */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : n.toLocaleString("en-US");
}

/** US dollars: "$0.0042" for small sums, "$1.23" for larger; "—" when unknown. */
export function formatCost(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return "—";
  if (usd === 0) return "$0";
  return usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The provenance as label/value rows, in reading order. */
export function provenanceRows(p: Provenance): [string, string][] {
  const tokens =
    p.input_tokens === null && p.output_tokens === null
      ? "—"
      : `${formatCount(p.input_tokens)} in · ${formatCount(p.output_tokens)} out${p.tokens_estimated ? " (estimated)" : ""}`;
  return [
    ["Model", p.model ? `${p.model} (${p.provider ?? "?"})` : "—"],
    ["Profile", profileText(p)],
    ["Tokens", tokens],
    ["First token", formatMs(p.first_token_ms)],
    ["Duration", formatMs(p.duration_ms)],
    ["Tool calls", String(p.tool_calls)],
    ["Cost", formatCost(p.cost_usd)],
  ];
}

/** The profile a step ran with, and the parameters its provider ignored. */
export function profileText(p: Provenance): string {
  const name = p.profile_name ?? p.profile_id ?? "—";
  const ignored = p.ignored_params ?? [];
  return ignored.length > 0 ? `${name} (ignored: ${ignored.join(", ")})` : name;
}

/** Codes typed as "a, b; c" → ["a", "b", "c"] (trimmed, no blanks, no repeats). */
export function parseCodes(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/[,;\n]/)) {
    const code = raw.trim();
    if (code && !out.includes(code)) out.push(code);
  }
  return out;
}

const SURFACE_NAME: Record<string, string> = {
  objective: "the objective",
  document: "the document",
  title: "the document title",
  preference: "a preference",
  todo: "a todo",
  artifact: "an artifact",
};
const VERB: Record<string, string> = { add: "added", remove: "removed", change: "changed" };

/** "You changed the objective", "You added 2 todos": one sentence per surface and kind
 * of the hand edits of one step, in the order first made. */
export function handEditSentences(edits: readonly EditOrigin[]): string[] {
  const counts = new Map<string, number>();
  for (const e of edits) {
    const key = `${VERB[e.kind] ?? "changed"}|${e.surface}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const out: string[] = [];
  for (const [key, n] of counts) {
    const [verb, surface] = key.split("|") as [string, string];
    const one = SURFACE_NAME[surface] ?? surface;
    const what = n === 1 || !one.startsWith("a") ? one : `${n} ${surface}s`;
    out.push(`You ${verb} ${what}`);
  }
  return out;
}

/** node id → the sentences for the hand edits that belong to it (the user's only). */
export function handEditsByNode(edits: readonly EditOrigin[]): Map<string, string[]> {
  const grouped = new Map<string, EditOrigin[]>();
  for (const e of edits) {
    if (e.origin !== "user") continue;
    const list = grouped.get(e.node_id);
    if (list) list.push(e);
    else grouped.set(e.node_id, [e]);
  }
  const out = new Map<string, string[]>();
  for (const [node, list] of grouped) out.set(node, handEditSentences(list));
  return out;
}

function threadOf(nodeId: string): string {
  return nodeId.slice(0, nodeId.lastIndexOf(":"));
}

/** Where the chat shows hand edits along a displayed path (`steps`, in turn order):
 * after step X, the edits recorded at X (made after its turn, before the next one),
 * unless the next step is on another branch: then the edits that branch's thread
 * recorded at X's turn (made to the restored view before its first message). */
export function handEditsAlongPath(
  steps: readonly { nodeId: string; turn: number }[],
  byNode: ReadonlyMap<string, readonly string[]>,
): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  steps.forEach((step, i) => {
    const next = steps[i + 1];
    const key =
      next !== undefined && threadOf(next.nodeId) !== threadOf(step.nodeId)
        ? `${threadOf(next.nodeId)}:${step.turn}`
        : step.nodeId;
    const sentences = byNode.get(key);
    if (sentences && sentences.length > 0) out.set(step.nodeId, sentences);
  });
  return out;
}

export interface UsageTotals {
  nodes: number;
  input: number;
  output: number;
  cost: number | null;
  estimated: boolean;
}

/** The family's totals over its branches (cost null when no branch has one). */
export function usageTotals(rows: readonly BranchUsage[]): UsageTotals {
  let cost: number | null = null;
  const t: UsageTotals = { nodes: 0, input: 0, output: 0, cost: null, estimated: false };
  for (const r of rows) {
    t.nodes += r.nodes;
    t.input += r.input_tokens;
    t.output += r.output_tokens;
    t.estimated ||= r.tokens_estimated;
    if (r.cost_usd !== null) cost = (cost ?? 0) + r.cost_usd;
  }
  t.cost = cost;
  return t;
}

/** Every code on the graph's nodes, sorted, for the "show steps coded X" filter. */
export function graphCodes(nodes: readonly { codes?: string[] }[]): string[] {
  const all = new Set<string>();
  for (const n of nodes) for (const c of n.codes ?? []) all.add(c);
  return [...all].sort((a, b) => a.localeCompare(b));
}

/** The path document's file name: "essay-step-3.1.md". */
export function pathFileName(title: string, label: string, format: "md" | "html"): string {
  const slug =
    title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "conversation";
  return `${slug}-step-${label}.${format}`;
}

/** A code as one word of a card's `data-codes` attribute (spaces would split it). */
export function codeToken(code: string): string {
  return code.replace(/\s+/g, "_");
}

/** thread id → how the usage summary names a branch without a name: the label of its
 * first step ("main" for the root). */
export function branchLabels(
  threads: readonly { thread_id: string; parent_thread_id: string | null }[],
  labels: ReadonlyMap<string, string>,
  nodes: readonly { id: string; thread_id: string; turn_index: number }[],
): Map<string, string> {
  const out = new Map<string, string>();
  // each thread's first node, in one pass over the nodes (a 2,000-node family has 150 threads)
  const firsts = new Map<string, { id: string; turn_index: number }>();
  for (const n of nodes) {
    const was = firsts.get(n.thread_id);
    if (was === undefined || n.turn_index < was.turn_index) firsts.set(n.thread_id, n);
  }
  for (const t of threads) {
    if (t.parent_thread_id === null) {
      out.set(t.thread_id, "main");
      continue;
    }
    const first = firsts.get(t.thread_id);
    const label = first ? labels.get(first.id) : undefined;
    out.set(t.thread_id, label ? `from ${label}` : t.thread_id.slice(0, 9));
  }
  return out;
}
