/**
 * The agreement table's words and the disagreements under it. The unit is the
 * server's: a step every listed coder has coded at least once; on it, for each code, a
 * coder applied it (any span, or the whole step) or did not. A disagreement is a
 * (step, code) where some coders applied the code and some did not. Pure.
 */
import type { Schemas } from "@/lib/api/client";
import { coderOf, type Coding } from "./codings";

export type Agreement = Schemas["AgreementOut"];
export type Statistic = "percent_agreement" | "cohen_kappa" | "krippendorff_alpha";

export interface Shown {
  text: string;
  /** why a figure is missing (a tooltip), when it is */
  why?: string;
}

/** A figure as the table shows it: a percentage or a coefficient to 2 decimals, "—"
 * with the reason when the statistic is undefined. */
export function showStatistic(value: number | null | undefined, kind: Statistic, coders: number): Shown {
  if (value === null || value === undefined) {
    if (kind === "cohen_kappa" && coders !== 2)
      return { text: "—", why: "Cohen's κ compares exactly two coders; pick two to see it." };
    if (kind === "percent_agreement") return { text: "—", why: "No step has been coded by every coder yet." };
    return {
      text: "—",
      why: "Undefined: every coder gave the same answer on every step (one category only), or there are no shared steps.",
    };
  }
  if (kind === "percent_agreement") return { text: `${(value * 100).toFixed(1).replace(/\.0$/, "")} %` };
  return { text: value.toFixed(2) };
}

export interface Disagreement {
  nodeId: string;
  codeId: number;
  applied: string[];
  notApplied: string[];
}

/** The (step, code) pairs the coders disagree on, over the steps every coder coded:
 * who applied the code there and who did not. In the order of the steps' first
 * coding, then by code. */
export function disagreements(codings: readonly Coding[], coders: readonly string[]): Disagreement[] {
  if (coders.length < 2) return [];
  const listed = new Set(coders);
  const nodes = new Map<string, Map<string, Set<number>>>();
  for (const c of codings) {
    const coder = coderOf(c);
    if (!listed.has(coder)) continue;
    let byCoder = nodes.get(c.node_id);
    if (!byCoder) nodes.set(c.node_id, (byCoder = new Map()));
    let codes = byCoder.get(coder);
    if (!codes) byCoder.set(coder, (codes = new Set()));
    codes.add(c.code_id);
  }
  const out: Disagreement[] = [];
  for (const [nodeId, byCoder] of nodes) {
    if (byCoder.size < coders.length) continue;
    const codes = [...new Set([...byCoder.values()].flatMap((s) => [...s]))].sort((a, b) => a - b);
    for (const codeId of codes) {
      const applied = coders.filter((who) => byCoder.get(who)?.has(codeId));
      if (applied.length === coders.length) continue;
      out.push({ nodeId, codeId, applied, notApplied: coders.filter((who) => !applied.includes(who)) });
    }
  }
  return out;
}
