"use client";
import { useMemo, useState } from "react";
import { codeToken, graphCodes } from "@/features/ledger/lib/ledger";

/** "Show steps coded X": dims every graph card whose notes lack the code. A style
 * rule on the cards' `data-codes` (a space-separated list), so choosing a code never
 * re-renders the graph. */
export function CodeFilter({ nodes }: { nodes: readonly { codes?: string[] }[] }) {
  const codes = useMemo(() => graphCodes(nodes), [nodes]);
  const [code, setCode] = useState("");
  if (codes.length === 0) return null;
  const token = codeToken(code);
  return (
    <label className="code-filter">
      <span className="muted small">Show steps coded</span>
      <select data-testid="code-filter" value={code} onChange={(e) => setCode(e.target.value)}>
        <option value="">(all steps)</option>
        {codes.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
      {code && (
        <style>{`[data-testid="graph-node"]:not([data-codes~="${cssString(token)}"]){opacity:.22;filter:grayscale(1)}`}</style>
      )}
    </label>
  );
}

function cssString(s: string): string {
  return s.replace(/["\\]/g, "\\$&");
}
