"use client";
import { useComparison } from "@/hooks/use-studio-data";
import { comparisonSummary } from "@/lib/research";

/** What a step changed in the workspace (its parent's state against its own), shown
 * while the pointer rests on its card. Fetched once per step, then cached. */
export function ChangePreview({ thread, before, after }: { thread: string; before: string; after: string }) {
  const comparison = useComparison(thread, before, after);
  const lines = comparison.data ? comparisonSummary(comparison.data) : [];
  return (
    <div className="change-preview" data-testid="change-preview" role="tooltip">
      {comparison.isLoading && <span className="muted">reading the change…</span>}
      {comparison.isError && <span className="muted">the change could not be read</span>}
      {comparison.data && lines.length === 0 && <span className="muted">no workspace change</span>}
      {lines.map((l) => (
        <div key={l}>{l}</div>
      ))}
    </div>
  );
}
